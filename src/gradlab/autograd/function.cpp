#include "gradlab/autograd/function.hpp"

#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::autograd {

namespace {
template <class V>
const V& get(const std::variant<std::monostate, double, int64_t, bool, std::string, Shape, Tensor>& v,
             const char* want) {
  if (auto p = std::get_if<V>(&v)) return *p;
  throw ValueError(error_message("SavedValue", "wrong type requested", want, "another type"));
}
}  // namespace

double SavedValue::toDouble() const {
  if (auto p = std::get_if<int64_t>(&v_)) return static_cast<double>(*p);
  return get<double>(v_, "double");
}
int64_t SavedValue::toInt() const { return get<int64_t>(v_, "int64"); }
bool SavedValue::toBool() const { return get<bool>(v_, "bool"); }
const std::string& SavedValue::toString() const { return get<std::string>(v_, "string"); }
const Shape& SavedValue::toShape() const { return get<Shape>(v_, "Shape"); }
const Tensor& SavedValue::toTensor() const { return get<Tensor>(v_, "Tensor"); }

void AutogradContext::save_for_backward(TensorList tensors) { to_save_ = std::move(tensors); }

void AutogradContext::finish_forward(const std::vector<Tensor*>& outputs) {
  saved_.resize(to_save_.size());
  for (size_t i = 0; i < to_save_.size(); ++i) {
    const Tensor& t = to_save_[i];
    if (!t.defined()) continue;
    bool is_output = false;
    for (const Tensor* o : outputs)
      if (o->impl() == t.impl()) is_output = true;
    if (is_output) {
      // Saved outputs are stored without grad_fn; unpack gives it back with the right slot.
      for (size_t k = 0; k < outputs.size(); ++k)
        if (outputs[k]->impl() == t.impl()) {
          saved_[i].save(t, node_, true, static_cast<uint32_t>(k));
        }
    } else {
      saved_[i].save(t, node_, false);
    }
  }
  to_save_.clear();
  // The node must not own its own outputs (PyTorch keeps these two lists as non-owning
  // TensorImpl*): a dirty output has this node as grad_fn, so keeping it here would be a
  // reference cycle, leaking node, output and all it saved on every call. Both lists are only
  // needed until the outputs are connected, which is done.
  dirty_.clear();
  non_differentiable_.clear();
}

TensorList AutogradContext::get_saved_variables() const {
  TensorList r;
  for (const auto& s : saved_) r.push_back(s.unpack());
  return r;
}

bool AutogradContext::needs_input_grad(size_t i) const {
  // i indexes tensor inputs, which are exactly the node's edges (non-tensor arguments have none).
  return node_ && node_->needs_input_grad(i);
}

void AutogradContext::mark_non_differentiable(const TensorList& outputs) {
  for (const auto& t : outputs) non_differentiable_.push_back(t);
}

void AutogradContext::mark_dirty(const TensorList& inputs) {
  for (const auto& t : inputs) dirty_.push_back(t);
}

bool AutogradContext::is_dirty(const TensorImpl* t) const {
  for (const auto& d : dirty_)
    if (d.impl() == t) return true;
  return false;
}

void AutogradContext::check_dirty(const std::vector<const Tensor*>& inputs, bool recording) const {
  for (const auto& d : dirty_) {
    bool is_input = false;
    for (const Tensor* in : inputs) is_input = is_input || (in->defined() && in->impl() == d.impl());
    GRADLAB_CHECK(is_input, AutogradError, "mark_dirty", "a tensor marked dirty is not an input of forward",
                  "inputs that forward modified in place", d.describe());
    if (!recording) continue;
    GRADLAB_CHECK(!(d.is_leaf() && d.requires_grad()), AutogradError, "mark_dirty",
                  "a leaf Variable that requires grad has been used in an in-place operation",
                  "a non-leaf, or a tensor that does not require grad",
                  "a leaf " + d.describe() + " with requires_grad=true", "modify a clone() instead");
    GRADLAB_CHECK(d.impl()->view_base == nullptr, AutogradError, "mark_dirty",
                  "an in-place custom function on a view is not supported", "a tensor that is not a view",
                  "a view " + d.describe(), "pass the base, or a clone() of the view");
    ++d.impl()->history_version;  // views of it taken before are stale, as after any in-place op
  }
}

std::vector<const TensorImpl*> AutogradContext::non_differentiable() const {
  std::vector<const TensorImpl*> r;
  for (const auto& t : non_differentiable_) r.push_back(t.impl());
  return r;
}

void AutogradContext::release() {
  for (auto& s : saved_) s.reset();
  // keep saved_ entries: unpack of a reset entry raises the "backward twice" error
}

}  // namespace gradlab::autograd
