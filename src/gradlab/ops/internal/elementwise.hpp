#pragma once
// The elementwise op structs (internal: the public functions are in ops/ops.hpp). Binary ops see
// same-shaped, same-dtype inputs: prepare_binary has promoted and expanded them, so their backward
// never has to "unbroadcast" (Expand's backward does).
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include <cmath>
#include <numbers>

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::ops_detail {

using kern::Binary;
using kern::Unary;

// ---- binary ---------------------------------------------------------------------------------

// c = a + b          da = dc, db = dc
struct Add : Op<Add> {
  static constexpr const char* kName = "AddBackward0";
  Tensor forward(const Tensor& a, const Tensor& b) { return kern::binary(Binary::Add, a, b); }
  GradList backward(const GradList& g) { return {g[0], g[0]}; }
};

// c = a - b          da = dc, db = -dc
struct Sub : Op<Sub> {
  static constexpr const char* kName = "SubBackward0";
  Tensor forward(const Tensor& a, const Tensor& b) { return kern::binary(Binary::Sub, a, b); }
  GradList backward(const GradList& g) {
    return {g[0], needs_input_grad(1) ? -g[0] : Tensor()};
  }
};

// c = a * b          da = dc * b, db = dc * a
struct Mul : Op<Mul> {
  static constexpr const char* kName = "MulBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) save(a_, a);
    if (a.requires_grad()) save(b_, b);
    return kern::binary(Binary::Mul, a, b);
  }
  GradList backward(const GradList& g) {
    return {needs_input_grad(0) ? g[0] * b_.unpack() : Tensor(),
            needs_input_grad(1) ? g[0] * a_.unpack() : Tensor()};
  }
};

// c = a / b          da = dc / b, db = -dc * a / b²
struct Div : Op<Div> {
  static constexpr const char* kName = "DivBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(b_, b);
    if (b.requires_grad()) save(a_, a);
    return kern::binary(Binary::Div, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor b = b_.unpack();
    return {needs_input_grad(0) ? g[0] / b : Tensor(),
            needs_input_grad(1) ? -g[0] * a_.unpack() / (b * b) : Tensor()};
  }
};

// c = a ^ b          da = dc * b * a^(b-1), db = dc * c * log(a)  (0 where a = 0 and b >= 0)
struct Pow : Op<Pow> {
  static constexpr const char* kName = "PowBackward1";
  SavedTensor a_, b_, c_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor c = kern::binary(Binary::Pow, a, b);
    save(a_, a);
    save(b_, b);
    if (b.requires_grad()) save(c_, c, kOutput);
    return c;
  }
  GradList backward(const GradList& g) {
    Tensor a = a_.unpack(), b = b_.unpack();
    Tensor da, db;
    if (needs_input_grad(0)) da = g[0] * b * pow(a, b - 1);
    if (needs_input_grad(1)) {
      Tensor safe = logical_and(eq(a, 0.0), ge(b, 0.0));
      db = where(safe, 0.0, g[0] * c_.unpack() * log(a));
    }
    return {da, db};
  }
};

// c = max(a, b)      da = dc where a > b (dc/2 on ties), db likewise
struct Maximum : Op<Maximum> {
  static constexpr const char* kName = "MaximumBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return kern::binary(Binary::Maximum, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor a = a_.unpack(), b = b_.unpack();
    Tensor share = where(eq(a, b), g[0] * 0.5, g[0]);
    return {where(lt(a, b), 0.0, share), where(lt(b, a), 0.0, share)};
  }
};

// c = min(a, b)      da = dc where a < b (dc/2 on ties), db likewise
struct Minimum : Op<Minimum> {
  static constexpr const char* kName = "MinimumBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return kern::binary(Binary::Minimum, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor a = a_.unpack(), b = b_.unpack();
    Tensor share = where(eq(a, b), g[0] * 0.5, g[0]);
    return {where(gt(a, b), 0.0, share), where(gt(b, a), 0.0, share)};
  }
};

// y = cond ? a : b    da = cond ? dy : 0, db = cond ? 0 : dy
struct Where : Op<Where> {
  static constexpr const char* kName = "WhereBackward0";
  SavedTensor cond_;
  Tensor forward(const Tensor& cond, const Tensor& a, const Tensor& b) {
    save(cond_, cond);
    return kern::where(cond, a, b);
  }
  GradList backward(const GradList& g) {
    Tensor c = cond_.unpack();
    Tensor z = zeros_like(g[0]);
    return {Tensor(), needs_input_grad(1) ? where(c, g[0], z) : Tensor(),
            needs_input_grad(2) ? where(c, z, g[0]) : Tensor()};
  }
};

// ---- unary ----------------------------------------------------------------------------------

// y = -x             dx = -dy
struct Neg : Op<Neg> {
  static constexpr const char* kName = "NegBackward0";
  Tensor forward(const Tensor& x) { return kern::unary(Unary::Neg, x); }
  GradList backward(const GradList& g) { return {-g[0]}; }
};

// y = exp(x)         dx = dy * y            (saves y: the output is the derivative)
struct Exp : Op<Exp> {
  static constexpr const char* kName = "ExpBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = kern::unary(Unary::Exp, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) { return {g[0] * y_.unpack()}; }
};

// y = log(x)         dx = dy / x
struct Log : Op<Log> {
  static constexpr const char* kName = "LogBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return kern::unary(Unary::Log, x);
  }
  GradList backward(const GradList& g) { return {g[0] / x_.unpack()}; }
};

// y = √x             dx = dy / (2 y)
struct Sqrt : Op<Sqrt> {
  static constexpr const char* kName = "SqrtBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = kern::unary(Unary::Sqrt, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) { return {g[0] / (2 * y_.unpack())}; }
};

// y = |x|            dx = dy * sign(x)      (0 at x = 0, as in PyTorch)
struct Abs : Op<Abs> {
  static constexpr const char* kName = "AbsBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return kern::unary(Unary::Abs, x);
  }
  GradList backward(const GradList& g) { return {g[0] * sign(x_.unpack())}; }
};

// y = sin(x)         dx = dy * cos(x)
struct Sin : Op<Sin> {
  static constexpr const char* kName = "SinBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return kern::unary(Unary::Sin, x);
  }
  GradList backward(const GradList& g) { return {g[0] * cos(x_.unpack())}; }
};

// y = cos(x)         dx = -dy * sin(x)
struct Cos : Op<Cos> {
  static constexpr const char* kName = "CosBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return kern::unary(Unary::Cos, x);
  }
  GradList backward(const GradList& g) { return {-g[0] * sin(x_.unpack())}; }
};

// y = tanh(x)        dx = dy * (1 - y²)     (from the output)
struct Tanh : Op<Tanh> {
  static constexpr const char* kName = "TanhBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = kern::unary(Unary::Tanh, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor y = y_.unpack();
    return {g[0] * (1 - y * y)};
  }
};

// y = σ(x)           dx = dy * y * (1 - y)  (from the output)
struct Sigmoid : Op<Sigmoid> {
  static constexpr const char* kName = "SigmoidBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = kern::unary(Unary::Sigmoid, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor y = y_.unpack();
    return {g[0] * y * (1 - y)};
  }
};

// y = erf(x)         dx = dy * 2/√π * exp(-x²)
struct Erf : Op<Erf> {
  static constexpr const char* kName = "ErfBackward0";
  SavedTensor x_;
  Tensor forward(const Tensor& x) {
    save(x_, x);
    return kern::unary(Unary::Erf, x);
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    return {g[0] * (2.0 / std::sqrt(std::numbers::pi)) * exp(-(x * x))};
  }
};

// y = max(x, 0)      dx = dy * (y > 0)      (from the output; one threshold_backward pass)
struct Relu : Op<Relu> {
  static constexpr const char* kName = "ReluBackward0";
  SavedTensor y_;
  Tensor forward(const Tensor& x) {
    Tensor y = kern::unary(Unary::Relu, x);
    save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) { return {threshold_backward(g[0], y_.unpack(), 0.0)}; }
};

// y = x > 0 ? x : s x    dx = dy * (x > 0 ? 1 : s)
struct LeakyRelu : Op<LeakyRelu> {
  static constexpr const char* kName = "LeakyReluBackward0";
  SavedTensor x_;
  double slope = 0;
  Tensor forward(const Tensor& x, double s) {
    slope = s;
    save(x_, x);
    return kern::unary(Unary::LeakyRelu, x, s);
  }
  GradList backward(const GradList& g) { return {where(gt(x_.unpack(), 0.0), g[0], g[0] * slope)}; }
};

// y = log(1 + exp(βx)) / β  (x where βx > threshold)    dx = dy * σ(βx)  (dy where βx > threshold)
struct Softplus : Op<Softplus> {
  static constexpr const char* kName = "SoftplusBackward0";
  SavedTensor x_;
  double beta = 1, threshold = 20;
  Tensor forward(const Tensor& x, double b, double t) {
    beta = b;
    threshold = t;
    save(x_, x);
    return kern::unary(Unary::Softplus, x, b, t);
  }
  GradList backward(const GradList& g) {
    Tensor bx = x_.unpack() * beta;
    return {where(gt(bx, threshold), g[0], g[0] * sigmoid(bx))};
  }
};

// y = clamp(x, lo, hi)   dx = dy where lo <= x <= hi, else 0
struct Clamp : Op<Clamp> {
  static constexpr const char* kName = "ClampBackward1";
  SavedTensor x_;
  double lo = -INFINITY, hi = INFINITY;
  Tensor forward(const Tensor& x, double l, double h) {
    lo = l;
    hi = h;
    save(x_, x);
    return kern::unary(Unary::Clamp, x, l, h);
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    return {g[0] * logical_and(ge(x, lo), le(x, hi))};
  }
};

// y = x^p            dx = dy * p * x^(p-1)
struct PowScalar : Op<PowScalar> {
  static constexpr const char* kName = "PowBackward0";
  SavedTensor x_;
  double p = 1;
  Tensor forward(const Tensor& x, double exponent) {
    p = exponent;
    save(x_, x);
    return kern::unary(Unary::PowScalar, x, exponent);
  }
  GradList backward(const GradList& g) {
    if (p == 0) return {zeros_like(g[0])};
    Tensor x = x_.unpack();
    return {g[0] * p * (p == 2 ? x : pow(x, p - 1))};
  }
};

}  // namespace gradlab::ops_detail
