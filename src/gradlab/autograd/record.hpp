#pragma once
// Recording a forward call into the graph: shared by built-in ops (ops/op.hpp) and by users'
// custom functions (autograd/function.hpp).

#include <memory>
#include <vector>

#include "gradlab/autograd/node.hpp"

namespace gradlab::autograd {

/// True when a call on `inputs` must be recorded: grad mode is on and some input requires grad.
bool should_record(const std::vector<const Tensor*>& inputs);
/// Wires `node` into the graph: edges to the inputs' gradient edges, input/output metadata, and
/// grad_fn on every floating-point output that is not in `non_differentiable`.
void connect(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
             std::vector<Tensor*>& outputs, const std::vector<const TensorImpl*>& non_differentiable = {});
/// Anomaly mode's forward check (no-op unless enabled): throws if an output is non-finite while
/// every input was finite.
void check_forward_anomaly(const char* op, const Site& site, const std::vector<const Tensor*>& inputs,
                           const std::vector<Tensor*>& outputs);

namespace detail {
inline void collect(std::vector<const Tensor*>& v, const Tensor& t) { v.push_back(&t); }
inline void collect(std::vector<const Tensor*>& v, const std::vector<Tensor>& ts) {
  for (const auto& t : ts) v.push_back(&t);
}
template <class T>
void collect(std::vector<const Tensor*>&, const T&) {}

// One flag per forward input slot, true for a tensor (LibTorch's is_variable_input): one per
// Tensor argument, one per element of a std::vector<Tensor> argument (so it matches collect),
// one per other argument.
inline void mark_tensor_inputs(std::vector<bool>& v, const Tensor&) { v.push_back(true); }
inline void mark_tensor_inputs(std::vector<bool>& v, const std::vector<Tensor>& ts) {
  v.insert(v.end(), ts.size(), true);
}
template <class T>
void mark_tensor_inputs(std::vector<bool>& v, const T&) {
  v.push_back(false);
}

inline void outputs_of(std::vector<Tensor*>& v, Tensor& t) { v.push_back(&t); }
inline void outputs_of(std::vector<Tensor*>& v, std::vector<Tensor>& ts) {
  for (auto& t : ts) v.push_back(&t);
}
}  // namespace detail

}  // namespace gradlab::autograd
