#pragma once
// Graph nodes. A Node is the backward of one forward call: it maps the gradients of that call's
// outputs to the gradients of its inputs, and its edges point at the nodes that made the inputs.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gradlab/core/tensor.hpp"

namespace gradlab::autograd {

class Node;
struct OpInfo;

/// Input `input_nr` of node `fn` (an output slot of the node, seen from the backward side).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

/// Shape/dtype/device of a tensor at one end of a node (to check or zero-fill gradients).
struct TensorMeta {
  Shape shape;
  ScalarType dtype = kFloat32;
  Device device;
  bool differentiable = true;
};

/// A tensor kept for backward. Checks, when unpacked, that nobody wrote to it in the meantime.
class SavedTensor {
 public:
  SavedTensor() = default;
  /// Saves `t`. `is_output` marks an output of the saving node: it is stored without its grad_fn
  /// (that would be a cycle) and gets it back when unpacked.
  void save(const Tensor& t, Node* owner, bool is_output, uint32_t output_nr = 0);
  /// The saved tensor; throws AutogradError if it was freed or modified in place.
  Tensor unpack() const;
  void reset();
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  Node* owner_ = nullptr;
  bool is_output_ = false;
  bool was_saved_ = false;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  std::string producer_;  // name of the node that made the tensor (for messages)
};

using GradList = std::vector<Tensor>;

/// Base of every backward node.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// PyTorch-style name, e.g. "MulBackward0".
  virtual std::string name() const = 0;
  /// The traits of the op struct behind this node (ops/op_traits.hpp); null for other nodes.
  virtual const OpInfo* info() const { return nullptr; }
  /// Gradients of the outputs -> gradients of the inputs (one per next edge; undefined = none).
  virtual GradList apply(GradList&& grads) = 0;
  /// Frees what was saved for backward (after a backward without retain_graph).
  virtual void release_variables();
  /// Whether the engine zero-fills the gradients of outputs that received none before apply()
  /// (false for a custom function that called ctx->set_materialize_grads(false)).
  virtual bool materialize_grads() const { return true; }

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  /// Does input i need a gradient? (False for inputs that do not require grad.)
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }
  const std::vector<TensorMeta>& input_meta() const { return input_meta_; }
  std::vector<TensorMeta>& mutable_input_meta() { return input_meta_; }
  const std::vector<TensorMeta>& output_meta() const { return output_meta_; }
  std::vector<TensorMeta>& mutable_output_meta() { return output_meta_; }
  size_t num_outputs() const { return output_meta_.size(); }

  /// Where the forward call was made.
  Site site = Site::unknown();
  /// The user's call of the module this op ran inside (ModuleCallScope), unknown outside one.
  Site module_site = Site::unknown();
  /// Creation order; later nodes run first among those ready.
  uint64_t sequence_nr() const { return sequence_nr_; }
  bool released() const { return released_; }
  void register_saved(SavedTensor* s) { saved_.push_back(s); }

  /// Hooks on the gradient of output `output_nr` (from Tensor::register_hook on a non-leaf).
  std::map<uint32_t, std::vector<std::pair<unsigned, GradHook>>> pre_hooks;
  /// Non-leaf tensors that asked for retain_grad, by output slot.
  std::map<uint32_t, std::weak_ptr<TensorImpl>> retained;

 protected:
  std::vector<Edge> next_edges_;
  std::vector<TensorMeta> input_meta_;
  std::vector<TensorMeta> output_meta_;
  std::vector<SavedTensor*> saved_;
  bool released_ = false;
  uint64_t sequence_nr_;
};

/// The sink for a leaf: adds incoming gradients into leaf.grad (the only place that accumulates).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::string name() const override { return "AccumulateGrad"; }
  GradList apply(GradList&& grads) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

/// The edge through which a gradient reaches `t`: its grad_fn, or its leaf accumulator
/// (made on first use), or an invalid edge when t does not require grad.
Edge gradient_edge(const Tensor& t);

/// Next hook handle (unique per process).
unsigned next_hook_id();

}  // namespace gradlab::autograd
