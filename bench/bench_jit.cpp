// jit::compile against eager gradlab and the memory-bandwidth baseline, side by side in one
// program (ratios come from one run):
//
//   relu(x*2+1)/n:16M/memcpy        a plain copy of the same bytes (64 MiB in, 64 MiB out)  counter GB
//   relu(x*2+1)/n:16M/eager         gradlab relu(x * 2 + 1): 3 ops, 3 passes                 counter GB
//   relu(x*2+1)/n:16M/compiled      jit::compile of the same function: one fused pass        counter GB
//   gelu/n:4M/{eager,compiled}             gelu(x) = 0.5 x (1 + erf(x / √2)): 5 ops, one erf
//   gelu_chain/n:4M/{eager,compiled}       gelu(x) * sigmoid(x) - tanh(x) / 3: three transcendental
//                                          functions, so compute dominates and fusion gains less
//   layernorm_chain/4096x1024/{eager,compiled}  (x - mean) / sqrt(var + eps) * w + b, written out
//   mlp_step/{eager,compiled}       one training step of a 64-256-256-10 GELU MLP (batch 256):
//                                   forward, MSE loss, backward, SGD update
//
// The GB counters count 4n read + 4n written for every relu(x*2+1) row (ratios are ratios of time).
// The compiled rows call a CompiledFunction already traced (the first call, outside the timing).
//
// Run:  OPENBLAS_NUM_THREADS=1 build/release/bench/bench_jit --benchmark_min_time=0.3

#include <benchmark/benchmark.h>

#include <cstring>
#include <gradlab/gradlab.hpp>
#include <vector>

namespace gl = gradlab;

namespace {

void set_bytes(benchmark::State& state, int64_t n) {
  state.counters["GB"] = benchmark::Counter(2.0 * 4.0 * static_cast<double>(n) * 1e-9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

constexpr int64_t k16M = int64_t{16} << 20;

void relu_memcpy(benchmark::State& state) {
  gl::manual_seed(0);
  const gl::Tensor x = gl::randn({k16M});
  std::vector<float> y(k16M);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data_ptr<float>(), sizeof(float) * k16M);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, k16M);
}

gl::Tensor relu_affine(const gl::Tensor& x) { return gl::relu(x * 2 + 1); }

template <bool Compiled>
void relu_affine_bench(benchmark::State& state) {
  gl::manual_seed(0);
  const gl::Tensor x = gl::randn({k16M});
  auto f = gl::jit::compile(relu_affine);
  f(x);
  for (auto _ : state) {
    gl::Tensor y = Compiled ? f(x) : relu_affine(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  set_bytes(state, k16M);
}

gl::Tensor gelu_chain(const gl::Tensor& x) { return gl::gelu(x) * gl::sigmoid(x) - gl::tanh(x) / 3; }

gl::Tensor plain_gelu(const gl::Tensor& x) { return gl::gelu(x); }

template <bool Compiled, gl::Tensor (*Fn)(const gl::Tensor&)>
void gelu_bench(benchmark::State& state) {
  gl::manual_seed(0);
  const gl::Tensor x = gl::randn({int64_t{4} << 20});
  auto f = gl::jit::compile(Fn);
  f(x);
  for (auto _ : state) {
    gl::Tensor y = Compiled ? f(x) : Fn(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
}

std::vector<gl::Tensor> layer_norm_chain(const std::vector<gl::Tensor>& in) {
  const gl::Tensor& x = in[0];
  const double D = static_cast<double>(x.size(-1));
  gl::Tensor xc = x - x.sum({-1}, true) / D;
  gl::Tensor var = (xc * xc).sum({-1}, true) / D;
  return {xc / gl::sqrt(var + 1e-5) * in[1] + in[2]};
}

template <bool Compiled>
void layer_norm_bench(benchmark::State& state) {
  gl::manual_seed(0);
  const std::vector<gl::Tensor> in = {gl::randn({4096, 1024}), gl::randn({1024}), gl::randn({1024})};
  auto f = gl::jit::compile(layer_norm_chain);
  f(in);
  for (auto _ : state) {
    gl::Tensor y = Compiled ? f(in)[0] : layer_norm_chain(in)[0];
    benchmark::DoNotOptimize(y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
}

template <bool Compiled>
void mlp_step_bench(benchmark::State& state) {
  gl::manual_seed(0);
  gl::nn::Sequential model(gl::nn::Linear(64, 256), gl::nn::GELU(), gl::nn::Linear(256, 256),
                           gl::nn::GELU(), gl::nn::Linear(256, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  const gl::Tensor x = gl::randn({256, 64}), t = gl::randn({256, 10});
  auto loss_fn = [&](const std::vector<gl::Tensor>& in) {
    gl::Tensor d = model->forward(in[0]) - in[1];
    return std::vector<gl::Tensor>{(d * d).mean()};
  };
  auto f = gl::jit::compile(loss_fn);
  f({x, t});
  for (auto _ : state) {
    opt.zero_grad();
    gl::Tensor loss = Compiled ? f({x, t})[0] : loss_fn({x, t})[0];
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
}

[[maybe_unused]] const bool registered = [] {
  benchmark::RegisterBenchmark("relu(x*2+1)/n:16M/memcpy", relu_memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("relu(x*2+1)/n:16M/eager", relu_affine_bench<false>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("relu(x*2+1)/n:16M/compiled", relu_affine_bench<true>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gelu/n:4M/eager", gelu_bench<false, plain_gelu>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gelu/n:4M/compiled", gelu_bench<true, plain_gelu>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gelu_chain/n:4M/eager", gelu_bench<false, gelu_chain>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gelu_chain/n:4M/compiled", gelu_bench<true, gelu_chain>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("layernorm_chain/4096x1024/eager", layer_norm_bench<false>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("layernorm_chain/4096x1024/compiled", layer_norm_bench<true>)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mlp_step/eager", mlp_step_bench<false>)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mlp_step/compiled", mlp_step_bench<true>)->UseRealTime()->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
