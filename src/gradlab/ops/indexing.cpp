// Tensor::index / index_put_ with a list of TensorIndex (LibTorch's torch::indexing), composed of
// the view ops (select, slice, unsqueeze) and index_select / index_put_, so autograd needs
// nothing new: x.index({Slice(), 0}) records SliceBackward0 then SelectBackward0, as LibTorch does.

#include <limits>

#include "gradlab/core/indexing.hpp"
#include "gradlab/ops/internal/index.hpp"

namespace gradlab {
using namespace ops_detail;
using indexing::TensorIndex;

namespace {

using Kind = TensorIndex::Kind;

// The basic entries applied as views; the one tensor entry (if any) is left for the caller, with
// the dim of `view` it indexes.
struct Basic {
  Tensor view;
  Tensor tensor;
  int64_t tensor_dim = -1;
};

std::string entry_list(const std::vector<TensorIndex>& idx) {
  std::string r;
  for (const auto& e : idx) {
    if (!r.empty()) r += ", ";
    switch (e.kind()) {
      case Kind::None: r += "None"; break;
      case Kind::Ellipsis: r += "..."; break;
      case Kind::Integer: r += std::to_string(e.integer()); break;
      case Kind::Slice: r += "Slice"; break;
      case Kind::Tensor: r += "tensor " + e.tensor().describe(); break;
    }
  }
  return "{" + r + "}";
}

Basic apply_basic(const Tensor& x, const std::vector<TensorIndex>& idx, const char* op, const Site& site) {
  check_defined(op, x);
  int64_t consumed = 0, ellipses = 0, tensors = 0;
  for (const auto& e : idx) {
    if (e.kind() == Kind::Integer || e.kind() == Kind::Slice) ++consumed;
    if (e.kind() == Kind::Ellipsis) ++ellipses;
    if (e.kind() == Kind::Tensor) {
      check_defined(op, e.tensor(), "index tensor");
      ++tensors;
      consumed += e.tensor().dtype() == kBool ? e.tensor().dim() : 1;  // a 0-d mask adds a dim
    }
  }
  GRADLAB_CHECK(ellipses <= 1, ShapeError, op, "an index can only have a single ellipsis ('...')",
                "at most one Ellipsis", entry_list(idx));
  GRADLAB_CHECK(tensors <= 1, ShapeError, op, "several tensor indices in one index list are not supported",
                "at most one tensor entry", entry_list(idx),
                "index with one tensor at a time: x.index({a}).index({Slice(), b})");
  GRADLAB_CHECK(consumed <= x.dim(), ShapeError, op,
                "too many indices for tensor of dimension " + std::to_string(x.dim()),
                "at most " + std::to_string(x.dim()) + " integer / Slice / tensor entries",
                entry_list(idx) + " for a tensor " + x.describe());
  Basic b{x, {}, -1};
  int64_t d = 0;  // the dim of b.view the next entry indexes
  for (const auto& e : idx) {
    switch (e.kind()) {
      case Kind::None:
        b.view = gradlab::unsqueeze(b.view, d++, site);
        break;
      case Kind::Ellipsis:
        d += x.dim() - consumed;
        break;
      case Kind::Integer: {
        const int64_t n = b.view.size(d), i = e.integer();
        GRADLAB_CHECK(i >= -n && i < n, ShapeError, op,
                      "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) +
                          " with size " + std::to_string(n),
                      "an index in [" + std::to_string(-n) + ", " + std::to_string(n) + ")", std::to_string(i));
        b.view = gradlab::select(b.view, d, i, site);
        break;
      }
      case Kind::Slice: {
        const auto& s = e.slice();
        GRADLAB_CHECK(s.step() > 0, ValueError, op, "slice step must be positive", "step > 0",
                      std::to_string(s.step()), "flip() is not offered; reverse with index_select");
        b.view = gradlab::slice(b.view, d++, s.start().value_or(0),
                       s.stop().value_or(std::numeric_limits<int64_t>::max()), s.step(), site);
        break;
      }
      case Kind::Tensor:
        b.tensor = e.tensor();
        b.tensor_dim = d;
        d += e.tensor().dtype() == kBool ? e.tensor().dim() : 1;
        break;
    }
  }
  return b;
}

// The flat positions where a bool mask is true, as an int64 list on the mask's device.
Tensor true_positions(const Tensor& mask) {
  const std::vector<bool> m = mask.cpu().to_vector<bool>();
  std::vector<int64_t> pos;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i]) pos.push_back(static_cast<int64_t>(i));
  return from_vector(pos, {static_cast<int64_t>(pos.size())}, TensorOptions().device(mask.device()));
}

void check_mask_shape(const char* op, const Tensor& view, int64_t d, const Tensor& mask) {
  const Shape& s = view.sizes();
  const Shape covered(s.begin() + d, s.begin() + d + mask.dim());
  GRADLAB_CHECK(covered == mask.sizes(), ShapeError, op,
                "the shape of the mask " + shape_str(mask.sizes()) + " does not match the shape of the indexed tensor " +
                    shape_str(covered),
                shape_str(covered), shape_str(mask.sizes()));
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices, Site site) const {
  Basic b = apply_basic(*this, indices, "index", site);
  if (!b.tensor.defined()) return b.view;
  // NOTE: an index tensor may live on the CPU for a CUDA tensor, as LibTorch allows.
  const Tensor t = b.tensor.to(b.view.device(), site);
  const int64_t d = b.tensor_dim;
  if (t.dtype() == kBool) {
    // y[.., mask, ..]: the masked dims become one dim of the true positions (row-major order).
    const Tensor mask = t.dim() == 0 ? t.reshape({1}) : t;
    Tensor v = t.dim() == 0 ? gradlab::unsqueeze(b.view, d, site) : b.view;
    check_mask_shape("index", v, d, mask);
    if (mask.dim() > 1) v = gradlab::flatten(v, d, d + mask.dim() - 1, site);
    return gradlab::index_select(v, d, true_positions(mask), site);
  }
  GRADLAB_CHECK(t.dtype() == kInt64, DTypeError, "index",
                "tensors used as indices must be long or bool tensors", "int64 or bool",
                to_string(t.dtype()));
  // y[.., idx, ..]: dim d is replaced by idx's shape.
  Tensor picked = gradlab::index_select(b.view, d, t.reshape({t.numel()}).to(kInt64), site);
  Shape out = b.view.sizes();
  out.erase(out.begin() + d);
  out.insert(out.begin() + d, t.sizes().begin(), t.sizes().end());
  return gradlab::reshape(picked, out, site);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices, Site site) const {
  return index(std::vector<TensorIndex>(indices), site);
}

const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& values, Site site) const {
  const std::vector<TensorIndex> idx(indices);
  ops_detail::check_defined("index_put_", values, "values");
  Basic b = apply_basic(*this, idx, "index_put_", site);
  if (!b.tensor.defined()) {
    b.view.copy_(values, site);  // a view: the write reaches this tensor (and its history)
    return *this;
  }
  const Tensor t = b.tensor.to(b.view.device(), site);
  const int64_t d = b.tensor_dim;
  if (t.dtype() == kBool) {
    GRADLAB_CHECK(d == 0 && t.dim() == b.view.dim(), ShapeError, "index_put_",
                  "a bool mask is supported only when it covers every dim of the indexed tensor",
                  "a mask of shape " + shape_str(b.view.sizes()), entry_list(idx),
                  "use where(mask, values, x), or index with the mask alone");
    b.view.index_put_(t, values.expand(b.view.sizes(), site), false, site);
    return *this;
  }
  GRADLAB_CHECK(t.dtype() == kInt64 && t.dim() == 1, ShapeError, "index_put_",
                "a tensor entry of index_put_ must be a 1-D int64 list", "int64 [K]", t.describe(),
                "flatten the index, or write the rows one index_put_ at a time");
  // Move dim d to the front (a view), write rows there: values broadcast to the selected shape
  // in this tensor's dim order, then move the same way.
  Shape selected = b.view.sizes();
  selected[static_cast<size_t>(d)] = t.numel();
  Tensor v = values.expand(selected, site);
  Tensor target = b.view;
  if (d != 0) {
    target = gradlab::transpose(target, 0, d, site);
    v = gradlab::transpose(v, 0, d, site);
  }
  target.index_put_(t, v, false, site);
  return *this;
}

const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value, Site site) const {
  ops_detail::check_defined("index_put_", *this);
  return index_put_(indices, wrap_scalar(value, *this, "index_put_"), site);
}

}  // namespace gradlab
