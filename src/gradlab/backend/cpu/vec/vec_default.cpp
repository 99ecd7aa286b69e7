// The "default" capability level of the elementwise kernels: vec/level.hpp compiled with
// no -m flags: SSE2, what every x86-64 CPU runs (elsewhere: the SIMD xsimd picks, e.g. NEON on
// aarch64; the only level built there).
// Reached only through vec::kernels() after its cpuid check (vec.hpp).
#define GRADLAB_VEC_TABLE kDefault
#define GRADLAB_VEC_NAME "default"
#define GRADLAB_VEC_LEVEL default
#include "gradlab/backend/cpu/vec/level.hpp"
#if defined(__x86_64__) || defined(__i386__)
static_assert(std::is_same_v<gradlab::cpu::vec::Arch, xsimd::sse2>, "the default level is SSE2 (no -m flags)");
#endif

// The level's sum / max / min kernels (vec/reduce.hpp).
#define GRADLAB_VEC_REDUCE_TABLE kReduceDefault
#include "gradlab/backend/cpu/vec/reduce_level.hpp"
