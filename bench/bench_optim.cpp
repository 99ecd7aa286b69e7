// The optimizer update alone: one step of Adam / AdamW / SGD with momentum / RMSprop (centered,
// with momentum) / Adagrad over a float32 parameter, fused (one pass: backend/cpu/optim.cpp)
// against the composite (~10 elementwise passes and temporaries: optim/optimizers.cpp,
// kern::set_cpu_fused_step(false)), and against a memcpy that moves the same bytes (the floor of a
// one-pass update).
//
//   <opt>/<path>/n:<n>/threads:<t>   opt: adam, adamw, sgd_momentum, rmsprop_centered_momentum,
//                                     adagrad; path: fused, composite
//   memcpy/<opt>/n:<n>/threads:1      the bytes one fused step reads + writes, as one memcpy of
//                                     half of them: Adam reads p, g, m, v and writes p, m, v
//                                     (7 arrays: a memcpy of 3.5), SGD p, g, buf / p, buf (2.5),
//                                     RMSprop p, g, s, a, buf / p, s, a, buf (4.5), Adagrad
//                                     p, g, sum / p, sum (2.5)
// n: 200704 (the 784x256 weight of issue 28's MLP step; 800 KB per array) and 4M (16 MB).
//
// Run:  build/release/bench/bench_optim --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <cstring>
#include <gradlab/backend/kernels.hpp>
#include <gradlab/gradlab.hpp>
#include <memory>
#include <vector>

namespace gl = gradlab;

namespace {

enum class Opt { Adam, AdamW, SgdMomentum, RmspropCenteredMomentum, Adagrad };

// Arrays one fused step reads + writes.
int64_t arrays(Opt o) {
  switch (o) {
    case Opt::SgdMomentum: return 5;
    case Opt::RmspropCenteredMomentum: return 9;
    case Opt::Adagrad: return 5;
    default: return 7;
  }
}

std::unique_ptr<gl::optim::Optimizer> make(Opt o, const gl::Tensor& p) {
  const std::vector<gl::Tensor> ps = {p};
  switch (o) {
    case Opt::Adam: return std::make_unique<gl::optim::Adam>(ps, gl::optim::AdamOptions(1e-3));
    case Opt::AdamW: return std::make_unique<gl::optim::AdamW>(ps, gl::optim::AdamWOptions(1e-3));
    case Opt::RmspropCenteredMomentum:
      return std::make_unique<gl::optim::RMSprop>(ps, gl::optim::RMSpropOptions(1e-3).momentum(0.9).centered(true));
    case Opt::Adagrad: return std::make_unique<gl::optim::Adagrad>(ps, gl::optim::AdagradOptions(1e-2));
    case Opt::SgdMomentum: break;
  }
  return std::make_unique<gl::optim::SGD>(ps, gl::optim::SGDOptions(1e-3).momentum(0.9));
}

void step(benchmark::State& state, Opt o, bool fused) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int saved = gl::get_num_threads();
  gl::set_num_threads(threads);
  const bool was = gl::kern::set_cpu_fused_step(fused);
  gl::manual_seed(1);
  gl::Tensor p = gl::randn({n}).requires_grad_();
  p.mutable_grad() = gl::randn({n}) * 1e-2;
  auto opt = make(o, p);
  opt->step();  // the state exists from here on
  for (auto _ : state) {
    opt->step();
    benchmark::DoNotOptimize(p.data_ptr<float>());
  }
  gl::kern::set_cpu_fused_step(was);
  gl::set_num_threads(saved);
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)) * arrays(o));
}

// The same bytes as one fused step, moved by memcpy: halves of the traffic each way.
void memcpy_same_bytes(benchmark::State& state, double arrays) {
  const auto bytes = static_cast<size_t>(static_cast<double>(state.range(0)) * sizeof(float) * arrays);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(2 * bytes));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{200704}, int64_t{4} << 20})
    for (int64_t t : {1, 2}) b->Args({n, t});
  b->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void sizes_1t(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{200704}, int64_t{4} << 20}) b->Args({n});
  b->ArgNames({"n"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(step, fused, Opt::Adam, true)->Name("adam/fused")->Apply(sizes);
BENCHMARK_CAPTURE(step, composite, Opt::Adam, false)->Name("adam/composite")->Apply(sizes);
BENCHMARK_CAPTURE(memcpy_same_bytes, adam, 3.5)->Name("memcpy/adam")->Apply(sizes_1t);
BENCHMARK_CAPTURE(step, fused, Opt::AdamW, true)->Name("adamw/fused")->Apply(sizes);
BENCHMARK_CAPTURE(step, composite, Opt::AdamW, false)->Name("adamw/composite")->Apply(sizes);
BENCHMARK_CAPTURE(step, fused, Opt::SgdMomentum, true)->Name("sgd_momentum/fused")->Apply(sizes);
BENCHMARK_CAPTURE(step, composite, Opt::SgdMomentum, false)->Name("sgd_momentum/composite")->Apply(sizes);
BENCHMARK_CAPTURE(memcpy_same_bytes, sgd_momentum, 2.5)->Name("memcpy/sgd_momentum")->Apply(sizes_1t);
BENCHMARK_CAPTURE(step, fused, Opt::RmspropCenteredMomentum, true)
    ->Name("rmsprop_centered_momentum/fused")
    ->Apply(sizes);
BENCHMARK_CAPTURE(step, composite, Opt::RmspropCenteredMomentum, false)
    ->Name("rmsprop_centered_momentum/composite")
    ->Apply(sizes);
BENCHMARK_CAPTURE(memcpy_same_bytes, rmsprop_centered_momentum, 4.5)
    ->Name("memcpy/rmsprop_centered_momentum")
    ->Apply(sizes_1t);
BENCHMARK_CAPTURE(step, fused, Opt::Adagrad, true)->Name("adagrad/fused")->Apply(sizes);
BENCHMARK_CAPTURE(step, composite, Opt::Adagrad, false)->Name("adagrad/composite")->Apply(sizes);
BENCHMARK_CAPTURE(memcpy_same_bytes, adagrad, 2.5)->Name("memcpy/adagrad")->Apply(sizes_1t);

}  // namespace
