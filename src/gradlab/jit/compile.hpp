#pragma once
// jit::compile: torch.compile's role. The first call with a new input signature (shapes, dtypes,
// devices, requires_grad, grad mode) traces the function (jit/trace.hpp) and cuts the graph into
//  - fused regions: runs of elementwise ops (with broadcast inputs), optionally ended by a sum or
//    mean over all elements or over the last dim, run as one pass over memory
//    (backend/fused.hpp: a tiled loop on the CPU, one NVRTC kernel on CUDA);
//  - everything else, replayed eagerly (matmul, conv, views ...), with the reason in report().
// A fused region records one autograd node; its backward is one fused pass too (it recomputes
// the region's values tile by tile from its inputs, so it saves only the inputs).
//
// NOTE: like any trace, a compiled function sees one path through data-dependent control flow.
// A function that reads tensor values on the host while traced (item(), to_vector()), or draws
// random numbers from the default generator (Dropout in training mode), runs eagerly instead, and
// report() says so. A module's train / eval switch is not part of the signature: compile again
// after changing it. Double backward (create_graph) through a fused region throws AutogradError.
// A CompiledFunction is not thread-safe (its plan cache): one per thread.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/jit/trace.hpp"

namespace gradlab::jit {

/// Options of jit::compile.
struct CompileOptions {
  /// Smallest number of compute ops worth a fused region (a lone op runs its eager kernel).
  int min_region_ops = 2;
  /// Fuse at all (false: only trace and replay; the baseline a benchmark compares with).
  bool fuse = true;
};

struct Plan;  // one specialization (compile.cpp)

/// A compiled function: call it like the original.
class CompiledFunction {
 public:
  CompiledFunction(TracedFn fn, CompileOptions options);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& input);
  /// What the latest call ran: the fused regions (ops, shape, inputs) and every op that ran eager
  /// with its reason; "eager: ..." when the whole function runs eagerly.
  std::string report() const;
  /// Number of fused regions in the latest call's plan.
  int fused_regions() const;
  /// Number of specializations traced so far.
  size_t cache_size() const { return plans_.size(); }

 private:
  TracedFn fn_;
  CompileOptions options_;
  std::map<std::string, std::shared_ptr<Plan>> plans_;
  std::shared_ptr<Plan> last_;
};

/// Compiles fn (several tensors in and out).
CompiledFunction compile(TracedFn fn, CompileOptions options = {});
/// Compiles a one-tensor function.
CompiledFunction compile(std::function<Tensor(const Tensor&)> fn, CompileOptions options = {});

}  // namespace gradlab::jit
