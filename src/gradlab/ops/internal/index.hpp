#pragma once
// The indexing op structs (internal). Each pair is the other's backward: gather <-> scatter_add,
// index_select <-> index_add.
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// y = x[.., index[i], ..] along dim      dx = index_add(zeros(x.shape), dim, index, dy)
struct IndexSelect : BuiltinOp<IndexSelect> {
  static constexpr const char* kName = "IndexSelectBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Gather", {c.in[0], c.in[1]}, {{"axis", c.integer(0)}});
  }
  Shape in_shape;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d, const Tensor& index) {
    in_shape = x.sizes();
    dim = d;
    save(index_, index);
    return kern::index_select(x, d, index);
  }
  GradList backward(const GradList& g) {
    return {index_add(zeros(in_shape, g[0].options()), dim, index_.unpack(), g[0]), Tensor()};
  }
};

// y = self; y[.., index[i], ..] += src[.., i, ..]      dself = dy, dsrc = index_select(dy, dim, index)
struct IndexAdd : BuiltinOp<IndexAdd> {
  static constexpr const char* kName = "IndexAddBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a backward-only op in practice (index_select's gradient); no mapping written yet");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src) {
    dim = d;
    save(index_, index);
    return kern::index_add(self, d, index, src);
  }
  GradList backward(const GradList& g) {
    return {g[0], Tensor(), needs_input_grad(2) ? index_select(g[0], dim, index_.unpack()) : Tensor()};
  }
};

// y[i][j] = x[i][index[i][j]] (dim 1)      dx = scatter_add(zeros(x.shape), dim, index, dy)
struct Gather : BuiltinOp<Gather> {
  static constexpr const char* kName = "GatherBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (GatherElements)");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& x, int64_t d, const Tensor& index) {
    in_shape = x.sizes();
    dim = d;
    save(index_, index);
    return kern::gather(x, d, index);
  }
  GradList backward(const GradList& g) {
    return {scatter_add(zeros(in_shape, g[0].options()), dim, index_.unpack(), g[0]), Tensor()};
  }
};

// y = self; y[i][index[i][j]] += src[i][j] (dim 1)      dself = dy, dsrc = gather(dy, dim, index)
struct ScatterAdd : BuiltinOp<ScatterAdd> {
  static constexpr const char* kName = "ScatterAddBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (ScatterElements with reduction add)");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor index_;
  int64_t dim = 0;
  Tensor forward(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src) {
    dim = d;
    save(index_, index);
    return kern::scatter_add(self, d, index, src);
  }
  GradList backward(const GradList& g) {
    return {g[0], Tensor(), needs_input_grad(2) ? gather(g[0], dim, index_.unpack()) : Tensor()};
  }
};

}  // namespace gradlab::ops_detail
