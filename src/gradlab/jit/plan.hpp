#pragma once
// jit::compile's internals (not installed): a Plan is one specialization of a compiled function,
// cut by the planner (planner.cpp) into fused regions and eager nodes; the runtime (compile.cpp)
// runs it; the symbolic backward (symbolic_backward.cpp) builds a region's fused backward
// program from its ops' derivative traits.

#include <memory>
#include <string>
#include <vector>

#include "gradlab/backend/fused.hpp"
#include "gradlab/jit/compile.hpp"
#include "gradlab/ops/op_traits.hpp"

namespace gradlab::jit {

/// A run of graph nodes fused into one program.
struct Region {
  std::vector<int> nodes;     ///< graph nodes it replaces, in order
  std::vector<int> inputs;    ///< graph values read (their own shapes: expanded when run)
  std::vector<int> outputs;   ///< graph values written, one per program output
  kern::FusedProgram program;
  /// The op behind each step of `program` (null for inputs): whose derivative runs backward.
  std::vector<const autograd::OpInfo*> step_ops;
  /// Training: `program` plus outputs for the values of the costly formulas (erf, exp, tanh ...),
  /// so the fused backward reads them instead of recomputing them (as eager saves them).
  kern::FusedProgram train_program;
  std::vector<int> saved_regs;
  int compute_ops = 0;
  std::string kinds;          ///< "Mul, Add, Relu"
};

/// One specialization: the graph and how each of its nodes runs.
struct Plan {
  Graph graph;
  bool eager = false;  ///< run fn itself (the trace could not be trusted)
  std::string eager_reason;
  struct Item {
    int node = -1;                          ///< a graph node replayed eagerly, or
    std::shared_ptr<const Region> region;   ///< a fused region
  };
  std::vector<Item> items;
  std::vector<std::string> notes;  ///< eager ops and why
};

/// Cuts a traced graph into fused regions and eager nodes (planner.cpp).
std::shared_ptr<Plan> build_plan(Graph g, const CompileOptions& options);

/// The backward program of region `r` (n_in inputs): inputs = the forward's inputs, then one
/// upstream gradient per forward output (expanded to the program's shape), then the values in
/// r.saved_regs; outputs = the gradients of the inputs in `wanted` (symbolic_backward.cpp).
kern::FusedProgram backward_program(const Region& r, size_t n_in, const std::vector<size_t>& wanted);

}  // namespace gradlab::jit
