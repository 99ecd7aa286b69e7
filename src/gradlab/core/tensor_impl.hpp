#pragma once
// The state behind a Tensor handle. Internal: users hold Tensors, not TensorImpls.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/storage.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab {

/// Autograd fields of a tensor (PyTorch's AutogradMeta).
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // a leaf's AccumulateGrad, while a graph uses it
  std::vector<std::pair<unsigned, GradHook>> leaf_hooks;  // hooks on a leaf's gradient
  // Hooks run after a leaf's .grad was accumulated (register_post_accumulate_grad_hook).
  std::vector<std::pair<unsigned, std::function<void(Tensor&)>>> post_accumulate_hooks;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Strides strides;
  ScalarType dtype = kFloat32;
  // For a view: the tensor it views (so an in-place write can see that it hits a leaf's data).
  std::shared_ptr<TensorImpl> view_base;
  // Bumped on a base each time an in-place op under autograd rebases its history (directly or
  // through one of its views). A view keeps the value its base had when the view was made (or
  // last rebased): an older value means the view's grad_fn predates the write (PyTorch would
  // regenerate it; gradlab refuses to use it, see autograd::gradient_edge).
  uint32_t history_version = 0;
  uint32_t base_history_version = 0;
  AutogradMeta autograd;

  int64_t numel() const { return numel_of(sizes); }
  /// Bytes address of element 0.
  char* data() const {
    return static_cast<char*>(storage->data()) + offset * static_cast<int64_t>(element_size(dtype));
  }
};

namespace autograd {
/// A node's PyTorch-style name ("MulBackward0"), for printing grad_fn. Defined in the autograd
/// layer: core sees Node only as a forward declaration.
std::string node_name(const Node& n);
}  // namespace autograd

/// A new contiguous tensor of `shape` with fresh (uninitialized) storage.
Tensor make_tensor(const Shape& shape, ScalarType dtype, Device device = Device());
/// A view of `base`'s storage with other sizes/strides/offset; no autograd (ops add it).
Tensor make_view(const Tensor& base, Shape sizes, Strides strides, int64_t offset);

}  // namespace gradlab
