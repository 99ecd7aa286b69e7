// In-place ops (names end in `_`). Every write bumps the storage's version counter and records
// where it was made, so a saved tensor modified before backward can be named.
//
// Without a graph (grad mode off, or nothing requires grad) the kernel writes directly.
// With one, the op is computed out of place from a clone of the old value, written back, and
// the tensor's history is rebased onto the new node (PyTorch's rebase_history).

#include <algorithm>
#include <vector>

#include "gradlab/ops/common.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

// ---- memory overlap (PyTorch's has_internal_overlap / get_overlap_status) --------------------
// A kernel writes out[i] = f(out[i], other[i]) one element per thread. That is only well defined
// when every element of out has its own memory, and other either is out exactly or shares none
// of its memory: x.narrow(0, 1, n-1).add_(x.narrow(0, 0, n-1)) reads elements that another
// thread is writing (a race on a GPU; the CPU gives yet another answer).

// Some element of t shares memory with another: a dim of size > 1 with stride 0 (expand).
bool has_internal_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  return false;
}

// t's elements tile one block of memory with no gap and no repeat (any dim order).
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

enum class Overlap { None, Full, Partial, TooHard };

// [begin, end) bytes of t's elements in its storage.
std::pair<int64_t, int64_t> byte_range(const Tensor& t) {
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  const int64_t item = static_cast<int64_t>(element_size(t.dtype()));
  return {t.storage_offset() * item, (last + 1) * item};
}

Overlap overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 || !a.is_same_storage(b)) return Overlap::None;
  const auto [ab, ae] = byte_range(a);
  const auto [bb, be] = byte_range(b);
  if (ae <= bb || be <= ab) return Overlap::None;
  if (ab == bb && ae == be && a.sizes() == b.sizes() && a.strides() == b.strides() && a.dtype() == b.dtype())
    return Overlap::Full;
  // Interleaved views (x[::2] and x[1::2]) share a range but no element: only dense ones are judged.
  if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return Overlap::TooHard;
  return Overlap::Partial;
}

void check_no_internal_overlap(const Tensor& self, const char* op) {
  if (!has_internal_overlap(self)) return;
  throw Error(error_message(op,
                            "unsupported operation: more than one element of the written-to tensor refers to a "
                            "single memory location",
                            "a tensor whose elements each have their own memory",
                            self.describe() + " with strides " + shape_str(self.strides()),
                            "clone() the tensor before performing the operation (an expand()ed tensor shares "
                            "memory between its elements)"));
}

// Refuses a partial overlap as PyTorch does; where it cannot tell (non-dense views of one block),
// `other` is cloned so the result is right on every device.
Tensor unaliased_operand(const char* op, const Tensor& self, const Tensor& other) {
  switch (overlap(self, other)) {
    case Overlap::None:
    case Overlap::Full:
      return other;
    case Overlap::TooHard:
      return other.clone();
    case Overlap::Partial:
      break;
  }
  throw Error(error_message(op,
                            "unsupported operation: some elements of the input tensor and the written-to tensor "
                            "refer to a single memory location",
                            "an input that is the written-to tensor itself or shares no memory with it",
                            "input " + other.describe() + " overlapping the written-to " + self.describe(),
                            "clone() the input before performing the operation"));
}

void check_writable(const Tensor& self, const char* op) {
  check_defined(op, self);
  check_no_internal_overlap(self, op);
  if (!GradMode::is_enabled()) return;
  const TensorImpl* impl = self.impl();
  if (self.is_leaf() && self.requires_grad()) {
    throw AutogradError(error_message(
        op, "a leaf Variable that requires grad is being used in an in-place operation",
        "a tensor that does not require grad, or grad mode off",
        "a leaf " + self.describe() + " with requires_grad=true",
        "wrap parameter updates in NoGradGuard (as optimizers do), or use an out-of-place op"));
  }
  if (impl->view_base && impl->view_base->autograd.grad_fn == nullptr && impl->view_base->autograd.requires_grad) {
    throw AutogradError(error_message(
        op, "a view of a leaf Variable that requires grad is being used in an in-place operation",
        "a view of a tensor that does not require grad", "a view " + self.describe() + " of a leaf that requires grad",
        "wrap the write in NoGradGuard, or clone() before writing"));
  }
}

// Runs an in-place op. `direct` writes into self without autograd; `functional(old)` computes the
// new value out of place (recorded) from the old value.
Tensor& apply_inplace(Tensor& self, const char* op, const Site& site, const std::vector<const Tensor*>& others,
                      const std::function<void()>& direct,
                      const std::function<Tensor(const Tensor&)>& functional) {
  check_writable(self, op);
  bool graph = GradMode::is_enabled() && self.requires_grad();
  for (const Tensor* o : others) graph = graph || (GradMode::is_enabled() && o->defined() && o->requires_grad());
  if (!graph) {
    direct();
    self.impl()->storage->bump_version(site);
    return self;
  }
  GRADLAB_CHECK(self.is_floating_point(), AutogradError, op, "cannot record an in-place op on a non-float tensor",
                "a float32/float64 tensor", to_string(self.dtype()));
  if (self.impl()->view_base) {
    throw AutogradError(error_message(
        op, "in-place modification of a view that takes part in autograd is not supported",
        "a tensor that is not a view", "a view " + self.describe(),
        "clone() the view first and write into the clone, or write under NoGradGuard"));
  }
  Tensor old = clone(self, site);
  Tensor result = functional(old);
  {
    kern::copy(self, result.dtype() == self.dtype() ? result : kern::cast(result, self.dtype()));
  }
  self.impl()->storage->bump_version(site);
  auto& meta = self.impl()->autograd;
  meta.grad_fn = result.grad_fn();
  meta.output_nr = result.output_nr();
  meta.requires_grad = result.requires_grad();
  return self;
}

Tensor value_like(const Tensor& self, const Scalar& v) { return wrap_scalar(v, self, "in-place op"); }

// new = v (broadcast), recorded as a function of old with zero gradient to it (PyTorch's
// FillBackward / CopyBackwards): where(true, v, old).
// NOTE: not old * 0 + v, which turns an inf or NaN in old into NaN.
Tensor overwrite(const Tensor& old, const Tensor& v, const Site& site) {
  return gradlab::where(full_like(old, true, kBool), v, old, site);
}

// Checks that `other` broadcasts to self's shape without changing it (in-place results keep the shape).
void check_inplace_shape(const char* op, const Tensor& self, const Tensor& other) {
  check_defined(op, other, "other");
  check_same_device(op, self, other);
  Shape s = broadcast_shapes(self.sizes(), other.sizes(), op);
  GRADLAB_CHECK(s == self.sizes(), ShapeError, op,
                "output with shape " + shape_str(self.sizes()) + " doesn't match the broadcast shape " + shape_str(s),
                shape_str(self.sizes()), shape_str(other.sizes()),
                "an in-place op cannot grow its tensor; use the out-of-place form");
  GRADLAB_CHECK(promote_types(self.dtype(), other.dtype()) == self.dtype() || self.is_floating_point(), DTypeError, op,
                "result type " + to_string(promote_types(self.dtype(), other.dtype())) +
                    " can't be cast to the desired output type " + to_string(self.dtype()),
                to_string(self.dtype()), to_string(other.dtype()));
}

Tensor& binary_inplace(Tensor& self, const char* op, kern::Binary kind, const Tensor& other_in, const Site& site,
                       Tensor (*fn)(const Tensor&, const Tensor&, Site)) {
  check_defined(op, self);
  check_inplace_shape(op, self, other_in);
  const Tensor other = unaliased_operand(op, self, other_in);
  return apply_inplace(
      self, op, site, {&other},
      [&] {
        Tensor b = other.dtype() == self.dtype() ? other : kern::cast(other, self.dtype());
        kern::binary_(kind, self, b.sizes() == self.sizes() ? b : make_view(b, self.sizes(), [&] {
          // broadcast strides without recording an op
          Strides st(self.dim(), 0);
          const int64_t lead = self.dim() - b.dim();
          for (int64_t i = 0; i < b.dim(); ++i) st[i + lead] = b.size(i) == 1 ? 0 : b.stride(i);
          return st;
        }(), b.storage_offset()));
      },
      [&](const Tensor& old) { return fn(old, other, site); });
}

}  // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha, Site site) {
  if (alpha.to_double() == 1.0) return binary_inplace(*this, "add_", kern::Binary::Add, o, site, &gradlab::add);
  Tensor scaled = gradlab::mul(o, alpha, site);
  return binary_inplace(*this, "add_", kern::Binary::Add, scaled, site, &gradlab::add);
}
Tensor& Tensor::add_(const Scalar& o, Site site) { return add_(value_like(*this, o), 1, site); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha, Site site) {
  if (alpha.to_double() == 1.0) return binary_inplace(*this, "sub_", kern::Binary::Sub, o, site, &gradlab::sub);
  Tensor scaled = gradlab::mul(o, alpha, site);
  return binary_inplace(*this, "sub_", kern::Binary::Sub, scaled, site, &gradlab::sub);
}
Tensor& Tensor::sub_(const Scalar& o, Site site) { return sub_(value_like(*this, o), 1, site); }
Tensor& Tensor::mul_(const Tensor& o, Site site) { return binary_inplace(*this, "mul_", kern::Binary::Mul, o, site, &gradlab::mul); }
Tensor& Tensor::mul_(const Scalar& o, Site site) { return mul_(value_like(*this, o), site); }
Tensor& Tensor::div_(const Tensor& o, Site site) {
  GRADLAB_CHECK(is_floating_point(), DTypeError, "div_", "true division of an integer tensor in place",
                "a floating point tensor", to_string(dtype()), "use out-of-place div (it gives float32)");
  return binary_inplace(*this, "div_", kern::Binary::Div, o, site, &gradlab::div);
}
Tensor& Tensor::div_(const Scalar& o, Site site) { return div_(value_like(*this, o), site); }

Tensor& Tensor::fill_(const Scalar& v, Site site) {
  return apply_inplace(*this, "fill_", site, {}, [&] { kern::fill(*this, v); },
                       // full_like alone would turn a non-leaf into a leaf without grad
                       [&](const Tensor& old) { return overwrite(old, full_like(old, v), site); });
}
Tensor& Tensor::zero_(Site site) { return fill_(0, site); }

Tensor& Tensor::copy_(const Tensor& src, Site site) {
  ops_detail::check_defined("copy_", *this);
  ops_detail::check_defined("copy_", src, "src");
  // NOTE: src may be on another device (as in PyTorch): that is how a CPU state_dict loads into
  // a CUDA model. kern::copy moves the elements; autograd sees src.to(device).
  Shape s = broadcast_shapes(sizes(), src.sizes(), "copy_");
  GRADLAB_CHECK(s == sizes(), ShapeError, "copy_", "src must broadcast to the destination's shape",
                shape_str(sizes()), shape_str(src.sizes()));
  return apply_inplace(
      *this, "copy_", site, {&src},
      [&] {
        Tensor b = src;
        {
          NoGradGuard ng;
          b = src.expand(sizes());
        }
        // src may overlap self (x.copy_(x.t())): go through a temporary then.
        if (b.is_same_storage(*this)) b = kern::contiguous(b.clone());
        kern::copy(*this, b);
      },
      [&](const Tensor& old) { return overwrite(old, src.to(device(), site).to(dtype(), site), site); });
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, Site site) {
  return apply_inplace(*this, "clamp_", site, {},
                       [&] { kern::copy(*this, gradlab::clamp(this->detach(), min, max)); },
                       [&](const Tensor& old) { return gradlab::clamp(old, min, max, site); });
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value, Site site) {
  ops_detail::check_defined("masked_fill_", mask, "mask");
  return apply_inplace(*this, "masked_fill_", site, {},
                       [&] { kern::copy(*this, gradlab::masked_fill(this->detach(), mask, value)); },
                       [&](const Tensor& old) { return gradlab::masked_fill(old, mask, value, site); });
}

Tensor& Tensor::index_put_(const Tensor& index, const Tensor& values, Site site) {
  ops_detail::check_defined("index_put_", *this);
  ops_detail::check_defined("index_put_", index, "index");
  ops_detail::check_defined("index_put_", values, "values");
  if (index.dtype() == kBool) {
    GRADLAB_CHECK(index.sizes() == sizes(), ShapeError, "index_put_", "a bool mask must have the tensor's shape",
                  shape_str(sizes()), shape_str(index.sizes()));
    return apply_inplace(*this, "index_put_", site, {&values},
                         [&] { kern::copy(*this, gradlab::where(index, values.detach(), this->detach())); },
                         [&](const Tensor& old) { return gradlab::where(index, values, old, site); });
  }
  GRADLAB_CHECK(index.dtype() == kInt64 && index.dim() == 1, ShapeError, "index_put_",
                "index must be a bool mask or a 1-D int64 list of rows", "bool mask or int64 [K]",
                index.describe());
  GRADLAB_CHECK(dim() >= 1, ShapeError, "index_put_", "cannot index rows of a 0-d tensor", "rank >= 1", "shape []");
  kern::check_indices(index, size(0), "index_put_");
  Shape rows = sizes();
  rows[0] = index.numel();
  // rows_mask[r] = r appears in index; new = where(rows_mask, index_add(0, values), old)
  auto compute = [&](const Tensor& old, const Tensor& vals, const Site& s) {
    Tensor v = vals.to(dtype()).expand(rows);
    Tensor placed = gradlab::index_add(zeros_like(old), 0, index, v, s);
    Tensor hit = gradlab::index_add(zeros({size(0)}, TensorOptions().dtype(kInt64).device(device())), 0, index, ones({index.numel()}, TensorOptions().dtype(kInt64).device(device()))) > 0;
    Shape hs(dim(), 1);
    hs[0] = size(0);
    return gradlab::where(hit.reshape(hs), placed, old, s);
  };
  return apply_inplace(*this, "index_put_", site, {&values},
                       [&] { kern::copy(*this, compute(this->detach(), values.detach(), site)); },
                       [&](const Tensor& old) { return compute(old, values, site); });
}

Tensor& Tensor::index_put_(const Tensor& index, const Scalar& value, Site site) {
  return index_put_(index, value_like(*this, value), site);
}

}  // namespace gradlab
