// In-place ops (names end in `_`). Every write bumps the storage's version counter and records
// where it was made, so a saved tensor modified before backward can be named.
//
// Without a graph (grad mode off, or nothing requires grad) the kernel writes directly.
// With one, the op is computed out of place from a clone of the old value, written back, and
// the tensor's history is rebased onto the new node (PyTorch's rebase_history). A write into a
// view rebases its base's history through a CopySlices node (as PyTorch does) and the view
// becomes a view of the new base (AsStridedBackward0).

#include <algorithm>
#include <climits>
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

// ---- in-place on a view under autograd (PyTorch's CopySlices + regenerated view) -------------
// For each element of `view` (row-major), its row-major position in `base`. Both index one
// storage; base's elements have distinct storage positions (an expanded tensor is itself a view).
Tensor positions_in_base(const Tensor& base, const Tensor& view) {
  const int64_t nb = base.numel();
  std::vector<int64_t> where_in_storage(static_cast<size_t>(nb));  // storage index of base element i
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rest = i, s = base.storage_offset();
    for (int64_t d = base.dim() - 1; d >= 0; --d) {
      s += (rest % base.size(d)) * base.stride(d);
      rest /= base.size(d);
    }
    where_in_storage[static_cast<size_t>(i)] = s;
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  std::vector<int64_t> base_of(nb == 0 ? 0 : static_cast<size_t>(hi - lo + 1), -1);
  for (int64_t i = 0; i < nb; ++i) base_of[static_cast<size_t>(where_in_storage[static_cast<size_t>(i)] - lo)] = i;
  std::vector<int64_t> pos(static_cast<size_t>(view.numel()));
  for (int64_t j = 0; j < view.numel(); ++j) {
    int64_t rest = j, s = view.storage_offset();
    for (int64_t d = view.dim() - 1; d >= 0; --d) {
      s += (rest % view.size(d)) * view.stride(d);
      rest /= view.size(d);
    }
    const int64_t i = s < lo || s > hi ? -1 : base_of[static_cast<size_t>(s - lo)];
    GRADLAB_CHECK(i >= 0, AutogradError, "in-place on a view", "the view reaches memory outside its base",
                  "a view inside its base's elements", view.describe());
    pos[static_cast<size_t>(j)] = i;
  }
  return from_vector(pos, {view.numel()}, TensorOptions().device(base.device()));
}

// new_base = old_base with the view's elements replaced by `result`
//   d old_base = g with the view's elements zeroed        d result = g at the view's elements
struct CopySlices : autograd::Node {
  std::string name() const override { return "CopySlices"; }
  Tensor pos;       // int64 [view numel]: base positions (row-major) of the view's elements
  Tensor in_view;   // bool, base's shape: the view's elements
  Shape view_shape;
  GradList apply(GradList&& g) override {
    return {needs_input_grad(0) ? g[0].masked_fill(in_view, 0.0) : Tensor(),
            needs_input_grad(1) ? g[0].reshape({-1}).index_select(0, pos).reshape(view_shape) : Tensor()};
  }
};

// The view itself after the write: view = base at `pos`      d base = g scattered to `pos`
struct AsStridedBackward : autograd::Node {
  std::string name() const override { return "AsStridedBackward0"; }
  Tensor pos;
  Shape base_shape;
  GradList apply(GradList&& g) override {
    Tensor flat = zeros({numel_of(base_shape)}, g[0].options());
    return {gradlab::index_add(flat, 0, pos, g[0].reshape({-1})).reshape(base_shape)};
  }
};

// After `view` was overwritten with `result` (recorded from the view's old value): the base's
// history becomes CopySlices(old base history, result), the view's a view of the new base.
// The storage version counter is shared (one Storage), so saved copies of the base or of any
// view see the write.
void rebase_view_history(const Tensor& view_in, const Tensor& result, const Site& site) {
  Tensor view = view_in;  // another handle to the same TensorImpl, whose history is rebased
  Tensor base(view.impl()->view_base);
  auto cs = std::make_shared<CopySlices>();
  cs->site = site;
  cs->pos = positions_in_base(base, view);
  cs->view_shape = view.sizes();
  {
    NoGradGuard ng;
    Tensor mask = zeros({base.numel()}, TensorOptions().dtype(kInt64).device(base.device()));
    cs->in_view = gradlab::index_add(mask, 0, cs->pos, ones({view.numel()}, mask.options()))
                      .gt(0)
                      .reshape(base.sizes());
  }
  // connect reads base's old history for the edge, then makes cs its grad_fn.
  std::vector<const Tensor*> cs_in{&base, &result};
  std::vector<Tensor*> cs_out{&base};
  autograd::connect(cs, cs_in, cs_out);
  ++base.impl()->history_version;
  auto as = std::make_shared<AsStridedBackward>();
  as->site = site;
  as->pos = cs->pos;
  as->base_shape = base.sizes();
  view.impl()->base_history_version = base.impl()->history_version;  // this view is current
  std::vector<const Tensor*> as_in{&base};
  std::vector<Tensor*> as_out{&view};
  autograd::connect(as, as_in, as_out);
}

}  // namespace

// Runs an in-place op (declared in ops/common.hpp). `direct` writes into self without autograd;
// `functional(old)` computes the new value out of place (recorded) from the old value.
const Tensor& ops_detail::apply_inplace(const Tensor& self, const char* op, const Site& site, const std::vector<const Tensor*>& others,
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
  Tensor old = clone(self, site);
  Tensor result = functional(old);
  {
    kern::copy(self, result.dtype() == self.dtype() ? result : kern::cast(result, self.dtype()));
  }
  self.impl()->storage->bump_version(site);
  if (self.impl()->view_base) {
    rebase_view_history(self, result, site);
    return self;
  }
  auto& meta = self.impl()->autograd;
  meta.grad_fn = result.grad_fn();
  meta.output_nr = result.output_nr();
  meta.requires_grad = result.requires_grad();
  ++self.impl()->history_version;  // views taken before this write are stale
  return self;
}

namespace {

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

const Tensor& binary_inplace(const Tensor& self, const char* op, kern::Binary kind, const Tensor& other_in, const Site& site,
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

const Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha, Site site) const {
  if (alpha.to_double() == 1.0) return binary_inplace(*this, "add_", kern::Binary::Add, o, site, &gradlab::add);
  Tensor scaled = gradlab::mul(o, alpha, site);
  return binary_inplace(*this, "add_", kern::Binary::Add, scaled, site, &gradlab::add);
}
const Tensor& Tensor::add_(const Scalar& o, Site site) const { return add_(value_like(*this, o), 1, site); }
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha, Site site) const {
  if (alpha.to_double() == 1.0) return binary_inplace(*this, "sub_", kern::Binary::Sub, o, site, &gradlab::sub);
  Tensor scaled = gradlab::mul(o, alpha, site);
  return binary_inplace(*this, "sub_", kern::Binary::Sub, scaled, site, &gradlab::sub);
}
const Tensor& Tensor::sub_(const Scalar& o, Site site) const { return sub_(value_like(*this, o), 1, site); }
const Tensor& Tensor::mul_(const Tensor& o, Site site) const { return binary_inplace(*this, "mul_", kern::Binary::Mul, o, site, &gradlab::mul); }
const Tensor& Tensor::mul_(const Scalar& o, Site site) const { return mul_(value_like(*this, o), site); }
const Tensor& Tensor::div_(const Tensor& o, Site site) const {
  GRADLAB_CHECK(is_floating_point(), DTypeError, "div_", "true division of an integer tensor in place",
                "a floating point tensor", to_string(dtype()), "use out-of-place div (it gives float32)");
  return binary_inplace(*this, "div_", kern::Binary::Div, o, site, &gradlab::div);
}
const Tensor& Tensor::div_(const Scalar& o, Site site) const { return div_(value_like(*this, o), site); }

const Tensor& Tensor::fill_(const Scalar& v, Site site) const {
  return apply_inplace(*this, "fill_", site, {}, [&] { kern::fill(*this, v); },
                       // full_like alone would turn a non-leaf into a leaf without grad
                       [&](const Tensor& old) { return overwrite(old, full_like(old, v), site); });
}
const Tensor& Tensor::zero_(Site site) const { return fill_(0, site); }

const Tensor& Tensor::copy_(const Tensor& src, Site site) const {
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

// x = from + (to - from) * U[0, 1) and x = mean + std * N(0, 1), drawn in float64 from the
// generator as rand / randn draw, then written as copy_ writes (zero gradient to the old value).
const Tensor& Tensor::uniform_(double from, double to, Generator* gen, Site site) const {
  ops_detail::check_defined("uniform_", *this);
  GRADLAB_CHECK(from <= to, ValueError, "uniform_", "expects to return a [from, to) range, but found from > to",
                "from <= to", std::to_string(from) + " > " + std::to_string(to));
  Tensor v;
  {
    NoGradGuard ng;
    v = gradlab::add(gradlab::mul(rand(sizes(), TensorOptions().dtype(kFloat64), gen), to - from), from);
  }
  return copy_(v, site);
}
const Tensor& Tensor::normal_(double mean, double std, Generator* gen, Site site) const {
  ops_detail::check_defined("normal_", *this);
  GRADLAB_CHECK(std >= 0, ValueError, "normal_", "expects std >= 0.0", "std >= 0", std::to_string(std));
  Tensor v;
  {
    NoGradGuard ng;
    v = gradlab::add(gradlab::mul(randn(sizes(), TensorOptions().dtype(kFloat64), gen), std), mean);
  }
  return copy_(v, site);
}

// x becomes x.unsqueeze(dim): only sizes and strides change, in this TensorImpl, so every handle
// to it sees the new shape. With history, grad_fn becomes the unsqueeze's node (whose edge is
// the old grad_fn), as LibTorch rebases an in-place view op.
const Tensor& Tensor::unsqueeze_(int64_t dim, Site site) const {
  ops_detail::check_defined("unsqueeze_", *this);
  const bool graph = GradMode::is_enabled() && requires_grad();
  GRADLAB_CHECK(!(graph && is_leaf()), AutogradError, "unsqueeze_",
                "a leaf Variable that requires grad is being used in an in-place operation",
                "a non-leaf, or a tensor that does not require grad", "a leaf " + describe(),
                "use x = x.unsqueeze(dim), or wrap in NoGradGuard");
  const Tensor v = gradlab::unsqueeze(*this, dim, site);
  impl_->sizes = v.sizes();
  impl_->strides = v.strides();
  if (graph) {
    impl_->autograd.grad_fn = v.grad_fn();
    impl_->autograd.output_nr = v.output_nr();
  }
  return *this;
}

const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, Site site) const {
  return apply_inplace(*this, "clamp_", site, {},
                       [&] { kern::copy(*this, gradlab::clamp(this->detach(), min, max)); },
                       [&](const Tensor& old) { return gradlab::clamp(old, min, max, site); });
}

const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value, Site site) const {
  ops_detail::check_defined("masked_fill_", mask, "mask");
  return apply_inplace(*this, "masked_fill_", site, {},
                       [&] { kern::copy(*this, gradlab::masked_fill(this->detach(), mask, value)); },
                       [&](const Tensor& old) { return gradlab::masked_fill(old, mask, value, site); });
}

const Tensor& Tensor::index_put_(const Tensor& index, const Tensor& values, Site site) const {
  return index_put_(index, values, false, site);
}
const Tensor& Tensor::index_put_(const Tensor& index, const Tensor& values, bool accumulate, Site site) const {
  ops_detail::check_defined("index_put_", *this);
  ops_detail::check_defined("index_put_", index, "index");
  ops_detail::check_defined("index_put_", values, "values");
  if (index.dtype() == kBool) {
    GRADLAB_CHECK(index.sizes() == sizes(), ShapeError, "index_put_", "a bool mask must have the tensor's shape",
                  shape_str(sizes()), shape_str(index.sizes()));
    return apply_inplace(*this, "index_put_", site, {&values},
                         [&] {
                           Tensor old = this->detach();
                           kern::copy(*this, gradlab::where(index, accumulate ? old + values.detach() : values.detach(), old));
                         },
                         [&](const Tensor& old) {
                           return gradlab::where(index, accumulate ? gradlab::add(old, values, site) : values, old, site);
                         });
  }
  GRADLAB_CHECK(index.dtype() == kInt64 && index.dim() == 1, ShapeError, "index_put_",
                "index must be a bool mask or a 1-D int64 list of rows", "bool mask or int64 [K]",
                index.describe());
  GRADLAB_CHECK(dim() >= 1, ShapeError, "index_put_", "cannot index rows of a 0-d tensor", "rank >= 1", "shape []");
  kern::check_indices(index, size(0), "index_put_");
  Shape rows = sizes();
  rows[0] = index.numel();
  // Repeated rows with accumulate=false: the last write wins (PyTorch's CPU kernel writes in
  // order; on CUDA PyTorch leaves the winner undefined). Only the winning writes are placed, so
  // the losing values get a zero gradient (the true derivative; PyTorch gives every duplicate
  // grad[row]). accumulate=true adds every write, as index_put_(..., true) does in PyTorch.
  Tensor winners;  // positions k in index that are placed
  if (!accumulate) {
    const std::vector<int64_t> iv = index.cpu().to_vector<int64_t>();
    std::vector<int64_t> last(static_cast<size_t>(size(0)), -1), keep;
    for (size_t k = 0; k < iv.size(); ++k) last[static_cast<size_t>(iv[k] < 0 ? iv[k] + size(0) : iv[k])] = static_cast<int64_t>(k);
    for (size_t k = 0; k < iv.size(); ++k)
      if (last[static_cast<size_t>(iv[k] < 0 ? iv[k] + size(0) : iv[k])] == static_cast<int64_t>(k)) keep.push_back(static_cast<int64_t>(k));
    if (keep.size() != iv.size())
      winners = from_vector(keep, {static_cast<int64_t>(keep.size())}, TensorOptions().device(device()));
  }
  // hit[r] = r appears in index; new = where(hit, index_add(0, values), old) (or old + added)
  auto compute = [&](const Tensor& old, const Tensor& vals, const Site& s) {
    Tensor v = vals.to(dtype()).expand(rows);
    Tensor idx = index;
    if (winners.defined()) {
      v = v.index_select(0, winners, s);
      idx = index.index_select(0, winners);
    }
    Tensor placed = gradlab::index_add(zeros_like(old), 0, idx, v, s);
    if (accumulate) return gradlab::add(old, placed, s);
    Tensor hit = gradlab::index_add(zeros({size(0)}, TensorOptions().dtype(kInt64).device(device())), 0, idx, ones({idx.numel()}, TensorOptions().dtype(kInt64).device(device()))) > 0;
    Shape hs(dim(), 1);
    hs[0] = size(0);
    return gradlab::where(hit.reshape(hs), placed, old, s);
  };
  return apply_inplace(*this, "index_put_", site, {&values},
                       [&] { kern::copy(*this, compute(this->detach(), values.detach(), site)); },
                       [&](const Tensor& old) { return compute(old, values, site); });
}

const Tensor& Tensor::index_put_(const Tensor& index, const Scalar& value, Site site) const {
  return index_put_(index, value_like(*this, value), false, site);
}

}  // namespace gradlab
