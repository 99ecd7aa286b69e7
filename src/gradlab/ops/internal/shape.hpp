#pragma once
// The shape op structs (internal). Most are views: the output shares the input's storage with
// other sizes/strides (make_view), and backward maps the gradient back to the input's shape.
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include <optional>

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// PyTorch's computeStride: strides that view `x` as `shape`, or none when a copy is needed
// (some new dim would span two non-mergeable chunks of memory).
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape);
/// zeros(shape) with g written into [start:end:step] along dim (recorded: SliceScatter).
Tensor slice_scatter(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step);

// y = x viewed (or copied) as another shape     dx = dy.reshape(x.shape)
template <class Tag>
struct Reshape : BuiltinOp<Reshape<Tag>> {
  static constexpr const char* kName = Tag::kName;
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Reshape", {c.in[0], g.ints(c.out_shape, "shape")});
  }
  Shape in_shape;
  Tensor forward(const Tensor& x, const Shape& shape, bool allow_copy) {
    in_shape = x.sizes();
    auto st = view_strides(x, shape);
    if (!st) {
      GRADLAB_CHECK(allow_copy, ShapeError, "view",
                    "view size is not compatible with input tensor's size and stride (at least one "
                    "dimension spans across two contiguous subspaces)",
                    "a contiguous input or compatible shape",
                    "input " + shape_str(x.sizes()) + " with strides " + shape_str(x.strides()) +
                        " viewed as " + shape_str(shape),
                    "use .reshape(...) instead (it copies when needed), or call .contiguous() first");
      return make_view(kern::contiguous(x), shape, contiguous_strides(shape), 0);
    }
    return make_view(x, shape, *st, x.storage_offset());
  }
  GradList backward(const GradList& g) { return {g[0].reshape(in_shape)}; }
};
struct ViewTag { static constexpr const char* kName = "ViewBackward0"; };
struct ReshapeTag { static constexpr const char* kName = "ReshapeAliasBackward0"; };
struct SqueezeTag { static constexpr const char* kName = "SqueezeBackward0"; };
struct UnsqueezeTag { static constexpr const char* kName = "UnsqueezeBackward0"; };

// y = x with dims permuted       dx = dy permuted back
struct Permute : BuiltinOp<Permute> {
  static constexpr const char* kName = "PermuteBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Transpose", {c.in[0]}, {{"perm", c.ints(0)}});
  }
  Dims perm;
  Tensor forward(const Tensor& x, const Dims& p) {
    perm = p;
    Shape s;
    Strides st;
    for (auto d : p) {
      s.push_back(x.sizes()[d]);
      st.push_back(x.strides()[d]);
    }
    return make_view(x, s, st, x.storage_offset());
  }
  GradList backward(const GradList& g) {
    Dims inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
    return {g[0].permute(inv)};
  }
};

// y = x[start:end:step] along dim (a view)     dx = zeros(x.shape) with dy written into that slice
struct Slice : BuiltinOp<Slice> {
  static constexpr const char* kName = "SliceBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (Slice takes starts / ends as inputs)");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  int64_t dim = 0, start = 0, end = 0, step = 1;
  Tensor forward(const Tensor& x, int64_t d, int64_t s, int64_t e, int64_t st) {
    in_shape = x.sizes();
    dim = d, start = s, end = e, step = st;
    Shape sizes = x.sizes();
    Strides strides = x.strides();
    sizes[d] = e > s ? (e - s + st - 1) / st : 0;
    strides[d] *= st;
    return make_view(x, sizes, strides, x.storage_offset() + s * x.strides()[d]);
  }
  GradList backward(const GradList& g) { return {slice_scatter(g[0], in_shape, dim, start, end, step)}; }
};

// y = zeros(shape); y[start:end:step] = g along dim      dg = dy[start:end:step]
struct SliceScatter : BuiltinOp<SliceScatter> {
  static constexpr const char* kName = "SliceScatterBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a backward-only op (slice's gradient)");
  static constexpr Fusion kFusion = Fusion::None;
  int64_t dim = 0, start = 0, end = 0, step = 1;
  Tensor forward(const Tensor& g, const Shape& shape, int64_t d, int64_t s, int64_t e, int64_t st) {
    dim = d, start = s, end = e, step = st;
    Tensor out = make_tensor(shape, g.dtype(), g.device());
    kern::fill(out, 0);
    Shape sizes = shape;
    Strides strides = out.strides();
    sizes[d] = g.sizes()[d];
    strides[d] *= st;
    kern::copy(make_view(out, sizes, strides, s * out.strides()[d]), g);
    return out;
  }
  GradList backward(const GradList& g) { return {g[0].slice(dim, start, end, step)}; }
};

// y = x[index] along dim (dim removed)     dx = zeros(x.shape) with dy at that index
struct Select : BuiltinOp<Select> {
  static constexpr const char* kName = "SelectBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (Gather with a scalar index)");
  static constexpr Fusion kFusion = Fusion::None;
  Shape in_shape;
  int64_t dim = 0, index = 0;
  Tensor forward(const Tensor& x, int64_t d, int64_t i) {
    in_shape = x.sizes();
    dim = d, index = i;
    Shape sizes = x.sizes();
    Strides strides = x.strides();
    const int64_t off = x.storage_offset() + i * strides[d];
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
    return make_view(x, sizes, strides, off);
  }
  GradList backward(const GradList& g) {
    return {slice_scatter(g[0].unsqueeze(dim), in_shape, dim, index, index + 1, 1)};
  }
};

// y = x broadcast to `shape` (stride 0, no copy)     dx = sum_to(dy, x.shape)
struct Expand : BuiltinOp<Expand> {
  static constexpr const char* kName = "ExpandBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::Broadcast;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Expand", {c.in[0], g.ints(c.out_shape, "shape")});
  }
  Shape in_shape;
  Tensor forward(const Tensor& x, const Shape& shape) {
    in_shape = x.sizes();
    const size_t lead = shape.size() - in_shape.size();
    Shape sizes(shape.size());
    Strides strides(shape.size(), 0);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i < lead) {
        sizes[i] = shape[i];
        continue;
      }
      const int64_t have = in_shape[i - lead];
      const int64_t want = shape[i] == -1 ? have : shape[i];
      if (have != want && have != 1) {
        throw ShapeError(error_message(
            "expand", "the expanded size of the tensor (" + std::to_string(want) +
                          ") must match the existing size (" + std::to_string(have) +
                          ") at non-singleton dimension " + std::to_string(i),
            "target sizes compatible with " + shape_str(in_shape), shape_str(shape),
            "only dims of size 1 can be expanded"));
      }
      sizes[i] = want;
      strides[i] = have == want ? x.strides()[i - lead] : 0;
    }
    return make_view(x, sizes, strides, x.storage_offset());
  }
  GradList backward(const GradList& g) { return {sum_to(g[0], in_shape)}; }
};

// y = copy of x (contiguous)     dx = dy
struct Clone : BuiltinOp<Clone> {
  static constexpr const char* kName = "CloneBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::same("Identity");
  static constexpr Fusion kFusion = Fusion::None;
  Tensor forward(const Tensor& x) {
    Tensor y = make_tensor(x.sizes(), x.dtype(), x.device());
    kern::copy(y, x);
    return y;
  }
  GradList backward(const GradList& g) { return {g[0]}; }
};

// y = x converted to another dtype     dx = dy converted back
struct ToCopy : BuiltinOp<ToCopy> {
  static constexpr const char* kName = "ToCopyBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::custom();
  static constexpr Fusion kFusion = Fusion::None;
  static std::string to_onnx(OnnxGraph& g, const OnnxCall& c) {
    return g.op("Cast", {c.in[0]}, {{"to", g.elem_type(c.dtype)}});
  }
  ScalarType in_dtype = kFloat32;
  Tensor forward(const Tensor& x, ScalarType dt) {
    in_dtype = x.dtype();
    return kern::cast(x, dt);
  }
  GradList backward(const GradList& g) { return {g[0].to(in_dtype)}; }
};

// y = x copied to another device        dx = dy copied back to x's device
struct ToDevice : BuiltinOp<ToDevice> {
  static constexpr const char* kName = "ToCopyBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::None;
  static constexpr Onnx kOnnx = Onnx::none("a device copy: export the model on one device");
  static constexpr Fusion kFusion = Fusion::None;
  Device from_;
  Tensor forward(const Tensor& x, Device to) {
    from_ = x.device();
    Tensor y = make_tensor(x.sizes(), x.dtype(), to);
    kern::copy(y, x);
    return y;
  }
  GradList backward(const GradList& dy) { return {dy[0].to(from_)}; }
};

// y = [x0, x1, ...] joined along dim     dxi = the matching slice of dy
struct Cat : BuiltinOp<Cat> {
  static constexpr const char* kName = "CatBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Promote;
  static constexpr Onnx kOnnx = Onnx::none("no ONNX mapping written yet (Concat)");
  static constexpr Fusion kFusion = Fusion::None;
  int64_t dim = 0;
  std::vector<int64_t> sizes;
  Tensor forward(const TensorList& xs, int64_t d, const Shape& out_shape, ScalarType dt) {
    dim = d;
    Tensor out = make_tensor(out_shape, dt, xs.front().device());
    int64_t at = 0;
    for (const Tensor& x : xs) {
      sizes.push_back(x.sizes()[d]);
      if (x.numel() == 0) continue;
      Shape s = out_shape;
      s[d] = x.sizes()[d];
      kern::copy(make_view(out, s, out.strides(), at * out.strides()[d]), x);
      at += x.sizes()[d];
    }
    return out;
  }
  GradList backward(const GradList& g) {
    GradList r;
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      r.push_back(needs_input_grad(i) ? g[0].narrow(dim, at, sizes[i]) : Tensor());
      at += sizes[i];
    }
    return r;
  }
};

}  // namespace gradlab::ops_detail
