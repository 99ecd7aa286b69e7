#pragma once
// Building fused programs (backend/fused.hpp) with ordinary-looking math: a Reg is one register
// of a program being built, and its operators and functions append steps. An op's derivative is
// written once as a template (ops/internal/elementwise.hpp):
//
//   template <class T> static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * in.y; }
//
// The eager backward runs it on Tensor (so it is recorded under create_graph); jit::compile runs
// it on Reg, which writes the same math as steps of the region's fused backward program. The
// functions below are the vocabulary such derivatives use, named as the Tensor functions are.
// Comparisons give 1 or 0 (as every register holds the program's dtype).

#include <array>
#include <vector>

#include "gradlab/backend/fused.hpp"

namespace gradlab::kern {

class FusedBuilder;

/// One register of a program being built; default-constructed = "no value" (as Tensor()).
struct Reg {
  FusedBuilder* b = nullptr;
  int id = -1;
  bool defined() const { return id >= 0; }
};

/// Appends steps to a program.
class FusedBuilder {
 public:
  std::vector<FusedStep> steps;

  Reg push(FusedStep s) {
    steps.push_back(s);
    return {this, static_cast<int>(steps.size()) - 1};
  }
  Reg reg(int id) { return {this, id}; }
  Reg input(int64_t index) {
    FusedStep s;
    s.kind = FusedStep::Kind::Input;
    s.index = index;
    return push(s);
  }
  Reg constant(double v) {
    FusedStep s;
    s.kind = FusedStep::Kind::Const;
    s.p = v;
    return push(s);
  }
  Reg unary(math::Unary op, Reg a, double p = 0, double q = 0) {
    FusedStep s;
    s.kind = FusedStep::Kind::Unary, s.op = static_cast<int>(op), s.a = a.id, s.p = p, s.q = q;
    return push(s);
  }
  Reg binary(math::Binary op, Reg a, Reg b) {
    FusedStep s;
    s.kind = math::is_comparison(op) ? FusedStep::Kind::Compare : FusedStep::Kind::Binary;
    s.op = static_cast<int>(op), s.a = a.id, s.b = b.id;
    return push(s);
  }
  Reg select(Reg c, Reg a, Reg b) {
    FusedStep s;
    s.kind = FusedStep::Kind::Select, s.a = c.id, s.b = a.id, s.c = b.id;
    return push(s);
  }
};

/// What an op's fused derivative sees for one step (jit's symbolic backward fills it): the
/// upstream gradient, the step's operands and value, its parameters; it sets `grad` for the
/// operands in `want`.
struct FusedGrad {
  Reg dy;
  std::array<Reg, 2> in;  ///< x (unary), or a, b (binary)
  Reg y;                  ///< the step's own value
  double p = 0, q = 0;
  std::array<bool, 2> want = {true, true};
  std::array<Reg, 2> grad;
};

// ---- the vocabulary of derivatives, on registers ---------------------------------------------

inline Reg bin(math::Binary op, Reg a, Reg b) { return a.b->binary(op, a, b); }
inline Reg cst(Reg like, double v) { return like.b->constant(v); }

inline Reg operator+(Reg a, Reg b) { return bin(math::Binary::Add, a, b); }
inline Reg operator-(Reg a, Reg b) { return bin(math::Binary::Sub, a, b); }
inline Reg operator*(Reg a, Reg b) { return bin(math::Binary::Mul, a, b); }
inline Reg operator/(Reg a, Reg b) { return bin(math::Binary::Div, a, b); }
inline Reg operator-(Reg a) { return a.b->unary(math::Unary::Neg, a); }
inline Reg operator+(Reg a, double v) { return a + cst(a, v); }
inline Reg operator-(Reg a, double v) { return a - cst(a, v); }
inline Reg operator*(Reg a, double v) { return a * cst(a, v); }
inline Reg operator/(Reg a, double v) { return a / cst(a, v); }
inline Reg operator+(double v, Reg a) { return cst(a, v) + a; }
inline Reg operator-(double v, Reg a) { return cst(a, v) - a; }
inline Reg operator*(double v, Reg a) { return cst(a, v) * a; }
inline Reg operator/(double v, Reg a) { return cst(a, v) / a; }

inline Reg exp(Reg x) { return x.b->unary(math::Unary::Exp, x); }
inline Reg log(Reg x) { return x.b->unary(math::Unary::Log, x); }
inline Reg sin(Reg x) { return x.b->unary(math::Unary::Sin, x); }
inline Reg cos(Reg x) { return x.b->unary(math::Unary::Cos, x); }
inline Reg sign(Reg x) { return x.b->unary(math::Unary::Sign, x); }
inline Reg sigmoid(Reg x) { return x.b->unary(math::Unary::Sigmoid, x); }
inline Reg erf(Reg x) { return x.b->unary(math::Unary::Erf, x); }
inline Reg pow(Reg x, double p) { return x.b->unary(math::Unary::PowScalar, x, p); }

inline Reg gt(Reg a, Reg b) { return bin(math::Binary::Gt, a, b); }
inline Reg lt(Reg a, Reg b) { return bin(math::Binary::Lt, a, b); }
inline Reg ge(Reg a, Reg b) { return bin(math::Binary::Ge, a, b); }
inline Reg le(Reg a, Reg b) { return bin(math::Binary::Le, a, b); }
inline Reg eq(Reg a, Reg b) { return bin(math::Binary::Eq, a, b); }
inline Reg gt(Reg a, double v) { return gt(a, cst(a, v)); }
inline Reg lt(Reg a, double v) { return lt(a, cst(a, v)); }
inline Reg ge(Reg a, double v) { return ge(a, cst(a, v)); }
inline Reg le(Reg a, double v) { return le(a, cst(a, v)); }
/// a and b are 1 / 0 masks: their product.
inline Reg logical_and(Reg a, Reg b) { return a * b; }

inline Reg where(Reg c, Reg a, Reg b) { return c.b->select(c, a, b); }
inline Reg where(Reg c, double a, Reg b) { return where(c, cst(c, a), b); }
inline Reg where(Reg c, Reg a, double b) { return where(c, a, cst(c, b)); }
inline Reg zeros_like(Reg x) { return cst(x, 0); }
/// dy where y > threshold, else 0 (relu's backward).
inline Reg threshold_backward(Reg dy, Reg y, double threshold) { return where(gt(y, threshold), dy, 0.0); }
/// dy (Φ(x) + x φ(x)) (gelu's backward): one step, its formula line.
inline Reg gelu_backward(Reg dy, Reg x) { return bin(math::Binary::GeluBackward, dy, x); }

}  // namespace gradlab::kern
