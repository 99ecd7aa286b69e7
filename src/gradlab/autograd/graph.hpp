#pragma once
// Graphviz DOT dump of the graph behind a tensor: one box per backward node (name, creation
// site), one ellipse per leaf that requires grad (shape, dtype), edges in gradient direction.

#include <string>

#include "gradlab/core/tensor.hpp"

namespace gradlab::autograd {

/// The graph that produced `root`, as DOT text (`dot -Tpng` renders it).
std::string to_dot(const Tensor& root, const std::string& title = "gradlab graph");
/// One line per node, indented by depth: "MulBackward0 <- AddBackward0, AccumulateGrad[2, 3]".
std::string graph_summary(const Tensor& root);
/// Number of distinct nodes (including leaf accumulators) reachable from root.grad_fn().
size_t count_nodes(const Tensor& root);

}  // namespace gradlab::autograd
