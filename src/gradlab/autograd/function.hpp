#pragma once
// Custom autograd functions, as in LibTorch:
//
//   struct MulConstant : gradlab::autograd::Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static TensorList backward(AutogradContext* ctx, TensorList grad_outputs) {
//       return {grad_outputs[0] * ctx->saved_data["c"].toDouble(), Tensor()};
//     }
//   };
//   Tensor y = MulConstant::apply(x, 5.5);
//
// forward runs with grad mode off; backward returns one gradient per forward argument, and one
// per element of a std::vector<Tensor> argument, in order (an undefined Tensor for non-tensor
// arguments or inputs that need none).

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <variant>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/core/demangle.hpp"

namespace gradlab::autograd {

/// LibTorch's names for a list of tensors in custom functions (both are std::vector<Tensor>).
using tensor_list = TensorList;
using variable_list = TensorList;
/// LibTorch's Variable is its Tensor (merged since 1.0); so is gradlab's.
using Variable = Tensor;

/// A value kept in ctx->saved_data (LibTorch's IValue, reduced to what backward needs).
class SavedValue {
 public:
  SavedValue() = default;
  SavedValue(double v) : v_(v) {}           // NOLINT
  SavedValue(float v) : v_(double(v)) {}     // NOLINT
  SavedValue(int64_t v) : v_(v) {}          // NOLINT
  SavedValue(int v) : v_(int64_t(v)) {}      // NOLINT
  SavedValue(bool v) : v_(v) {}             // NOLINT
  SavedValue(std::string v) : v_(std::move(v)) {}  // NOLINT
  SavedValue(Shape v) : v_(std::move(v)) {}        // NOLINT
  SavedValue(Tensor v) : v_(std::move(v)) {}       // NOLINT
  double toDouble() const;
  int64_t toInt() const;
  bool toBool() const;
  const std::string& toString() const;
  const Shape& toShape() const;
  const Tensor& toTensor() const;

 private:
  std::variant<std::monostate, double, int64_t, bool, std::string, Shape, Tensor> v_;
};

/// What forward leaves for backward (LibTorch's AutogradContext).
class AutogradContext {
 public:
  /// Tensors backward will need; checked for in-place modification when unpacked.
  void save_for_backward(TensorList tensors);
  /// The tensors given to save_for_backward, in order.
  TensorList get_saved_variables() const;
  /// Non-tensor values for backward.
  std::map<std::string, SavedValue> saved_data;
  /// Does tensor input i need a gradient? As in LibTorch, i counts tensor inputs only: non-tensor
  /// arguments are skipped, and each element of a std::vector<Tensor> argument is one input.
  bool needs_input_grad(size_t i) const;
  /// Outputs that never get a gradient (e.g. indices).
  void mark_non_differentiable(const TensorList& outputs);
  /// Inputs that forward modified in place and returns: their history is rebased onto this
  /// node (as LibTorch's mark_dirty). A leaf that requires grad, or a view, is refused.
  void mark_dirty(const TensorList& inputs);
  /// When false, backward receives undefined tensors (not zeros) for outputs without gradient.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }

  // ---- used by Function<T> ---------------------------------------------------------------
  void bind(Node* node) { node_ = node; }
  /// Saves what save_for_backward named (outputs without their grad_fn), then forgets the dirty
  /// and non-differentiable tensors: the node never owns its own outputs (no reference cycle).
  void finish_forward(const std::vector<Tensor*>& outputs);
  std::vector<const TensorImpl*> non_differentiable() const;
  bool is_dirty(const TensorImpl* t) const;
  /// Throws unless every dirty tensor is an input, and (when recording) may be rebased.
  void check_dirty(const std::vector<const Tensor*>& inputs, bool recording) const;
  bool materialize_grads() const { return materialize_grads_; }
  void release();

 private:
  Node* node_ = nullptr;
  TensorList to_save_;
  std::vector<SavedTensor> saved_;
  TensorList non_differentiable_;
  TensorList dirty_;
  bool materialize_grads_ = true;
};

/// The graph node of a custom function.
template <class T>
class CppNode final : public Node {
 public:
  std::string name() const override { return unqualified_type_name(typeid(T).name()) + "Backward"; }
  GradList apply(GradList&& grads) override {
    if (!ctx.materialize_grads())
      for (size_t i = 0; i < grads.size(); ++i)
        if (grads[i].defined() && !output_meta()[i].differentiable) grads[i] = Tensor();
    TensorList r = T::backward(&ctx, std::move(grads));
    // Surplus trailing gradients are dropped when all are undefined, as LibTorch does (e.g. the
    // gradient of an optional bias that was not passed); a defined surplus one is an error.
    bool surplus_undefined = r.size() > input_is_tensor.size();
    for (size_t i = input_is_tensor.size(); i < r.size(); ++i) surplus_undefined = surplus_undefined && !r[i].defined();
    if (surplus_undefined) r.resize(input_is_tensor.size());
    // Keep only the gradients of tensor inputs, in edge order.
    GradList out;
    GRADLAB_CHECK(r.size() == input_is_tensor.size(), AutogradError, name(),
                  "backward returned the wrong number of gradients",
                  std::to_string(input_is_tensor.size()) +
                      " (one per forward argument, and one per element of a tensor-list argument)",
                  std::to_string(r.size()),
                  "return an undefined Tensor() for non-tensor arguments; surplus gradients must be undefined");
    for (size_t i = 0; i < r.size(); ++i)
      if (input_is_tensor[i]) out.push_back(std::move(r[i]));
    return out;
  }
  bool materialize_grads() const override { return ctx.materialize_grads(); }
  void release_variables() override {
    ctx.release();
    released_ = true;
  }
  AutogradContext ctx;
  std::vector<bool> input_is_tensor;  // per slot of backward's result (detail::mark_tensor_inputs)
};

/// CRTP base of a custom function: T defines static forward(AutogradContext*, args...) and
/// static backward(AutogradContext*, TensorList).
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    return apply_at(Site::unknown(), std::forward<Args>(args)...);
  }
  /// apply, naming the call site for diagnostics.
  template <class... Args>
  static auto apply_at(const Site& site, Args&&... args) {
    std::vector<const Tensor*> inputs;
    (detail::collect(inputs, args), ...);
    auto node = std::make_shared<CppNode<T>>();
    node->site = site;
    node->module_site = ModuleCallScope::current();
    (detail::mark_tensor_inputs(node->input_is_tensor, args), ...);
    node->ctx.bind(node.get());
    const bool rec = should_record(inputs);
    // Edges before forward, as LibTorch does: forward may ask ctx->needs_input_grad(i).
    if (rec)
      for (const Tensor* in : inputs) node->mutable_next_edges().push_back(gradient_edge(*in));
    auto out = [&] {
      AutoGradMode no_grad(false);
      // NOTE: args as lvalues, never std::forward: a temporary tensor argument moved into
      // forward's by-value parameter would leave `inputs` pointing at an empty handle, and the
      // graph would lose that input (no gradient, no error).
      return T::forward(&node->ctx, args...);
    }();
    std::vector<Tensor*> outputs;
    detail::outputs_of(outputs, out);
    // An output that is an input unchanged would get this node as grad_fn: make it a new handle
    // (unless forward marked it dirty: then rebasing its history onto this node is the point).
    node->ctx.check_dirty(inputs, rec);
    for (Tensor* o : outputs)
      for (const Tensor* in : inputs)
        if (o->defined() && o->impl() == in->impl() && !node->ctx.is_dirty(o->impl())) *o = o->detach();
    if (rec) {
      connect(node, inputs, outputs, node->ctx.non_differentiable());
      node->ctx.finish_forward(outputs);
    }
    check_forward_anomaly("custom Function", site, inputs, outputs);
    return out;
  }
};

}  // namespace gradlab::autograd
