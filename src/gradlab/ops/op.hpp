#pragma once
// How a built-in op is written. Each op is a struct: its members hold what backward needs,
// forward(...) computes with the dispatched kernels (kern::, which pick the CPU or CUDA one),
// backward(dy) is written with gradlab's own ops (so with create_graph the backward pass is itself
// recorded). For example:
//
//   // y = exp(x)        dx = dy * y        (saves y: the output is the derivative)
//   struct Exp : Op<Exp> {
//     static constexpr const char* kName = "ExpBackward0";
//     SavedTensor y_;
//     Tensor forward(const Tensor& x) {
//       Tensor y = kern::unary(Unary::Exp, x);  // kern:: dispatches to the CPU or CUDA kernel
//       save(y_, y, kOutput);
//       return y;
//     }
//     GradList backward(const GradList& dy) { return {dy[0] * y_.unpack()}; }
//   };
//   Tensor exp(const Tensor& x, Site site) { return record<Exp>(site, x); }
//
// record<Op>(site, args...) runs forward with grad mode off, and — only when grad mode is on and
// an input requires grad — keeps the struct as the graph node of the outputs. The built-in structs
// live in ops/internal/*.hpp (one header per ops/*.cpp); they also declare their traits (formula,
// autocast category, ONNX mapping, fusion, a derivative template: ops/op_traits.hpp) and derive
// from BuiltinOp (ops/common.hpp), which does not compile without them. A user's op, as above,
// may leave the traits out.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>
#include <utility>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/core/interrupt.hpp"
#include "gradlab/ops/op_traits.hpp"
#include "gradlab/ops/trace_hook.hpp"

namespace gradlab::autograd {

/// Marks a saved tensor as output `nr` of the op that saves it (see Op::save).
struct Output {
  uint32_t nr = 0;
};
/// Output 0, the common case: `save(y_, y, kOutput)`.
inline constexpr Output kOutput{};

/// Notes that an op struct with these traits is compiled into the program (called at load time).
bool register_op(const OpInfo& info);
/// The kName of every op struct (Op<T>) compiled into the program, sorted. The op table's
/// coverage test compares it with the nodes its rows produce: a new op without a row fails.
std::vector<std::string> registered_ops();
/// The traits of every op struct compiled into the program (several structs may share a name).
std::vector<OpInfo> registered_op_infos();

/// Marks a library op struct: it must declare every trait (ops/common.hpp's BuiltinOp).
struct BuiltinOpTag {};

/// The traits of op struct T (one object per program).
template <class T>
const OpInfo& op_info() {
  static const OpInfo info = make_op_info<T>(std::is_base_of<BuiltinOpTag, T>::value);
  return info;
}

namespace detail {
/// A backward that replaces an op struct's own; it gets the node (the real struct) to cast back.
using BackwardFn = std::function<GradList(Node&, const GradList&)>;
/// How many backward overrides are installed (testing/mutants.hpp). Zero outside tests, so
/// record() pays one relaxed load. Defined in op_registry.cpp: one counter for the library and
/// every program linked to it.
extern std::atomic<int> backward_overrides_installed;
/// The latest override installed for the op struct `op`, or null.
std::shared_ptr<const BackwardFn> find_backward_override(const std::type_info& op);
void install_backward_override(const std::type_info& op, std::shared_ptr<const BackwardFn> fn);
void remove_backward_override(const std::type_info& op, const BackwardFn* fn);
}  // namespace detail

/// CRTP base of built-in ops.
template <class Derived>
class Op : public Node {
 public:
  std::string name() const override {
    (void)&kRegistered;  // odr-use: instantiating the op registers its name
    return Derived::kName;
  }
  const OpInfo* info() const override { return &op_info<Derived>(); }
  GradList apply(GradList&& grads) override {
    Derived& self = static_cast<Derived&>(*this);
    if (backward_override_) GRADLAB_UNLIKELY return (*backward_override_)(self, grads);
    return self.backward(grads);
  }
  /// True while a graph is being recorded (forward may skip saving otherwise).
  bool recording() const { return recording_; }
  void set_recording(bool r) { recording_ = r; }
  /// Replaces this node's backward (a test's mutant: testing::BackwardOverride sets it through
  /// record()). The struct's own members stay what forward saved.
  void set_backward_override(std::shared_ptr<const detail::BackwardFn> fn) {
    backward_override_ = std::move(fn);
  }

 protected:
  /// Keeps `t` (an input, or any tensor this op did not make) for backward (only when recording).
  void save(SavedTensor& slot, const Tensor& t) {
    if (!recording_ || !t.defined()) return;
    slot.save(t, this, /*is_output=*/false);
    register_saved(&slot);
  }
  /// Keeps output `out.nr` of this op for backward: stored without its grad_fn (this node: a
  /// cycle) and given it back, at that output slot, when unpacked. So under create_graph the
  /// gradient through it reaches the right output, and an in-place write to it is reported as
  /// "output <nr> of <this op>". A multi-output op passes the index: `save(i_, i, Output{1})`.
  void save(SavedTensor& slot, const Tensor& t, Output out) {
    if (!recording_ || !t.defined()) return;
    slot.save(t, this, /*is_output=*/true, out.nr);
    register_saved(&slot);
  }

 private:
  bool recording_ = false;
  std::shared_ptr<const detail::BackwardFn> backward_override_;
  static inline const bool kRegistered = register_op(op_info<Derived>());
};

namespace detail {
/// True when autocast is on for some device type and no backward pass runs (ops/shape.cpp).
bool autocast_active();
/// x as op category `amp` wants it under autocast (Promote: as `widest`); else x itself.
using Widest = std::optional<ScalarType>;
Tensor autocast_as(Amp amp, Widest widest, const Tensor& x, const Site& site);

inline void widen(Widest& w, const Tensor& t) {
  if (t.defined() && t.is_floating_point()) w = w ? promote_types(*w, t.dtype()) : t.dtype();
}
inline void widen(Widest& w, const std::vector<Tensor>& ts) {
  for (const auto& t : ts) widen(w, t);
}
template <class T>
void widen(Widest&, const T&) {}

/// A tensor argument (or list) as autocast wants it; any other argument unchanged.
template <class T>
decltype(auto) autocast_arg(Amp amp, Widest w, T&& x, const Site& s) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    return Tensor(autocast_as(amp, w, x, s));
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    std::vector<Tensor> out;
    for (const auto& t : x) out.push_back(autocast_as(amp, w, t, s));
    return out;
  } else {
    return std::forward<T>(x);
  }
}
}  // namespace detail

/// record() without autocast.
template <class OpT, class... Args>
auto record_now(const Site& site, Args&&... args) {
  check_interrupt();  // a safe point: nothing of this op has run yet (one relaxed load)
  std::vector<const Tensor*> inputs;
  (detail::collect(inputs, args), ...);
  const bool rec = should_record(inputs);
  auto op = std::make_shared<OpT>();
  op->site = site;
  op->module_site = ModuleCallScope::current();
  op->set_recording(rec);
  detail::TraceScope trace;  // jit::trace: one relaxed load when no trace runs
  std::optional<detail::TracedCall> call;
  if (trace.active()) GRADLAB_UNLIKELY
    call = detail::make_traced_call<OpT>(
        site, [](const Site& s, const auto&... a) { return record_now<OpT>(s, a...); }, args...);
  auto out = [&] {
    AutoGradMode no_grad(false);
    return op->forward(std::forward<Args>(args)...);
  }();
  std::vector<Tensor*> outputs;
  detail::outputs_of(outputs, out);
  if (rec) {
    if (detail::backward_overrides_installed.load(std::memory_order_relaxed) != 0) GRADLAB_UNLIKELY
      op->set_backward_override(detail::find_backward_override(typeid(OpT)));
    connect(op, inputs, outputs);
  }
  check_forward_anomaly(OpT::kName, site, inputs, outputs);
  if (trace.active()) GRADLAB_UNLIKELY {
    call->outputs = detail::as_list(out);
    detail::trace_call(std::move(*call));
  }
  return out;
}

/// Runs `OpT::forward(args...)` and records it when needed. Returns what forward returns
/// (a Tensor or a std::vector<Tensor>). Under autocast, the tensor arguments are first cast as
/// the op's kAutocast trait says (the casts are recorded ops of their own).
template <class OpT, class... Args>
auto record(const Site& site, Args&&... args) {
  if constexpr (detail::has_autocast<OpT>::value) {
    if constexpr (OpT::kAutocast != Amp::None) {
      if (detail::autocast_active()) GRADLAB_UNLIKELY {
        detail::Widest widest;
        if constexpr (OpT::kAutocast == Amp::Promote) (detail::widen(widest, args), ...);
        return record_now<OpT>(site, detail::autocast_arg(OpT::kAutocast, widest, std::forward<Args>(args), site)...);
      }
    }
  }
  return record_now<OpT>(site, std::forward<Args>(args)...);
}

}  // namespace gradlab::autograd
