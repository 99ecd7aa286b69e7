// gradcheck's two modes on an input of 4096 elements, and what anomaly mode costs when it is off.
//
//   build/release/bench/bench_gradcheck --benchmark_min_time=0.5
//
// Gradcheck: full Jacobian (every entry: 2 x 4096 forward evaluations + one backward per output
// element) versus fast mode (uᵀJv per input: a few evaluations), default checks on in both.
//
// Anomaly mode off: every op runs `check_forward_anomaly`, which returns after one relaxed atomic
// load when anomaly mode is off. The A/B below runs the library's op structs through
// autograd::record (with the check) and through a copy of record without that one line (what a
// build without anomaly mode would run); BM_AnomalyFlagLoad is the engine's per-node cost in
// backward (the same load, twice per node).

#include <benchmark/benchmark.h>

#include "gradlab/gradlab.hpp"
#include "gradlab/ops/internal/elementwise.hpp"
#include "gradlab/testing/gradcheck.hpp"

namespace {

using namespace gradlab;
using namespace gradlab::ops_detail;
using gradlab::testing::gradcheck;
using gradlab::testing::GradcheckOptions;
using gradlab::testing::TensorFn;

// ---- gradcheck: full vs fast
// ---------------------------------------------------------------------

Tensor input_4096() {
  Generator g(7);
  return randn({64, 64}, TensorOptions().dtype(kFloat64), &g).requires_grad_(true);
}

// Row-wise log_softmax of a [64, 64] input: 4096 inputs, 4096 outputs, a dense 64 x 64 block per
// row.
TensorFn op_under_test() {
  return [](const TensorList& in) { return TensorList{log_softmax(in[0], 1)}; };
}

void BM_Gradcheck_FullJacobian(benchmark::State& state) {
  Tensor x = input_4096();
  const TensorFn f = op_under_test();
  const auto o =
      GradcheckOptions().raise_exception(false).full_jacobian_max_numel(0);  // never switch to fast
  for (auto _ : state) {
    auto r = gradcheck(f, {x}, o);
    if (!r.ok || r.mode != "full Jacobian")
      state.SkipWithError("full-Jacobian gradcheck did not pass");
    benchmark::DoNotOptimize(r.max_abs_err);
  }
  state.counters["numel"] = static_cast<double>(x.numel());
}
BENCHMARK(BM_Gradcheck_FullJacobian)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_Gradcheck_FastMode(benchmark::State& state) {
  Tensor x = input_4096();
  const TensorFn f = op_under_test();
  const auto o = GradcheckOptions().raise_exception(false).fast_mode(true);
  for (auto _ : state) {
    auto r = gradcheck(f, {x}, o);
    if (!r.ok || r.mode != "fast (uᵀJv)") state.SkipWithError("fast-mode gradcheck did not pass");
    benchmark::DoNotOptimize(r.max_abs_err);
  }
  state.counters["numel"] = static_cast<double>(x.numel());
}
BENCHMARK(BM_Gradcheck_FastMode)->Unit(benchmark::kMillisecond);

// ---- anomaly mode off: the same ops with and without the check
// -------------------------------------

// Both paths record the library's own op structs (ops/internal/elementwise.hpp): Mul and Tanh.

// autograd::record without its last line (check_forward_anomaly): a build without anomaly mode.
template <class OpT, class... Args>
auto record_without_anomaly(const Site& site, Args&&... args) {
  std::vector<const Tensor*> inputs;
  (autograd::detail::collect(inputs, args), ...);
  const bool rec = autograd::should_record(inputs);
  auto op = std::make_shared<OpT>();
  op->site = site;
  op->set_recording(rec);
  auto out = [&] {
    AutoGradMode no_grad(false);
    return op->forward(std::forward<Args>(args)...);
  }();
  std::vector<Tensor*> outputs;
  autograd::detail::outputs_of(outputs, out);
  if (rec) {
    if (autograd::detail::backward_overrides_installed.load(std::memory_order_relaxed) != 0)
      op->set_backward_override(autograd::detail::find_backward_override(typeid(OpT)));
    autograd::connect(op, inputs, outputs);
  }
  return out;
}

// 32 recorded ops on small tensors (overhead-bound: the check's cost is most visible here).
template <bool kWithCheck>
void op_loop(benchmark::State& state) {
  autograd::set_detect_anomaly(false);
  Tensor x = randn({16}, TensorOptions().dtype(kFloat64)).requires_grad_(true);
  Tensor w = randn({16}, TensorOptions().dtype(kFloat64));
  const Site site = Site::current();
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 16; ++i) {
      if constexpr (kWithCheck) {
        y = record<Tanh>(site, record<Mul>(site, y, w));
      } else {
        y = record_without_anomaly<Tanh>(site, record_without_anomaly<Mul>(site, y, w));
      }
    }
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
void BM_OpLoop_AnomalyOff(benchmark::State& state) { op_loop<true>(state); }
void BM_OpLoop_WithoutAnomalyCheck(benchmark::State& state) { op_loop<false>(state); }
BENCHMARK(BM_OpLoop_WithoutAnomalyCheck);
BENCHMARK(BM_OpLoop_AnomalyOff);
BENCHMARK(BM_OpLoop_WithoutAnomalyCheck);
BENCHMARK(BM_OpLoop_AnomalyOff);

// For contrast: the same loop with anomaly mode on (every output's statistics are computed).
void BM_OpLoop_AnomalyOn(benchmark::State& state) {
  autograd::DetectAnomalyGuard guard;
  Tensor x = randn({16}, TensorOptions().dtype(kFloat64)).requires_grad_(true);
  Tensor w = randn({16}, TensorOptions().dtype(kFloat64));
  const Site site = Site::current();
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 16; ++i) y = record<Tanh>(site, record<Mul>(site, y, w));
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_OpLoop_AnomalyOn);

// Forward + backward through the engine with anomaly mode off (its per-node cost is the flag load
// below, twice per node) and on.
template <bool kOn>
void train_step(benchmark::State& state) {
  autograd::set_detect_anomaly(kOn);
  Tensor x = randn({16}, TensorOptions().dtype(kFloat64)).requires_grad_(true);
  Tensor w = randn({16}, TensorOptions().dtype(kFloat64));
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 16; ++i) y = tanh(y * w);
    y.sum().backward();
    x.zero_grad();
  }
  autograd::set_detect_anomaly(false);
}
void BM_ForwardBackward_AnomalyOff(benchmark::State& state) { train_step<false>(state); }
void BM_ForwardBackward_AnomalyOn(benchmark::State& state) { train_step<true>(state); }
BENCHMARK(BM_ForwardBackward_AnomalyOff);
BENCHMARK(BM_ForwardBackward_AnomalyOn);

void BM_AnomalyFlagLoad(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(autograd::is_anomaly_enabled());
}
BENCHMARK(BM_AnomalyFlagLoad);

}  // namespace
