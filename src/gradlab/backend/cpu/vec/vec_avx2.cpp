// The "avx2" capability level of the elementwise kernels: vec/level.hpp compiled with
// -mavx2 -mfma -mf16c (CMakeLists.txt).
// Reached only through vec::kernels() after its cpuid check (vec.hpp).
// x86 only: elsewhere this file is empty (CMake adds no -m flags there; vec.hpp).
#if defined(__x86_64__) || defined(__i386__)
#define GRADLAB_VEC_TABLE kAvx2
#define GRADLAB_VEC_NAME "avx2"
#define GRADLAB_VEC_LEVEL avx2
#include "gradlab/backend/cpu/vec/level.hpp"
static_assert(std::is_same_v<gradlab::cpu::vec::Arch, xsimd::fma3<xsimd::avx2>>, "vec_avx2.cpp needs -mavx2 -mfma");

// The level's sum / max / min kernels (vec/reduce.hpp).
#define GRADLAB_VEC_REDUCE_TABLE kReduceAvx2
#include "gradlab/backend/cpu/vec/reduce_level.hpp"
#endif  // x86
