#pragma once
// What a traced op call carries that jit::Graph (jit/trace.hpp) keeps: its non-tensor arguments and
// the closure that runs it again. The tracer's hook itself (ops/trace_hook.hpp) is machinery that
// gradlab.hpp does not include.

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "gradlab/core/tensor.hpp"

namespace gradlab::autograd {
struct OpInfo;  // an op struct's traits (ops/op_traits.hpp)
}  // namespace gradlab::autograd

namespace gradlab::autograd::detail {

/// A non-tensor argument of a traced op call, as printed and exported: an integer (also bools and
/// enums), a real number, an integer list (shapes, dims), or a description of anything else.
using TraceAttr = std::variant<int64_t, double, std::vector<int64_t>, std::string>;
/// Calls the traced op again on new tensors (one per tensor input slot, in order).
using ReplayFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

}  // namespace gradlab::autograd::detail
