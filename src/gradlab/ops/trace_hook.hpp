#pragma once
// The tracer's hook in record<OpT>() (ops/op.hpp): while a jit::trace runs on this thread, every
// recorded op call is reported here with its tensor inputs, outputs, non-tensor arguments and a
// closure that calls the same op again on other tensors (replay). Outside a trace, record() pays
// one relaxed load of `tracers_active`, as for the backward overrides.
//
// NOTE: only the outermost record() is reported: an op whose forward calls other ops is one node.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/ops/trace_types.hpp"

namespace gradlab::autograd {
template <class T>
const OpInfo& op_info();  // ops/op.hpp
}  // namespace gradlab::autograd

namespace gradlab::autograd::detail {

/// One op call seen by the tracer.
struct TracedCall {
  const char* name = "";         ///< the op struct's kName ("MulBackward0"), for display
  const OpInfo* info = nullptr;  ///< the op struct's traits (what jit and onnx read)
  std::vector<Tensor> inputs;    ///< tensor arguments in order (undefined ones kept as slots)
  std::vector<Tensor> outputs;
  std::vector<TraceAttr> attrs;  ///< the other arguments, in order
  Site site = Site::unknown();
  ReplayFn replay;
};

/// Number of traces running in the process (jit/trace.cpp); zero outside jit::trace.
extern std::atomic<int> tracers_active;
/// True when this thread is tracing and not already inside a traced op (then the caller reports
/// the call with trace_call after its forward, and must call trace_leave).
bool trace_enter();
void trace_leave();
/// True while this thread is inside a traced op's forward (its own host reads are not the user's).
bool trace_in_op();
/// Hands one call to this thread's tracer.
void trace_call(TracedCall&& call);
/// The tracer's receiver (jit/trace.cpp installs one per trace on its thread; null removes it).
using TraceSink = void (*)(void* tracer, TracedCall&& call);
void set_trace_sink(TraceSink sink, void* tracer);

/// trace_enter() / trace_leave() as a scope (the leave also runs when forward throws).
class TraceScope {
 public:
  TraceScope() : active_(tracers_active.load(std::memory_order_relaxed) != 0 && trace_enter()) {}
  ~TraceScope() {
    if (active_) trace_leave();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  bool active() const { return active_; }

 private:
  bool active_;
};

// ---- building a TracedCall from record()'s arguments -----------------------------------------

inline void collect_tensors(std::vector<Tensor>& v, const Tensor& t) { v.push_back(t); }
inline void collect_tensors(std::vector<Tensor>& v, const std::vector<Tensor>& ts) {
  v.insert(v.end(), ts.begin(), ts.end());
}
template <class T>
void collect_tensors(std::vector<Tensor>&, const T&) {}

inline void add_attr(std::vector<TraceAttr>&, const Tensor&) {}
inline void add_attr(std::vector<TraceAttr>&, const std::vector<Tensor>&) {}
template <class T>
void add_attr(std::vector<TraceAttr>& v, const T& x) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) v.emplace_back(static_cast<int64_t>(x));
  else if constexpr (std::is_floating_point_v<T>) v.emplace_back(static_cast<double>(x));
  else if constexpr (std::is_base_of_v<std::vector<int64_t>, T>) v.emplace_back(std::vector<int64_t>(x));  // Shape, Dims
  else {
    std::string s = "<";  // NOTE: not "<" + name + ">": GCC 12 warns (-Wrestrict) falsely
    s += typeid(T).name();
    s += '>';
    v.emplace_back(std::move(s));
  }
}

// What the replay closure keeps of each argument: a slot for tensors, the value otherwise.
struct TensorSlot {};
struct TensorListSlot {
  size_t n = 0;
};
inline TensorSlot keep(const Tensor&) { return {}; }
inline TensorListSlot keep(const std::vector<Tensor>& v) { return {v.size()}; }
template <class T>
std::decay_t<T> keep(const T& x) {
  return x;
}
inline Tensor fill(const TensorSlot&, const std::vector<Tensor>& in, size_t& k) { return in.at(k++); }
inline std::vector<Tensor> fill(const TensorListSlot& s, const std::vector<Tensor>& in, size_t& k) {
  std::vector<Tensor> v(in.begin() + static_cast<std::ptrdiff_t>(k),
                        in.begin() + static_cast<std::ptrdiff_t>(k + s.n));
  k += s.n;
  return v;
}
template <class T>
const T& fill(const T& x, const std::vector<Tensor>&, size_t&) {
  return x;
}
inline std::vector<Tensor> as_list(const Tensor& t) { return {t}; }
inline std::vector<Tensor> as_list(const std::vector<Tensor>& v) { return v; }

/// The call record<OpT>(site, args...) as a TracedCall without its outputs; `rerun` is
/// record<OpT> itself (passed in: this header comes before op.hpp defines it).
template <class OpT, class Rerun, class... Args>
TracedCall make_traced_call(const Site& site, Rerun rerun, const Args&... args) {
  TracedCall c;
  c.name = OpT::kName;
  c.info = &op_info<OpT>();
  c.site = site;
  (collect_tensors(c.inputs, args), ...);
  (add_attr(c.attrs, args), ...);
  c.replay = [site, rerun, kept = std::make_tuple(keep(args)...)](const std::vector<Tensor>& in) {
    return std::apply(
        [&](const auto&... a) {
          size_t k = 0;
          // Braced initialization: the slots are filled left to right.
          auto filled = std::tuple<decltype(fill(a, in, k))...>{fill(a, in, k)...};
          return as_list(std::apply([&](auto&&... x) { return rerun(site, x...); }, filled));
        },
        kept);
  };
  return c;
}

}  // namespace gradlab::autograd::detail
