// Shape ops. Most are views: the output shares the input's storage with other sizes/strides
// (make_view), and backward maps the gradient back to the input's shape.

#include <algorithm>
#include <numeric>

#include "gradlab/ops/common.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

// PyTorch's computeStride: strides that view `x` as `shape`, or none when a copy is needed
// (some new dim would span two non-mergeable chunks of memory).
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape) {
  if (x.is_contiguous() || x.numel() == 0) return contiguous_strides(shape);
  const Shape& os = x.sizes();
  const Strides& ost = x.strides();
  Strides ns(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base = ost.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(os.size()) - 1; d >= 0; --d) {
    tensor_numel *= os[d];
    if (d == 0 || (os[d - 1] != 1 && ost[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        ns[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = ost[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

// Resolves one -1 and checks the element count.
Shape infer_shape(const char* op, const Tensor& x, const Shape& shape) {
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      GRADLAB_CHECK(infer < 0, ShapeError, op, "only one dimension can be inferred (-1)",
                    "at most one -1", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      GRADLAB_CHECK(s[i] >= 0, ShapeError, op, "invalid negative size", "sizes >= 0 or one -1", shape_str(shape));
      known *= s[i];
    }
  }
  if (infer >= 0) {
    GRADLAB_CHECK(known != 0 && x.numel() % known == 0, ShapeError, op,
                  "shape is invalid for input of size " + std::to_string(x.numel()),
                  "sizes whose product divides " + std::to_string(x.numel()), shape_str(shape));
    s[infer] = x.numel() / known;
  }
  GRADLAB_CHECK(numel_of(s) == x.numel(), ShapeError, op,
                "shape " + shape_str(shape) + " is invalid for input of size " + std::to_string(x.numel()),
                std::to_string(x.numel()) + " elements", std::to_string(numel_of(s)) + " elements (" +
                shape_str(s) + " from input " + shape_str(x.sizes()) + ")",
                "the product of the new sizes must equal the number of elements; use -1 for one size");
  return s;
}

// y = x viewed (or copied) as another shape     dx = dy.reshape(x.shape)
template <class Tag>
struct Reshape : Op<Reshape<Tag>> {
  static constexpr const char* kName = Tag::kName;
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
struct Permute : Op<Permute> {
  static constexpr const char* kName = "PermuteBackward0";
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

Tensor slice_scatter(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step);

// y = x[start:end:step] along dim (a view)     dx = zeros(x.shape) with dy written into that slice
struct Slice : Op<Slice> {
  static constexpr const char* kName = "SliceBackward0";
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
struct SliceScatter : Op<SliceScatter> {
  static constexpr const char* kName = "SliceScatterBackward0";
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

Tensor slice_scatter(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return record<SliceScatter>(Site::unknown(), g, shape, dim, start, end, step);
}

// y = x[index] along dim (dim removed)     dx = zeros(x.shape) with dy at that index
struct Select : Op<Select> {
  static constexpr const char* kName = "SelectBackward0";
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
struct Expand : Op<Expand> {
  static constexpr const char* kName = "ExpandBackward0";
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
struct Clone : Op<Clone> {
  static constexpr const char* kName = "CloneBackward0";
  Tensor forward(const Tensor& x) {
    Tensor y = make_tensor(x.sizes(), x.dtype(), x.device());
    kern::copy(y, x);
    return y;
  }
  GradList backward(const GradList& g) { return {g[0]}; }
};

// y = x converted to another dtype     dx = dy converted back
struct ToCopy : Op<ToCopy> {
  static constexpr const char* kName = "ToCopyBackward0";
  ScalarType in_dtype = kFloat32;
  Tensor forward(const Tensor& x, ScalarType dt) {
    in_dtype = x.dtype();
    return kern::cast(x, dt);
  }
  GradList backward(const GradList& g) { return {g[0].to(in_dtype)}; }
};

// y = [x0, x1, ...] joined along dim     dxi = the matching slice of dy
struct Cat : Op<Cat> {
  static constexpr const char* kName = "CatBackward0";
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

}  // namespace

namespace ops_detail {
Tensor cast_to(const Tensor& x, ScalarType dtype, const Site& site) {
  if (x.dtype() == dtype) return x;
  return record<ToCopy>(site, x, dtype);
}
}  // namespace ops_detail

Tensor reshape(const Tensor& x, const Shape& shape, Site site) {
  check_defined("reshape", x);
  Shape s = infer_shape("reshape", x, shape);
  if (s == x.sizes()) return x;
  return record<Reshape<ReshapeTag>>(site, x, s, true);
}
Tensor view(const Tensor& x, const Shape& shape, Site site) {
  check_defined("view", x);
  Shape s = infer_shape("view", x, shape);
  return record<Reshape<ViewTag>>(site, x, s, false);
}
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim, Site site) {
  check_defined("flatten", x);
  if (x.dim() == 0) return reshape(x, {1}, site);
  const int64_t s = wrap_dim(start_dim, x.dim(), "flatten"), e = wrap_dim(end_dim, x.dim(), "flatten");
  GRADLAB_CHECK(s <= e, ShapeError, "flatten", "start_dim cannot come after end_dim", "start_dim <= end_dim",
                std::to_string(s) + " > " + std::to_string(e));
  Shape shape(x.sizes().begin(), x.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.size(d);
  shape.push_back(n);
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return reshape(x, shape, site);
}
Tensor permute(const Tensor& x, const Dims& dims, Site site) {
  check_defined("permute", x);
  GRADLAB_CHECK(static_cast<int64_t>(dims.size()) == x.dim(), ShapeError, "permute",
                "number of dims don't match in permute", std::to_string(x.dim()) + " dims",
                std::to_string(dims.size()) + " dims (" + shape_str(dims) + ")");
  Dims p;
  std::vector<bool> seen(dims.size(), false);
  for (auto d : dims) {
    int64_t w = wrap_dim(d, x.dim(), "permute");
    GRADLAB_CHECK(!seen[w], ShapeError, "permute", "repeated dim in permute", "each dim once", shape_str(dims));
    seen[w] = true;
    p.push_back(w);
  }
  return record<Permute>(site, x, p);
}
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1, Site site) {
  check_defined("transpose", x);
  if (x.dim() == 0) return x;
  Dims p(x.dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_dim(d0, x.dim(), "transpose")], p[wrap_dim(d1, x.dim(), "transpose")]);
  return permute(x, p, site);
}
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step, Site site) {
  check_defined("slice", x);
  GRADLAB_CHECK(x.dim() > 0, ShapeError, "slice", "cannot slice a 0-d tensor", "a tensor with dims", "shape []");
  GRADLAB_CHECK(step > 0, ValueError, "slice", "slice step must be positive", "step > 0", std::to_string(step));
  const int64_t d = wrap_dim(dim, x.dim(), "slice"), n = x.size(d);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return record<Slice>(site, x, d, start, end, step);
}
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Site site) {
  check_defined("narrow", x);
  const int64_t d = wrap_dim(dim, x.dim(), "narrow"), n = x.size(d);
  if (start < 0) start += n;
  GRADLAB_CHECK(start >= 0 && length >= 0 && start + length <= n, ShapeError, "narrow",
                "start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                    ") exceeds dimension size (" + std::to_string(n) + ")",
                "start + length <= " + std::to_string(n), std::to_string(start + length));
  return slice(x, d, start, start + length, 1, site);
}
Tensor select(const Tensor& x, int64_t dim, int64_t index, Site site) {
  check_defined("select", x);
  GRADLAB_CHECK(x.dim() > 0, ShapeError, "select", "cannot select from a 0-d tensor", "a tensor with dims", "shape []");
  const int64_t d = wrap_dim(dim, x.dim(), "select"), n = x.size(d);
  GRADLAB_CHECK(index >= -n && index < n, ShapeError, "select",
                "index " + std::to_string(index) + " is out of bounds for dimension " + std::to_string(d) +
                    " with size " + std::to_string(n),
                "an index in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "]", std::to_string(index));
  return record<Select>(site, x, d, index < 0 ? index + n : index);
}
Tensor expand(const Tensor& x, const Shape& shape, Site site) {
  check_defined("expand", x);
  GRADLAB_CHECK(shape.size() >= x.sizes().size(), ShapeError, "expand",
                "the number of sizes provided (" + std::to_string(shape.size()) +
                    ") must be greater or equal to the number of dimensions in the tensor (" +
                    std::to_string(x.dim()) + ")",
                "at least " + std::to_string(x.dim()) + " sizes", shape_str(shape));
  if (shape == x.sizes()) return x;
  return record<Expand>(site, x, shape);
}
Tensor squeeze(const Tensor& x, std::optional<int64_t> dim, Site site) {
  check_defined("squeeze", x);
  Shape s;
  if (dim) {
    if (x.dim() == 0) return x;
    const int64_t d = wrap_dim(*dim, x.dim(), "squeeze");
    s = x.sizes();
    if (s[d] != 1) return x;
    s.erase(s.begin() + d);
  } else {
    for (auto v : x.sizes())
      if (v != 1) s.push_back(v);
  }
  if (s == x.sizes()) return x;
  return record<Reshape<SqueezeTag>>(site, x, s, false);
}
Tensor unsqueeze(const Tensor& x, int64_t dim, Site site) {
  check_defined("unsqueeze", x);
  const int64_t d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape s = x.sizes();
  s.insert(s.begin() + d, 1);
  return record<Reshape<UnsqueezeTag>>(site, x, s, false);
}
Tensor sum_to(const Tensor& x, const Shape& shape, Site site) {
  check_defined("sum_to", x);
  if (x.sizes() == shape) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  GRADLAB_CHECK(lead >= 0, ShapeError, "sum_to", "target has more dims than the input",
                "at most " + std::to_string(x.dim()) + " dims", shape_str(shape));
  Dims dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) dims.push_back(d);
    else if (shape[d - lead] == 1 && x.size(d) != 1) dims.push_back(d);
    else
      GRADLAB_CHECK(shape[d - lead] == x.size(d), ShapeError, "sum_to", "shape is not a broadcast source of the input",
                    shape_str(shape), shape_str(x.sizes()));
  }
  Tensor r = dims.empty() ? x : sum(x, dims, /*keepdim=*/true, site);
  return reshape(r, shape, site);
}
Tensor clone(const Tensor& x, Site site) {
  check_defined("clone", x);
  return record<Clone>(site, x);
}
Tensor contiguous(const Tensor& x, Site site) {
  check_defined("contiguous", x);
  return x.is_contiguous() ? x : clone(x, site);
}
Tensor cat(const TensorList& xs, int64_t dim, Site site) {
  GRADLAB_CHECK(!xs.empty(), ValueError, "cat", "expected a non-empty list of tensors", "at least one tensor", "0");
  // Legacy rule kept by PyTorch: 1-D empty tensors are skipped.
  const Tensor* ref = nullptr;
  for (const auto& t : xs) {
    check_defined("cat", t);
    if (!(t.dim() == 1 && t.numel() == 0)) { ref = &t; break; }
  }
  if (!ref) return xs[0].clone(site);
  const int64_t d = wrap_dim(dim, ref->dim(), "cat");
  ScalarType dt = ref->dtype();
  Shape out = ref->sizes();
  out[d] = 0;
  TensorList parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    check_same_device("cat", *ref, t);
    GRADLAB_CHECK(t.dim() == ref->dim(), ShapeError, "cat", "tensors must have the same number of dimensions",
                  std::to_string(ref->dim()) + " dims", std::to_string(t.dim()) + " dims for tensor " + std::to_string(i));
    for (int64_t k = 0; k < t.dim(); ++k)
      if (k != d && t.size(k) != ref->size(k))
        throw ShapeError(error_message("cat", "sizes of tensors must match except in dimension " + std::to_string(d),
                                       "size " + std::to_string(ref->size(k)) + " in dimension " + std::to_string(k),
                                       "size " + std::to_string(t.size(k)) + " for tensor " + std::to_string(i) +
                                           " (shape " + shape_str(t.sizes()) + ")"));
    out[d] += t.size(d);
    dt = promote_types(dt, t.dtype());
    parts.push_back(t);
  }
  for (auto& t : parts) t = cast_to(t, dt, site);
  return record<Cat>(site, parts, d, out, dt);
}
Tensor stack(const TensorList& xs, int64_t dim, Site site) {
  GRADLAB_CHECK(!xs.empty(), ValueError, "stack", "expected a non-empty list of tensors", "at least one tensor", "0");
  TensorList u;
  for (size_t i = 0; i < xs.size(); ++i) {
    check_defined("stack", xs[i]);
    GRADLAB_CHECK(xs[i].sizes() == xs[0].sizes(), ShapeError, "stack", "stack expects each tensor to be equal size",
                  shape_str(xs[0].sizes()), shape_str(xs[i].sizes()) + " at entry " + std::to_string(i));
    u.push_back(unsqueeze(xs[i], wrap_dim(dim, xs[0].dim() + 1, "stack"), site));
  }
  return cat(u, dim, site);
}

}  // namespace gradlab
