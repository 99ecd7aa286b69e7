#pragma once
// The elementwise op structs (internal: the public functions are in ops/ops.hpp). Binary ops see
// same-shaped, same-dtype inputs: prepare_binary has promoted and expanded them, so their backward
// never has to "unbroadcast" (Expand's backward does).
//
// Each struct declares its traits (ops/op_traits.hpp) and writes its derivative once, as a
// template: backward() runs it on Tensor, jit::compile on registers of its fused backward
// (backend/fused_builder.hpp).
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include <array>
#include <cmath>
#include <string>
#include <numbers>

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::ops_detail {

using kern::Binary;
using kern::Unary;

// The backward of a binary op struct: its derivative on the saved operands (a_, b_, and c_ the
// output when the derivative reads it), for the inputs that need a gradient.
template <class OpT>
GradList binary_backward(const OpT& op, const Tensor& dc, const SavedTensor* a = nullptr,
                         const SavedTensor* b = nullptr, const SavedTensor* c = nullptr) {
  auto unpack = [](const SavedTensor* s) { return s ? s->unpack() : Tensor(); };
  const auto d = OpT::derivative(dc, BinaryArgs<Tensor>{unpack(a), unpack(b), unpack(c), op.needs_input_grad(0),
                                                        op.needs_input_grad(1)});
  return {d[0], d[1]};
}
template <class OpT>
GradList binary_backward(const OpT& op, const Tensor& dc, const SavedTensor& a, const SavedTensor& b) {
  return binary_backward(op, dc, &a, &b);
}
template <class OpT>
GradList binary_backward(const OpT& op, const Tensor& dc, const SavedTensor& a, const SavedTensor& b,
                         const SavedTensor& c) {
  return binary_backward(op, dc, &a, &b, &c);
}

/// What a unary op's derivative reads: its input x or its output y (saved by forward).
enum Saves { kSavesX, kSavesY };
// A unary op with a formula: forward runs the formula (with parameters p, q, kept for the
// derivative), saves what its derivative reads, and backward runs the derivative on Tensors.
template <class D, Saves S>
struct UnaryOp : BuiltinOp<D> {
  SavedTensor x_, y_;
  double p = 0, q = 0;
  Tensor forward(const Tensor& x, double p_ = 0, double q_ = 0) {
    p = p_;
    q = q_;
    Tensor y = kern::unary(static_cast<Unary>(D::kFormula.op), x, p, q);
    if constexpr (S == kSavesX) this->save(x_, x);
    else this->save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    return {D::derivative(g[0], UnaryArgs<Tensor>{x_.unpack(), y_.unpack(), p, q})};
  }
};

// ---- binary ---------------------------------------------------------------------------------

// c = a + b          da = dc, db = dc
struct Add : BuiltinOp<Add> {
  static constexpr const char* kName = "AddBackward0";
  static constexpr Formula kFormula = Binary::Add;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Add");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>&) { return {dc, dc}; }
  Tensor forward(const Tensor& a, const Tensor& b) { return kern::binary(Binary::Add, a, b); }
  GradList backward(const GradList& g) { return {g[0], g[0]}; }
};

// c = a - b          da = dc, db = -dc
struct Sub : BuiltinOp<Sub> {
  static constexpr const char* kName = "SubBackward0";
  static constexpr Formula kFormula = Binary::Sub;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Sub");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    return {dc, in.want_b ? -dc : T()};
  }
  Tensor forward(const Tensor& a, const Tensor& b) { return kern::binary(Binary::Sub, a, b); }
  GradList backward(const GradList& g) { return binary_backward<Sub>(*this, g[0]); }
};

// c = a * b          da = dc * b, db = dc * a
struct Mul : BuiltinOp<Mul> {
  static constexpr const char* kName = "MulBackward0";
  static constexpr Formula kFormula = Binary::Mul;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Mul");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    return {in.want_a ? dc * in.b : T(), in.want_b ? dc * in.a : T()};
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) save(a_, a);
    if (a.requires_grad()) save(b_, b);
    return kern::binary(Binary::Mul, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<Mul>(*this, g[0], a_, b_); }
};

// c = a / b          da = dc / b, db = -dc * a / b²
struct Div : BuiltinOp<Div> {
  static constexpr const char* kName = "DivBackward0";
  static constexpr Formula kFormula = Binary::Div;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Div");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    return {in.want_a ? dc / in.b : T(), in.want_b ? -dc * in.a / (in.b * in.b) : T()};
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(b_, b);
    if (b.requires_grad()) save(a_, a);
    return kern::binary(Binary::Div, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<Div>(*this, g[0], a_, b_); }
};

// c = a ^ b          da = dc * b * a^(b-1), db = dc * c * log(a)  (0 where a = 0 and b >= 0)
struct Pow : BuiltinOp<Pow> {
  static constexpr const char* kName = "PowBackward1";
  static constexpr Formula kFormula = Binary::Pow;
  static constexpr Amp kAutocast = Amp::Float32;  // PyTorch's float32 list
  static constexpr Onnx kOnnx = Onnx::same("Pow");
  // NOTE: not fused: its derivative needs pow and log of the operands, and the formula runs one
  // element at a time on the CPU (kind NS): a fused region gains nothing.
  static constexpr Fusion kFusion = Fusion::None;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    T da, db;
    if (in.want_a) da = dc * in.b * pow(in.a, in.b - 1);
    if (in.want_b) db = where(logical_and(eq(in.a, 0.0), ge(in.b, 0.0)), 0.0, dc * in.c * log(in.a));
    return {da, db};
  }
  SavedTensor a_, b_, c_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor c = kern::binary(Binary::Pow, a, b);
    save(a_, a);
    save(b_, b);
    if (b.requires_grad()) save(c_, c, kOutput);
    return c;
  }
  GradList backward(const GradList& g) { return binary_backward<Pow>(*this, g[0], a_, b_, c_); }
};

// c = max(a, b)      da = dc where a > b (dc/2 on ties), db likewise
struct Maximum : BuiltinOp<Maximum> {
  static constexpr const char* kName = "MaximumBackward0";
  static constexpr Formula kFormula = Binary::Maximum;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Max");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    T share = where(eq(in.a, in.b), dc * 0.5, dc);
    return {where(lt(in.a, in.b), 0.0, share), where(lt(in.b, in.a), 0.0, share)};
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return kern::binary(Binary::Maximum, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<Maximum>(*this, g[0], a_, b_); }
};

// c = min(a, b)      da = dc where a < b (dc/2 on ties), db likewise
struct Minimum : BuiltinOp<Minimum> {
  static constexpr const char* kName = "MinimumBackward0";
  static constexpr Formula kFormula = Binary::Minimum;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Min");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    T share = where(eq(in.a, in.b), dc * 0.5, dc);
    return {where(gt(in.a, in.b), 0.0, share), where(gt(in.b, in.a), 0.0, share)};
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return kern::binary(Binary::Minimum, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<Minimum>(*this, g[0], a_, b_); }
};

// c = log(exp(a) + exp(b))      da = dc * σ(a - b), db = dc * σ(b - a)
struct LogAddExp : BuiltinOp<LogAddExp> {
  static constexpr const char* kName = "LogaddexpBackward0";
  static constexpr Formula kFormula = Binary::LogAddExp;
  static constexpr Amp kAutocast = Amp::Float32;  // NOTE: gradlab's choice, beside logsumexp
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    return {in.want_a ? dc * sigmoid(in.a - in.b) : T(), in.want_b ? dc * sigmoid(in.b - in.a) : T()};
  }
  // m + log(exp(a - m) + exp(b - m)), m = max(a, b).
  // NOTE: NaN where a = b = ±inf (the formula gives ±inf there).
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    const std::string m = g.op("Max", {c.in[0], c.in[1]});
    const std::string s = g.op("Add", {g.op("Exp", {g.op("Sub", {c.in[0], m})}), g.op("Exp", {g.op("Sub", {c.in[1], m})})});
    return g.op("Add", {m, g.op("Log", {s})});
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    save(a_, a);
    save(b_, b);
    return kern::binary(Binary::LogAddExp, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<LogAddExp>(*this, g[0], a_, b_); }
};

// c = a (Φ(b) + b φ(b))   (gelu's backward: a = dy, b = x; φ(x) = exp(-x²/2) / √(2π))
// da = dc (Φ(b) + b φ(b)) = gelu_backward(dc, b),   db = dc a φ(b) (2 - b²)
// One pass, its formula line (the composite of erf, exp and products took eleven); the composite
// stays the op table's reference.
struct GeluBackward : BuiltinOp<GeluBackward> {
  static constexpr const char* kName = "GeluBackwardBackward0";
  static constexpr Formula kFormula = Binary::GeluBackward;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a backward-only op (gelu's gradient)");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static std::array<T, 2> derivative(const T& dc, const BinaryArgs<T>& in) {
    T da, db;
    if (in.want_a) da = gelu_backward(dc, in.b);
    if (in.want_b) {
      const T pdf = exp(-0.5 * (in.b * in.b)) * (1 / std::sqrt(2 * std::numbers::pi));
      db = dc * in.a * pdf * (2 - in.b * in.b);
    }
    return {da, db};
  }
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) save(a_, a);
    save(b_, b);
    return kern::binary(Binary::GeluBackward, a, b);
  }
  GradList backward(const GradList& g) { return binary_backward<GeluBackward>(*this, g[0], a_, b_); }
};

// y = cond ? a : b    da = cond ? dy : 0, db = cond ? 0 : dy
struct Where : BuiltinOp<Where> {
  static constexpr const char* kName = "WhereBackward0";
  static constexpr Formula kFormula = kNoFormula;  // three operands: kern::where
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Where");
  static constexpr Fusion kFusion = Fusion::None;
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
// p, q: the op's parameters (slope, beta and threshold, min and max, exponent), kept by forward.

// y = -x             dx = -dy
struct Neg : BuiltinOp<Neg> {
  static constexpr const char* kName = "NegBackward0";
  static constexpr Formula kFormula = Unary::Neg;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Neg");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>&) { return -dy; }
  Tensor forward(const Tensor& x) { return kern::unary(Unary::Neg, x); }
  GradList backward(const GradList& g) { return {derivative(g[0], UnaryArgs<Tensor>{})}; }
};

// y = exp(x)         dx = dy * y            (saves y: the output is the derivative)
struct Exp : UnaryOp<Exp, kSavesY> {
  static constexpr const char* kName = "ExpBackward0";
  static constexpr Formula kFormula = Unary::Exp;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::same("Exp");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * in.y; }
};

// y = log(x)         dx = dy / x
struct Log : UnaryOp<Log, kSavesX> {
  static constexpr const char* kName = "LogBackward0";
  static constexpr Formula kFormula = Unary::Log;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::same("Log");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy / in.x; }
};

// y = √x             dx = dy / (2 y)
struct Sqrt : UnaryOp<Sqrt, kSavesY> {
  static constexpr const char* kName = "SqrtBackward0";
  static constexpr Formula kFormula = Unary::Sqrt;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Sqrt");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy / (2 * in.y); }
};

// y = |x|            dx = dy * sign(x)      (0 at x = 0, as in PyTorch)
struct Abs : UnaryOp<Abs, kSavesX> {
  static constexpr const char* kName = "AbsBackward0";
  static constexpr Formula kFormula = Unary::Abs;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Abs");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * sign(in.x); }
};

// y = sin(x)         dx = dy * cos(x)
struct Sin : UnaryOp<Sin, kSavesX> {
  static constexpr const char* kName = "SinBackward0";
  static constexpr Formula kFormula = Unary::Sin;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Sin");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * cos(in.x); }
};

// y = cos(x)         dx = -dy * sin(x)
struct Cos : UnaryOp<Cos, kSavesX> {
  static constexpr const char* kName = "CosBackward0";
  static constexpr Formula kFormula = Unary::Cos;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Cos");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return -dy * sin(in.x); }
};

// y = tanh(x)        dx = dy * (1 - y²)     (from the output)
struct Tanh : UnaryOp<Tanh, kSavesY> {
  static constexpr const char* kName = "TanhBackward0";
  static constexpr Formula kFormula = Unary::Tanh;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Tanh");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * (1 - in.y * in.y); }
};

// y = σ(x)           dx = dy * y * (1 - y)  (from the output)
struct Sigmoid : UnaryOp<Sigmoid, kSavesY> {
  static constexpr const char* kName = "SigmoidBackward0";
  static constexpr Formula kFormula = Unary::Sigmoid;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Sigmoid");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * in.y * (1 - in.y); }
};

// y = erf(x)         dx = dy * 2/√π * exp(-x²)
struct Erf : UnaryOp<Erf, kSavesX> {
  static constexpr const char* kName = "ErfBackward0";
  static constexpr Formula kFormula = Unary::Erf;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Erf");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) {
    return dy * (2.0 / std::sqrt(std::numbers::pi)) * exp(-(in.x * in.x));
  }
};

// y = x Φ(x) = 0.5 x (1 + erf(x / √2))     dx = dy * (Φ(x) + x φ(x)),  φ(x) = exp(-x²/2) / √(2π)
// One pass each way (the forward formula is the composite's, in its order: 0.5 * (x * (1 +
// erf(x * (1/√2)))); the backward is gelu_backward, GeluBackward above); the composites stay the
// op table's references.
struct Gelu : UnaryOp<Gelu, kSavesX> {
  static constexpr const char* kName = "GeluBackward0";
  static constexpr Formula kFormula = Unary::Gelu;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return gelu_backward(dy, in.x); }
  // opset 17 has no Gelu: the composite.
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    const std::string e = g.op("Erf", {g.op("Div", {c.in[0], g.scalar(std::numbers::sqrt2, "sqrt2")})});
    return g.op("Mul", {g.op("Mul", {c.in[0], g.op("Add", {e, g.scalar(1, "one")})}), g.scalar(0.5, "half")});
  }
};

// y = max(x, 0)      dx = dy * (y > 0)      (from the output; one threshold_backward pass)
struct Relu : UnaryOp<Relu, kSavesY> {
  static constexpr const char* kName = "ReluBackward0";
  static constexpr Formula kFormula = Unary::Relu;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Relu");
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return threshold_backward(dy, in.y, 0.0); }
};

// y = x > 0 ? x : s x    dx = dy * (x > 0 ? 1 : s)        (p = s)
struct LeakyRelu : UnaryOp<LeakyRelu, kSavesX> {
  static constexpr const char* kName = "LeakyReluBackward0";
  static constexpr Formula kFormula = Unary::LeakyRelu;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return where(gt(in.x, 0.0), dy, dy * in.p); }
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("LeakyRelu", {c.in[0]}, {{"alpha", c.real(0)}});
  }
};

// y = log(1 + exp(βx)) / β  (x where βx > threshold)    dx = dy * σ(βx)  (dy where βx > threshold)
// (p = β, q = threshold)
struct Softplus : UnaryOp<Softplus, kSavesX> {
  static constexpr const char* kName = "SoftplusBackward0";
  static constexpr Formula kFormula = Unary::Softplus;
  static constexpr Amp kAutocast = Amp::Float32;  // PyTorch's float32 list
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) {
    T bx = in.x * in.p;
    return where(gt(bx, in.q), dy, dy * sigmoid(bx));
  }
  // ONNX's Softplus has no β: log(1 + exp(βx)) / β (the linear part above the threshold differs
  // by less than exp(-threshold)).
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    const double beta = c.real(0);
    if (beta == 1) return g.op("Softplus", {c.in[0]});
    return g.op("Div", {g.op("Softplus", {g.op("Mul", {c.in[0], g.scalar(beta, "beta")})}), g.scalar(beta, "beta")});
  }
};

// y = clamp(x, lo, hi)   dx = dy where lo <= x <= hi, else 0        (p = lo, q = hi)
struct Clamp : UnaryOp<Clamp, kSavesX> {
  static constexpr const char* kName = "ClampBackward1";
  static constexpr Formula kFormula = Unary::Clamp;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) {
    return dy * logical_and(ge(in.x, in.p), le(in.x, in.q));
  }
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Clip", {c.in[0], g.scalar(c.real(0), "min"), g.scalar(c.real(1), "max")});
  }
};

// y = x^p            dx = dy * p * x^(p-1)
struct PowScalar : UnaryOp<PowScalar, kSavesX> {
  static constexpr const char* kName = "PowBackward0";
  static constexpr Formula kFormula = Unary::PowScalar;
  static constexpr Amp kAutocast = Amp::Float32;  // PyTorch's float32 list
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) {
    if (in.p == 0) return zeros_like(dy);
    return dy * in.p * (in.p == 2 ? in.x : pow(in.x, in.p - 1));
  }
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Pow", {c.in[0], g.scalar(c.real(0), "exponent")});
  }
};

// y = exp(x) - 1     dx = dy * (y + 1)      (saves y; exact near 0, where exp(x) - 1 cancels)
struct Expm1 : UnaryOp<Expm1, kSavesY> {
  static constexpr const char* kName = "Expm1Backward0";
  static constexpr Formula kFormula = Unary::Expm1;
  static constexpr Amp kAutocast = Amp::Float32;  // PyTorch's float32 list
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Elementwise;
  template <class T>
  static T derivative(const T& dy, const UnaryArgs<T>& in) { return dy * (in.y + 1); }
  // ONNX has no Expm1: Exp then Sub (the digits near 0 that expm1 keeps are lost there).
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Sub", {g.op("Exp", {c.in[0]}), g.scalar(1, "one")});
  }
};

}  // namespace gradlab::ops_detail
