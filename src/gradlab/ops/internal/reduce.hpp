#pragma once
// The reduction op structs (internal: the public functions are in ops/ops.hpp): sum and
// amax/amin are primitives; mean, var, std, logsumexp and norm are composed in reduce.cpp.
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

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
struct Sum : Op<Sum<Full>> {
  static constexpr const char* kName = Full ? "SumBackward0" : "SumBackward1";
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

// y = max_dims x      dx = dy * (x == y) / (number of ties)     (amin likewise)
template <bool IsMax>
struct AmaxAmin : Op<AmaxAmin<IsMax>> {
  static constexpr const char* kName = IsMax ? "AmaxBackward0" : "AminBackward0";
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
struct MaxMinDim : Op<MaxMinDim<IsMax>> {
  static constexpr const char* kName = IsMax ? "MaxBackward0" : "MinBackward0";
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
