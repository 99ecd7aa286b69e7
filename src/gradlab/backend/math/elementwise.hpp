#pragma once
// The elementwise formulas of gradlab, each written once. The CPU kernels
// (backend/cpu/elementwise.cpp) run them over xsimd batches and plain numbers; the CUDA kernels
// and the host emulator (backend/cuda/elementwise.cuh) run them over numbers, one per thread. So
// the CPU and the GPU agree by construction, and the op table's references stay the oracle.
//
// A formula is an expression of one element x (unary ops) or a, b (binary ops) of type V, with
// the op's parameters p, q already converted to V. V is float, double or int64_t, or on the CPU
// an xsimd batch of them: the functions in this namespace serve numbers, and xsimd's exp, select,
// isnan ... serve batches (found by argument-dependent lookup), so one spelling covers both.
//   select(c, a, b)   c ? a : b, per element (both a and b are evaluated)
//
// Adding an elementwise op is one line in a list below, then its op struct (ops/) and its op-table
// row (testing/op_table/). Columns: name, kind, formula. Kinds:
//   F   float32 / float64
//   N   float32 / float64 and int64
//   FS  float only, one element at a time on the CPU (xsimd's pow is off by ulps where the
//       result is exact: 2^3 gave 7.9999999999999982, PyTorch gives 8)
//   NS  as N, one element at a time on the CPU

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "gradlab/core/half.hpp"

// clang-format off
#define GRADLAB_UNARY_OPS(X)                                                        \
  X(Neg,       N,  -x)                                                              \
  X(Exp,       F,  exp(x))                                                          \
  X(Log,       F,  log(x))                                                          \
  X(Sqrt,      F,  sqrt(x))                                                         \
  X(Abs,       N,  abs(x))                                                          \
  X(Sin,       F,  sin(x))                                                          \
  X(Cos,       F,  cos(x))                                                          \
  X(Tanh,      F,  tanh(x))                                                         \
  X(Sigmoid,   F,  V(1) / (V(1) + exp(-x)))                                         \
  X(Relu,      F,  select(x < V(0), V(0), x))             /* NaN stays NaN */       \
  X(Sign,      N,  select(x > V(0), V(1), select(x < V(0), V(-1), V(0))))           \
  X(Erf,       F,  erf(x))                                                          \
  X(LeakyRelu, F,  select(x < V(0), x * p, x))             /* p: negative slope */  \
  X(Clamp,     N,  select(x < p, p, select(x > q, q, x)))  /* p, q: min, max */     \
  X(PowScalar, FS, p == V(2) ? x * x : pow(x, p))          /* p: exponent */        \
  X(Softplus,  F,  select(x * p > q, x, log1p(exp(x * p)) / p))  /* p: beta, q: threshold */ \
  X(Expm1,     F,  expm1(x))                                                        \
  X(Gelu,      F,  V(0.5) * (x * (V(1) + erf(x * V(0.70710678118654752440)))))  /* x Φ(x), one pass */

// c = f(a, b), same dtype in and out.
#define GRADLAB_BINARY_OPS(X)                                                       \
  X(Add,     N,  a + b)                                                             \
  X(Sub,     N,  a - b)                                                             \
  X(Mul,     N,  a * b)                                                             \
  X(Div,     N,  a / b)                                                             \
  X(Pow,     NS, pow(a, b))                                                         \
  X(Maximum, N,  select(a > b || isnan(a), a, b))  /* NaN propagates, as in PyTorch */ \
  X(Minimum, N,  select(a < b || isnan(a), a, b))                                   \
  X(LogAddExp, F, select(a == b, a + log1p(V(1)),  /* ties: ±inf stay ±inf */          \
                         select(a > b || isnan(a), a, b) + log1p(exp(-abs(a - b)))))     \
  /* a = dy, b = x: gelu's derivative dy (Φ(x) + x φ(x)), φ(x) = exp(-x²/2) / √(2π), one pass */ \
  X(GeluBackward, F, a * (V(0.5) * (V(1) + erf(b * V(0.70710678118654752440))) +         \
                          b * (V(0.39894228040143267794) * exp(V(-0.5) * (b * b)))))

// c = f(a, b) -> bool. And / Or take bool tensors.
#define GRADLAB_COMPARE_OPS(X)                                                      \
  X(Gt, N, a > b)                                                                   \
  X(Lt, N, a < b)                                                                   \
  X(Ge, N, a >= b)                                                                  \
  X(Le, N, a <= b)                                                                  \
  X(Eq, N, a == b)                                                                  \
  X(Ne, N, a != b)                                                                  \
  X(And, N, a && b)                                                                 \
  X(Or,  N, a || b)
// clang-format on

namespace gradlab::math {

#define GRADLAB_NAME_(name, kind, formula) name,
/// y = f(x, p, q): the list above, then the two predicates (bool results).
enum class Unary { GRADLAB_UNARY_OPS(GRADLAB_NAME_) IsFinite, LogicalNot };
/// The arithmetic ops, then the comparisons (bool results).
enum class Binary { GRADLAB_BINARY_OPS(GRADLAB_NAME_) GRADLAB_COMPARE_OPS(GRADLAB_NAME_) };
#undef GRADLAB_NAME_

/// True for the ops of GRADLAB_COMPARE_OPS (their result is bool).
constexpr bool is_comparison(Binary op) { return op >= Binary::Gt; }

// ---- numbers: the same calls on the host and the device ------------------------------------
// The one-argument libm functions the formulas call, each as f(float) -> ::ff and
// f(double) -> ::f. The CUDA source of fused kernels (backend/cuda/fused.cpp) declares the same
// list, so a formula that calls a new one needs only its name added here.
#define GRADLAB_MATH_FUNCTIONS(X) X(exp) X(expm1) X(log) X(log1p) X(sqrt) X(sin) X(cos) X(tanh) X(erf)
#define GRADLAB_MATH_FN_(fn)                                     \
  GRADLAB_HD inline float fn(float x) { return ::fn##f(x); }     \
  GRADLAB_HD inline double fn(double x) { return ::fn(x); }
GRADLAB_MATH_FUNCTIONS(GRADLAB_MATH_FN_)
#undef GRADLAB_MATH_FN_
GRADLAB_HD inline float pow(float x, float y) { return ::powf(x, y); }
GRADLAB_HD inline double pow(double x, double y) { return ::pow(x, y); }
/// x^y for integers, exact: repeated squaring, y = sum of bits 2^k, x^y = prod of x^(2^k).
/// Overflow wraps as int64 multiplication does (done unsigned: no UB). A negative y gives 1 for
/// x = 1, ±1 for x = -1 and 0 otherwise, as PyTorch's integer pow.
/// NOTE: not through double: CUDA's pow is only within 2 ulp, and 3^3 truncated to 26.
GRADLAB_HD inline int64_t pow(int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
  uint64_t result = 1, base = static_cast<uint64_t>(x);
  for (uint64_t k = static_cast<uint64_t>(y); k != 0; k >>= 1) {
    if (k & 1) result *= base;
    base *= base;
  }
  return static_cast<int64_t>(result);
}
GRADLAB_HD inline float abs(float x) { return ::fabsf(x); }
GRADLAB_HD inline double abs(double x) { return ::fabs(x); }
GRADLAB_HD inline int64_t abs(int64_t x) { return x < 0 ? -x : x; }
template <class V>
GRADLAB_HD inline V select(bool c, V a, V b) {
  return c ? a : b;
}
template <class V>
GRADLAB_HD inline bool isnan(V x) {
  return x != x;
}
template <class V>
GRADLAB_HD inline bool isfinite(V x) {
  return x == x && x - x == x - x;  // inf - inf is NaN
}

/// An op parameter (a double at the op layer) as element type S: ±inf become the lowest / largest
/// int64 (so clamp with one bound open works on integers); floats keep inf.
template <class S>
GRADLAB_HD inline S param(double v) {
  if constexpr (std::is_same_v<S, int64_t>) return saturating_int64(v);
  return static_cast<S>(v);
}

// ---- the formulas as function objects: Exp{}(x, p, q), Add{}(a, b) ---------------------------
enum class Kind { F, N, FS, NS };
/// Whether an op of kind k is defined for element type S (float, double, int64_t, bool).
template <class S>
constexpr bool accepts(Kind k) {
  if constexpr (std::is_floating_point_v<S>) return true;
  else if constexpr (std::is_same_v<S, int64_t>) return k == Kind::N || k == Kind::NS;
  else return false;
}
/// Whether the CPU may run an op of kind k over xsimd batches.
constexpr bool vectorizable(Kind k) { return k == Kind::F || k == Kind::N; }

/// Whether formula text f calls a libm-class function (exp, log, sin ...).
constexpr bool calls_libm(const char* f) {
  constexpr const char* kCalls[] = {"exp(", "expm1(", "log(", "log1p(", "sin(", "cos(", "tanh(", "erf(", "pow("};
  for (const char* call : kCalls)
    for (const char* at = f; *at; ++at) {
      size_t i = 0;
      while (call[i] && at[i] == call[i]) ++i;
      if (!call[i]) return true;
    }
  return false;
}
/// Formulas worth saving for backward rather than recomputing (jit::compile's training regions):
/// the ones that call a libm-class function, read from the formula itself.
constexpr bool costly(Unary op) {
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Unary::name: return calls_libm(#formula);
    GRADLAB_UNARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: return false;
  }
}

#define GRADLAB_UNARY_FN_(name, kind, formula)                       \
  struct name##Fn {                                                  \
    static constexpr Unary kOp = Unary::name;                        \
    static constexpr Kind kKind = Kind::kind;                        \
    template <class V>                                               \
    GRADLAB_HD V operator()(V x, [[maybe_unused]] V p, [[maybe_unused]] V q) const { \
      return formula;                                                \
    }                                                                \
  };
#define GRADLAB_BINARY_FN_(name, kind, formula)                      \
  struct name##Fn {                                                  \
    static constexpr Binary kOp = Binary::name;                      \
    static constexpr Kind kKind = Kind::kind;                        \
    template <class V>                                               \
    GRADLAB_HD auto operator()(V a, V b) const {                     \
      return formula;                                                \
    }                                                                \
  };
GRADLAB_UNARY_OPS(GRADLAB_UNARY_FN_)
GRADLAB_BINARY_OPS(GRADLAB_BINARY_FN_)
GRADLAB_COMPARE_OPS(GRADLAB_BINARY_FN_)
#undef GRADLAB_UNARY_FN_
#undef GRADLAB_BINARY_FN_

/// Calls f.template operator()<NameFn>() for the formula of `op` (not IsFinite / LogicalNot);
/// returns false for those two.
template <class F>
bool visit_unary(Unary op, F&& f) {
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Unary::name: f.template operator()<name##Fn>(); return true;
    GRADLAB_UNARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: return false;
  }
}
/// Calls f.template operator()<NameFn>() for the formula of `op`.
template <class F>
void visit_binary(Binary op, F&& f) {
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Binary::name: f.template operator()<name##Fn>(); return;
    GRADLAB_BINARY_OPS(GRADLAB_CASE_)
    GRADLAB_COMPARE_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
  }
}

/// y = f(x) for one element of type S, with the op picked at run time (the CUDA kernels: one
/// kernel per dtype). Ops that S does not accept return x; the kernels check support first.
template <class S>
GRADLAB_HD inline S unary_value(Unary op, S x, S p, S q) {
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Unary::name: if constexpr (accepts<S>(Kind::kind)) return name##Fn{}(x, p, q); else break;
    GRADLAB_UNARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: break;
  }
  return x;
}
/// c = f(a, b) for one element, the op picked at run time; R = S, or bool for comparisons.
template <class S, class R>
GRADLAB_HD inline R binary_value(Binary op, S a, S b) {
  if constexpr (std::is_same_v<S, bool>) {  // bool: + is or, * is and (as in PyTorch)
    if (op == Binary::Add) op = Binary::Or;
    if (op == Binary::Mul) op = Binary::And;
  }
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Binary::name: if constexpr (accepts<S>(Kind::kind)) return static_cast<R>(name##Fn{}(a, b)); else break;
    GRADLAB_BINARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
#define GRADLAB_CASE_(name, kind, formula) \
  case Binary::name: return static_cast<R>(name##Fn{}(a, b));
    GRADLAB_COMPARE_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
  }
  return R{};
}

/// Whether the kernels define `op` on dtype dt (the int64 ops are the N kinds; bool has the
/// logical ops, == and !=, and + / * as or / and).
inline bool supported(Unary op, ScalarType dt) {
  if (op == Unary::LogicalNot) return dt == kBool;
  if (op == Unary::IsFinite) return dt != kFloat16 && dt != kBFloat16;
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula)                                        \
  case Unary::name:                                                               \
    return dt == kFloat32 || dt == kFloat64 || (dt == kInt64 && accepts<int64_t>(Kind::kind));
    GRADLAB_UNARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: return false;
  }
}
inline bool supported(Binary op, ScalarType dt) {
  if (dt == kBool)
    return op == Binary::And || op == Binary::Or || op == Binary::Add || op == Binary::Mul ||
           op == Binary::Eq || op == Binary::Ne;
  if (op == Binary::And || op == Binary::Or) return false;  // logical ops need bool
  if (dt == kFloat32 || dt == kFloat64) return true;
  if (dt != kInt64) return false;
  switch (op) {
#define GRADLAB_CASE_(name, kind, formula) \
  case Binary::name: return accepts<int64_t>(Kind::kind);
    GRADLAB_BINARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: return true;  // the comparisons
  }
}

}  // namespace gradlab::math
