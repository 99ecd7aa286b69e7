#pragma once
// jit::trace: runs a function once on example inputs and records the ops it called as a Graph
// (torch.jit.trace's role). The graph can be printed, dumped to Graphviz DOT and replayed on other
// inputs of the same shapes; jit::compile fuses it, onnx::export_model writes it out.
//
// NOTE: a trace records the one path the example took. A branch or loop that depends on tensor
// values (`if (x.sum().item<float>() > 0)`) is frozen: the trace warns when the function reads
// a tensor value on the host, and TraceOptions::check_inputs re-traces on other inputs and throws
// TracingCheckError when the graphs or the results differ (torch.jit.trace's check_trace).

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/ops/trace_types.hpp"

namespace gradlab::jit {

/// A traced function's result does not match a re-trace or an eager run on check inputs.
class TracingCheckError : public Error {
 public:
  using Error::Error;
};

/// A tensor in the graph: a graph input, a constant (a tensor made outside the trace, e.g. a
/// parameter, kept by handle so replays see its current value), or an output of a node.
struct Value {
  enum class Kind { Input, Constant, Op };
  Kind kind = Kind::Op;
  Shape shape;
  ScalarType dtype = kFloat32;
  Device device;
  int node = -1;       ///< the node that makes it (Kind::Op)
  int output_nr = 0;   ///< which output of that node
  Tensor constant;     ///< Kind::Constant: the tensor itself (shared, not copied)
  bool defined = true; ///< false for an undefined tensor argument (linear without bias)
};

/// One op call.
struct Node {
  std::string kind;                 ///< "Mul", "Addmm", "Expand" (kName without "Backward0")
  std::string op_name;              ///< the op struct's kName ("MulBackward0"), for display
  const autograd::OpInfo* op = nullptr;  ///< the op struct's traits (ops/op_traits.hpp)
  std::vector<int> inputs;          ///< value ids, in argument order
  std::vector<int> outputs;         ///< value ids
  std::vector<autograd::detail::TraceAttr> attrs;  ///< non-tensor arguments, in order
  Site site = Site::unknown();
  autograd::detail::ReplayFn replay;  ///< runs the op again (recorded for autograd as usual)
};

/// What a trace recorded.
class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   ///< value ids of the function's inputs
  std::vector<int> outputs;  ///< value ids of the function's results
  /// TracerWarnings: host reads of tensor values during the trace (each place once), and random
  /// draws from the default generator.
  std::vector<std::string> warnings;

  /// Runs the recorded ops on new inputs (same count, shapes and dtypes as the example).
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs) const;
  Tensor replay(const Tensor& input) const;
  /// One line per node: "%3 : float32[4, 8] = Mul(%1, %2)".
  std::string str() const;
  /// Graphviz DOT: inputs, constants, ops and outputs as boxes, values as edges.
  std::string dot() const;
  /// The ops of the graph in order, e.g. {"Mul", "Add", "Relu"} (the structure re-traces compare).
  std::vector<std::string> kinds() const;
};
std::ostream& operator<<(std::ostream& os, const Graph& g);

/// Options of jit::trace.
struct TraceOptions {
  /// Other inputs to re-trace on (each a full argument list): the graphs must match and the
  /// first graph replayed on them must equal the function's eager result (within tolerance).
  std::vector<std::vector<Tensor>> check_inputs;
  double check_rtol = 1e-5, check_atol = 1e-6;
  /// Print each TracerWarning to stderr as it happens (as torch.jit.trace's warnings do).
  bool print_warnings = true;
};

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
/// Traces fn on example inputs. Throws TracingCheckError when a check input disagrees.
Graph trace(const TracedFn& fn, const std::vector<Tensor>& example_inputs,
            const TraceOptions& options = {});
/// One tensor in, one tensor out.
Graph trace(const std::function<Tensor(const Tensor&)>& fn, const Tensor& example_input,
            const TraceOptions& options = {});

}  // namespace gradlab::jit
