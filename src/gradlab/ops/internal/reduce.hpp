#pragma once
// The reduction op structs (internal: the public functions are in ops/ops.hpp): sum, mean,
// var, std and amax/amin are ops (named as PyTorch names their nodes); logsumexp and norm are
// composed in reduce.cpp.
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include <algorithm>

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// dy of a reduction, reshaped so that it broadcasts against the input (reduced dims as size 1).
inline Tensor keep_reduced(const Tensor& g, const Shape& in_shape, const Dims& dims, bool keepdim) {
  if (keepdim || dims.empty()) return g;
  Shape s = in_shape;
  for (auto d : dims) s[d] = 1;
  return g.reshape(s);
}

// y = Σ_dims x       dx = dy broadcast back to x.shape
// (PyTorch's names: SumBackward0 for a full x.sum(), SumBackward1 for sum over dims)
template <bool Full>
struct Sum : BuiltinOp<Sum<Full>> {
  static constexpr const char* kName = Full ? "SumBackward0" : "SumBackward1";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Sum;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {  // attrs: dims, keepdim
    std::vector<std::string> args = {c.in[0]};
    if (!c.ints(0).empty()) args.push_back(g.ints(c.ints(0), "axes"));
    return g.op("ReduceSum", args, {{"keepdims", int64_t{c.integer(1) != 0 ? 1 : 0}}});
  }
  Shape in_shape;
  Dims dims;
  bool keepdim = false;
  Tensor forward(const Tensor& x, const Dims& d, bool k) {
    in_shape = x.sizes();
    dims = d;
    keepdim = k;
    return kern::reduce(kern::Reduce::Sum, x, d, k);
  }
  GradList backward(const GradList& g) { return {keep_reduced(g[0], in_shape, dims, keepdim).expand(in_shape)}; }
};

// y = Σ_dims x / n     dx = dy / n broadcast back to x.shape      (n = reduced element count)
// (PyTorch's names: MeanBackward0 for a full x.mean(), MeanBackward1 over dims)
template <bool Full>
struct Mean : BuiltinOp<Mean<Full>> {
  static constexpr const char* kName = Full ? "MeanBackward0" : "MeanBackward1";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (ReduceMean)");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  Dims dims;
  bool keepdim = false;
  double n = 1;
  Tensor forward(const Tensor& x, const Dims& d, bool k) {
    in_shape = x.sizes();
    dims = d;
    keepdim = k;
    n = 1;
    for (auto j : d) n *= static_cast<double>(x.size(j));
    Tensor y = kern::reduce(kern::Reduce::Sum, x, d, k);
    kern::binary_(kern::Binary::Div, y, scalar_tensor(n, dtype(y.dtype()).device(y.device())));
    return y;
  }
  GradList backward(const GradList& g) {
    return {keep_reduced(g[0], in_shape, dims, keepdim).expand(in_shape) / n};
  }
};

// v = Σ_dims (x - x̄)² / (n - c)            dx = dv * 2 (x - x̄) / (n - c)
// s = √v  (Std)                            dx = ds / (2 s) * 2 (x - x̄) / (n - c), and 0 where s = 0
// NOTE: at s = 0 (a constant x) the chain rule gives 0 * inf = NaN; PyTorch's std_backward masks
// it to 0 (x - x̄ is 0 there too, so 0 is the limit along every direction that keeps x constant).
template <bool IsStd>
struct VarStd : BuiltinOp<VarStd<IsStd>> {
  static constexpr const char* kName = IsStd ? "StdBackward0" : "VarBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Float32;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor x_, y_;
  Dims dims;
  bool keepdim = false;
  double denom = 1;
  Tensor forward(const Tensor& x, const Dims& d, int64_t correction, bool k) {
    dims = d;
    keepdim = k;
    double n = 1;
    for (auto j : d) n *= static_cast<double>(x.size(j));
    denom = std::max(n - static_cast<double>(correction), 0.0);
    // forward with the kernels (grad mode is off here): Σ (x - mean)² / (n - c)
    Tensor m = kern::reduce(kern::Reduce::Sum, x, d, true);
    kern::binary_(kern::Binary::Div, m, scalar_tensor(n, dtype(m.dtype()).device(m.device())));
    Tensor c = x - m;
    Tensor y = kern::reduce(kern::Reduce::Sum, c * c, d, k);
    kern::binary_(kern::Binary::Div, y, scalar_tensor(denom, dtype(y.dtype()).device(y.device())));
    if (IsStd) y = kern::unary(kern::Unary::Sqrt, y);
    this->save(x_, x);
    if (IsStd) this->save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    Tensor dv = keep_reduced(g[0], x.sizes(), dims, keepdim);
    if (IsStd) {
      Tensor s = keep_reduced(y_.unpack(), x.sizes(), dims, keepdim);
      dv = (dv / (s * 2.0)).masked_fill(eq(s, 0.0), 0.0);
    }
    return {dv * (x - mean(x, dims, /*keepdim=*/true)) * (2.0 / denom)};
  }
};

// y = max_dims x      dx = dy * (x == y) / (number of ties)     (amin likewise)
template <bool IsMax>
struct AmaxAmin : BuiltinOp<AmaxAmin<IsMax>> {
  static constexpr const char* kName = IsMax ? "AmaxBackward0" : "AminBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (ReduceMax / ReduceMin)");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor x_, y_;
  Dims dims;
  bool keepdim = false;
  Tensor forward(const Tensor& x, const Dims& d, bool k) {
    dims = d;
    keepdim = k;
    Tensor y = kern::reduce(IsMax ? kern::Reduce::Max : kern::Reduce::Min, x, d, k);
    this->save(x_, x);
    this->save(y_, y, kOutput);
    return y;
  }
  GradList backward(const GradList& g) {
    Tensor x = x_.unpack();
    Tensor y = keep_reduced(y_.unpack(), x.sizes(), dims, keepdim);
    Tensor mask = eq(x, y).to(x.dtype());
    Tensor count = sum(mask, dims, /*keepdim=*/true);
    return {keep_reduced(g[0], x.sizes(), dims, keepdim) * mask / count};
  }
};

// (y, i) = max over one dim     dx = zeros(x.shape) with dy at the arg positions   (min likewise)
template <bool IsMax>
struct MaxMinDim : BuiltinOp<MaxMinDim<IsMax>> {
  static constexpr const char* kName = IsMax ? "MaxBackward0" : "MinBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (two outputs: values and indices)");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  SavedTensor idx_;
  int64_t dim = 0;
  bool keepdim = false;
  std::vector<Tensor> forward(const Tensor& x, int64_t d, bool k) {
    in_shape = x.sizes();
    dim = d;
    keepdim = k;
    auto [v, i] = kern::reduce_index(IsMax ? kern::Reduce::Max : kern::Reduce::Min, x, d, k);
    this->save(idx_, i, Output{1});  // the indices are output 1
    return {v, i};
  }
  GradList backward(const GradList& g) {
    if (in_shape.empty()) return {g[0]};
    Tensor idx = idx_.unpack(), dy = g[0];
    if (!keepdim) {
      idx = idx.unsqueeze(dim);
      dy = dy.unsqueeze(dim);
    }
    return {scatter_add(zeros(in_shape, dy.options()), dim, idx, dy)};
  }
};

}  // namespace gradlab::ops_detail
