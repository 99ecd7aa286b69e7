// Shape ops. Most are views: the output shares the input's storage with other sizes/strides
// (make_view), and backward maps the gradient back to the input's shape.

#include <algorithm>
#include <numeric>

#include "gradlab/ops/internal/shape.hpp"

namespace gradlab {
using namespace ops_detail;

namespace ops_detail {

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

Tensor slice_scatter(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return record<SliceScatter>(Site::unknown(), g, shape, dim, start, end, step);
}

}  // namespace ops_detail

namespace {

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

}  // namespace

namespace ops_detail {
Tensor cast_to(const Tensor& x, ScalarType dtype, const Site& site) {
  if (x.dtype() == dtype) return x;
  return record<ToCopy>(site, x, dtype);
}

namespace {
// Autocast applies to floating tensors other than float64, outside backward (where the ops
// already see the dtypes forward chose), when it is on for the tensor's device type.
bool autocast_applies(const Tensor& x) {
  return x.defined() && x.is_floating_point() && x.dtype() != kFloat64 &&
         AutocastMode::is_enabled(x.device().type) && !autograd::detail::running_backward();
}
}  // namespace

Tensor autocast_lower(const Tensor& x, const Site& site) {
  if (!autocast_applies(x)) return x;
  return cast_to(x, AutocastMode::dtype(x.device().type), site);
}
Tensor autocast_float32(const Tensor& x, const Site& site) {
  if (!autocast_applies(x)) return x;
  return cast_to(x, kFloat32, site);
}
}  // namespace ops_detail

namespace autograd::detail {
bool autocast_active() {
  return (AutocastMode::is_enabled(DeviceType::CPU) || AutocastMode::is_enabled(DeviceType::CUDA)) &&
         !running_backward();
}
Tensor autocast_as(Amp amp, Widest widest, const Tensor& x, const Site& site) {
  switch (amp) {
    case Amp::Lower: return ops_detail::autocast_lower(x, site);
    case Amp::Float32: return ops_detail::autocast_float32(x, site);
    case Amp::Promote:
      if (!x.defined() || !x.is_floating_point() || !widest || x.dtype() == *widest) return x;
      return ops_detail::cast_to(x, *widest, site);
    case Amp::None: break;
  }
  return x;
}
}  // namespace autograd::detail

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

// y = x tiled: y[r*s + j] = x[j] per dim (s = x's size there). As x -> [1, s0, 1, s1, ...] ->
// expand [r0, s0, r1, s1, ...] -> reshape [r0*s0, r1*s1, ...] (the one copy), so the backward
// is expand's: dx sums dy over the copies.
Tensor repeat(const Tensor& x, const Shape& repeats, Site site) {
  check_defined("repeat", x);
  GRADLAB_CHECK(static_cast<int64_t>(repeats.size()) >= x.dim(), ShapeError, "repeat",
                "number of repeat dims can not be smaller than number of dimensions of tensor",
                "at least " + std::to_string(x.dim()) + " repeat counts", shape_str(repeats),
                "give one count per dim (1 keeps a dim)");
  for (int64_t r : repeats)
    GRADLAB_CHECK(r >= 0, ValueError, "repeat", "repeat counts must be >= 0", "counts >= 0", shape_str(repeats));
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape paired, expanded, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t s = i < lead ? 1 : x.size(static_cast<int64_t>(i - lead));
    paired.insert(paired.end(), {1, s});
    expanded.insert(expanded.end(), {repeats[i], s});
    out.push_back(repeats[i] * s);
  }
  return reshape(expand(reshape(x, paired, site), expanded, site), out, site);
}

TensorList split(const Tensor& x, int64_t split_size, int64_t dim, Site site) {
  check_defined("split", x);
  GRADLAB_CHECK(x.dim() > 0, ShapeError, "split", "cannot split a 0-d tensor", "a tensor with dims", "shape []");
  const int64_t d = wrap_dim(dim, x.dim(), "split"), n = x.size(d);
  GRADLAB_CHECK(split_size > 0 || n == 0, ValueError, "split", "split_size must be positive", "split_size > 0",
                std::to_string(split_size));
  if (n == 0) return {x};
  TensorList parts;
  for (int64_t start = 0; start < n; start += split_size)
    parts.push_back(narrow(x, d, start, std::min(split_size, n - start), site));
  return parts;
}

TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim, Site site) {
  check_defined("chunk", x);
  GRADLAB_CHECK(chunks > 0, ValueError, "chunk", "chunk expects `chunks` to be greater than 0", "chunks > 0",
                std::to_string(chunks));
  GRADLAB_CHECK(x.dim() > 0, ShapeError, "chunk", "cannot chunk a 0-d tensor", "a tensor with dims", "shape []");
  const int64_t n = x.size(wrap_dim(dim, x.dim(), "chunk"));
  return split(x, std::max<int64_t>((n + chunks - 1) / chunks, 1), dim, site);
}

}  // namespace gradlab
