#pragma once
// Runtime ISA dispatch for the CPU elementwise kernels, as PyTorch's DispatchStub: the same code
// (vec/level.hpp) is compiled once per capability level, each file with its own -m flags
// (vec_default.cpp: none, i.e. SSE2; vec_avx2.cpp: AVX2 + FMA + F16C; vec_avx512.cpp: AVX-512
// F/BW/VL/DQ), and kernels() picks one table at first use by cpuid. GRADLAB_CPU_CAPABILITY=
// default|avx2|avx512 forces a lower level. On a CPU other than x86 (aarch64) only the default
// level is built (xsimd's SIMD for that CPU, e.g. NEON), vec_avx2.cpp / vec_avx512.cpp compile
// to nothing, and best_capability() is Default.
//
// NOTE: nothing compiled with -m flags may run before the cpuid check, and no inline function or
// template instantiation that other files also emit may come out of a level file (the linker
// keeps one copy, maybe the AVX-512 one): the level files keep their code in an anonymous
// namespace and call only xsimd templates of their own arch and intrinsics. The scalar tail of
// every loop runs here, in baseline code (elementwise.cpp), through the formulas on numbers.

#include <cstdint>

#include "gradlab/backend/math/elementwise.hpp"
#include "gradlab/backend/math/optim.hpp"

namespace gradlab::cpu::vec {

enum class Capability { Default = 0, Avx2 = 1, Avx512 = 2 };

/// One level's kernels. Each runs over the first m elements, m a multiple of its batch width
/// (m <= n), and returns m; the caller does [m, n). An op the level does not vectorize returns 0.
struct Kernels {
  const char* name;  // "default", "avx2", "avx512"
  int64_t (*unary_f32)(math::Unary op, const float* x, float* y, int64_t n, float p, float q);
  int64_t (*unary_f64)(math::Unary op, const double* x, double* y, int64_t n, double p, double q);
  // a, b: sa / sb say "a broadcast single value, read once" (all strides 0).
  int64_t (*binary_f32)(math::Binary op, const float* a, bool sa, const float* b, bool sb, float* out, int64_t n);
  int64_t (*binary_f64)(math::Binary op, const double* a, bool sa, const double* b, bool sb, double* out,
                        int64_t n);
  // Bit-exact with core/half.hpp's scalar conversions (round to nearest even, NaN quiet).
  int64_t (*bf16_from_f32)(const float* x, uint16_t* y, int64_t n);
  int64_t (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
  int64_t (*f16_from_f32)(const float* x, uint16_t* y, int64_t n);
  int64_t (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  // The fused optimizer updates (math/optim.hpp), in place on contiguous arrays; buf is read
  // only when h.use_mom && !h.first_step, written only when h.use_mom (else it may be null).
  int64_t (*sgd_f32)(const math::SgdHyper<float>& h, float* p, const float* g, float* buf, int64_t n);
  int64_t (*sgd_f64)(const math::SgdHyper<double>& h, double* p, const double* g, double* buf, int64_t n);
  int64_t (*adam_f32)(const math::AdamHyper<float>& h, float* p, const float* g, float* m, float* v, int64_t n);
  int64_t (*adam_f64)(const math::AdamHyper<double>& h, double* p, const double* g, double* m, double* v,
                      int64_t n);
  // RMSprop: a (grad_avg) read and written only when h.centered, buf only when h.use_mom (else
  // either may be null).
  int64_t (*rmsprop_f32)(const math::RmspropHyper<float>& h, float* p, const float* g, float* s, float* a,
                         float* buf, int64_t n);
  int64_t (*rmsprop_f64)(const math::RmspropHyper<double>& h, double* p, const double* g, double* s, double* a,
                         double* buf, int64_t n);
  int64_t (*adagrad_f32)(const math::AdagradHyper<float>& h, float* p, const float* g, float* sum, int64_t n);
  int64_t (*adagrad_f64)(const math::AdagradHyper<double>& h, double* p, const double* g, double* sum, int64_t n);
  // bfloat16 relu and its gradient (out = y > threshold ? g : 0) through float32 lanes: each
  // element widened, math's formula, rounded as bf16_from_f32 (cpu/nn.cpp does the tail).
  int64_t (*bf16_relu)(const uint16_t* x, uint16_t* y, int64_t n);
  int64_t (*bf16_threshold_grad)(const uint16_t* g, const uint16_t* y, uint16_t* out, int64_t n, float threshold);
};

/// The best level this CPU (and OS) runs.
Capability best_capability();
/// The table in use: picked once (the best level, or GRADLAB_CPU_CAPABILITY's lower one).
const Kernels& kernels();
/// The table of `level` when this CPU runs it, else nullptr (the checks test each level).
const Kernels* kernels_for(Capability level);

inline int64_t unary(const Kernels& k, math::Unary op, const float* x, float* y, int64_t n, float p, float q) {
  return k.unary_f32(op, x, y, n, p, q);
}
inline int64_t unary(const Kernels& k, math::Unary op, const double* x, double* y, int64_t n, double p, double q) {
  return k.unary_f64(op, x, y, n, p, q);
}
inline int64_t binary(const Kernels& k, math::Binary op, const float* a, bool sa, const float* b, bool sb,
                      float* out, int64_t n) {
  return k.binary_f32(op, a, sa, b, sb, out, n);
}
inline int64_t binary(const Kernels& k, math::Binary op, const double* a, bool sa, const double* b, bool sb,
                      double* out, int64_t n) {
  return k.binary_f64(op, a, sa, b, sb, out, n);
}

inline int64_t sgd(const Kernels& k, const math::SgdHyper<float>& h, float* p, const float* g, float* buf,
                   int64_t n) {
  return k.sgd_f32(h, p, g, buf, n);
}
inline int64_t sgd(const Kernels& k, const math::SgdHyper<double>& h, double* p, const double* g, double* buf,
                   int64_t n) {
  return k.sgd_f64(h, p, g, buf, n);
}
inline int64_t adam(const Kernels& k, const math::AdamHyper<float>& h, float* p, const float* g, float* m, float* v,
                    int64_t n) {
  return k.adam_f32(h, p, g, m, v, n);
}
inline int64_t adam(const Kernels& k, const math::AdamHyper<double>& h, double* p, const double* g, double* m,
                    double* v, int64_t n) {
  return k.adam_f64(h, p, g, m, v, n);
}
inline int64_t rmsprop(const Kernels& k, const math::RmspropHyper<float>& h, float* p, const float* g, float* s,
                       float* a, float* buf, int64_t n) {
  return k.rmsprop_f32(h, p, g, s, a, buf, n);
}
inline int64_t rmsprop(const Kernels& k, const math::RmspropHyper<double>& h, double* p, const double* g, double* s,
                       double* a, double* buf, int64_t n) {
  return k.rmsprop_f64(h, p, g, s, a, buf, n);
}
inline int64_t adagrad(const Kernels& k, const math::AdagradHyper<float>& h, float* p, const float* g, float* sum,
                       int64_t n) {
  return k.adagrad_f32(h, p, g, sum, n);
}
inline int64_t adagrad(const Kernels& k, const math::AdagradHyper<double>& h, double* p, const double* g,
                       double* sum, int64_t n) {
  return k.adagrad_f64(h, p, g, sum, n);
}

// The level tables, defined in vec_<level>.cpp (reach them through kernels_for); kAvx2 and
// kAvx512 exist on x86 only.
extern const Kernels kDefault;
extern const Kernels kAvx2;
extern const Kernels kAvx512;

}  // namespace gradlab::cpu::vec
