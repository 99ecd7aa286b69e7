// Core speed of gradlab against the baselines it must keep up with, side by side in one program
// so a single run gives the ratios (tools/bench_ratios.py prints them from
// --benchmark_format=json):
//
//   matmul/n:<n>/threads:<t>/cblas_sgemm  C = A B through a direct cblas_sgemm call on OpenBLAS's
//                                    own t threads (openblas_set_num_threads(t))  counter GFLOP
//   matmul/n:<n>/threads:<t>/gradlab gradlab::matmul at set_num_threads(t) (allocates C, as
//                                    torch.matmul; split over gradlab's threads)  counter GFLOP
//   relu(x*2+1)/n:<n>/memcpy         a plain copy of the same bytes                 counter GB
//   relu(x*2+1)/n:<n>/fused_loop     one hand-written pass y = max(2x + 1, 0)       counter GB
//   relu(x*2+1)/n:<n>/gradlab        gradlab::relu(x * 2 + 1): three ops, 3 passes  counter GB
//   relu(x*2+1)/n:<n>/gradlab_mul    gradlab x * 2 alone: one op, one pass          counter GB
//   unary/n:<n>/memcpy               a plain copy of the same bytes                 counter GB
//   unary/n:<n>/<op>                 gradlab exp, tanh, sigmoid, gelu(x) (one op each but gelu) counter GB
//   binary/n:<n>/<op>                gradlab a + b, max(a, b), a > b (two tensors)   counter GB
//   tiny_add/n:1/...                 1-element add: no grad, forward with grad,     counter per_op
//                                    forward + backward, a chain of 100 + backward
//
// GFLOP and GB are rates (printed as GFLOP=103/s). Every GB figure counts the same bytes (4n read +
// 4n written), so elementwise ratios are ratios of time. per_op is the wall time of one op.
// Times are wall clock (UseRealTime): the matmul rows use t threads. The other rows run at the
// process's count (GRADLAB_NUM_THREADS).
//
// Run:  GRADLAB_NUM_THREADS=1 build/release/bench/bench_core --benchmark_min_time=0.2

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <gradlab/gradlab.hpp>
#include <random>
#include <string>
#include <vector>

namespace gl = gradlab;

namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// ---- (a) matmul ------------------------------------------------------------------------------

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP"] = benchmark::Counter(2.0 * static_cast<double>(n) * n * n * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// The row's thread count t for one row; the process's count (and OpenBLAS at 1) afterwards.
struct RowThreads {
  int saved = gl::get_num_threads();
  RowThreads(int t, bool openblas) {
    gl::set_num_threads(t);
    if (openblas) openblas_set_num_threads(t);  // the baseline: OpenBLAS's own threads
  }
  ~RowThreads() { gl::set_num_threads(saved); }
};

void matmul_cblas(benchmark::State& state, int64_t n, int t) {
  const RowThreads threads(t, true);
  const std::vector<float> a = random_floats(n * n, 1), b = random_floats(n * n, 2);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, n);
}

void matmul_gradlab(benchmark::State& state, int64_t n, int t) {
  const RowThreads threads(t, false);
  gl::manual_seed(0);
  const gl::Tensor a = gl::randn({n, n}), b = gl::randn({n, n});
  for (auto _ : state) {
    gl::Tensor c = gl::matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  set_flops(state, n);
}

// ---- (b) elementwise -------------------------------------------------------------------------

void set_bytes(benchmark::State& state, int64_t n) {
  // 4n bytes read + 4n bytes written per iteration, for every variant.
  state.counters["GB"] = benchmark::Counter(2.0 * 4.0 * static_cast<double>(n) * 1e-9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

void ew_memcpy(benchmark::State& state, int64_t n) {
  const std::vector<float> x = random_floats(n, 3);
  std::vector<float> y(n);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), sizeof(float) * n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

void ew_fused_loop(benchmark::State& state, int64_t n) {
  const std::vector<float> x = random_floats(n, 3);
  std::vector<float> y(n);
  for (auto _ : state) {
    const float* px = x.data();
    float* py = y.data();
    for (int64_t i = 0; i < n; ++i) py[i] = std::max(px[i] * 2.0f + 1.0f, 0.0f);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

void ew_gradlab(benchmark::State& state, int64_t n) {
  gl::manual_seed(0);
  const gl::Tensor x = gl::randn({n});
  for (auto _ : state) {
    gl::Tensor y = gl::relu(x * 2 + 1);
    benchmark::DoNotOptimize(y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

void ew_gradlab_mul(benchmark::State& state, int64_t n) {
  gl::manual_seed(0);
  const gl::Tensor x = gl::randn({n});
  for (auto _ : state) {
    gl::Tensor y = x * 2;
    benchmark::DoNotOptimize(y.data_ptr<float>());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

// One gradlab op per iteration; the GB counter counts 4n read + 4n written like memcpy's, so the
// ratio to memcpy is a ratio of time (binary ops read 8n bytes: they cost more by design).
template <class F>
void ew_op(benchmark::State& state, int64_t n, F f) {
  gl::manual_seed(0);
  const gl::Tensor a = gl::randn({n}), b = gl::randn({n});
  for (auto _ : state) {
    gl::Tensor y = f(a, b);
    benchmark::DoNotOptimize(y.impl());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n);
}

// ---- (c) tiny-op overhead --------------------------------------------------------------------

void set_per_op(benchmark::State& state, double ops_per_iteration) {
  // kInvert: seconds per op (printed with an SI suffix: per_op=1.5us is 1.5 µs per op).
  state.counters["per_op"] =
      benchmark::Counter(ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate |
                                                benchmark::Counter::kInvert);
}

// c = a + b on 1-element tensors that do not require grad: the floor (no graph is recorded).
void tiny_add_nograd(benchmark::State& state) {
  const gl::Tensor a = gl::full({1}, 1.0f), b = gl::full({1}, 2.0f);
  for (auto _ : state) {
    gl::Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
  set_per_op(state, 1);
}

// Same add with requires_grad inputs: forward records one AddBackward0 node.
void tiny_add_forward(benchmark::State& state) {
  const gl::Tensor a = gl::full({1}, 1.0f, gl::requires_grad()),
                   b = gl::full({1}, 2.0f, gl::requires_grad());
  for (auto _ : state) {
    gl::Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
  set_per_op(state, 1);
}

// Forward + backward of one add: c = a + b; c.backward() (a.grad and b.grad accumulate).
void tiny_add_forward_backward(benchmark::State& state) {
  gl::Tensor a = gl::full({1}, 1.0f, gl::requires_grad()),
             b = gl::full({1}, 2.0f, gl::requires_grad());
  for (auto _ : state) {
    gl::Tensor c = a + b;
    c.backward();
  }
  benchmark::DoNotOptimize(a.grad().impl());
  set_per_op(state, 1);
}

// A chain of 100 adds and one backward: the per-op cost once backward's fixed cost is spread.
void tiny_add_chain100_forward_backward(benchmark::State& state) {
  constexpr int kOps = 100;
  gl::Tensor a = gl::full({1}, 1.0f, gl::requires_grad()),
             b = gl::full({1}, 2.0f, gl::requires_grad());
  for (auto _ : state) {
    gl::Tensor y = a;
    for (int i = 0; i < kOps; ++i) y = y + b;
    y.backward();
  }
  benchmark::DoNotOptimize(a.grad().impl());
  set_per_op(state, kOps);
}

std::string ew_label(int64_t n) { return std::to_string(n >> 20) + "M"; }

// Baseline and gradlab registered next to each other, so they print next to each other.
const bool kRegistered = [] {
  for (int64_t n : {256, 512, 1024, 2048})
    for (int t : {1, 2}) {
      const std::string g = "matmul/n:" + std::to_string(n) + "/threads:" + std::to_string(t) + "/";
      benchmark::RegisterBenchmark((g + "cblas_sgemm").c_str(), matmul_cblas, n, t)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((g + "gradlab").c_str(), matmul_gradlab, n, t)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  for (int64_t n : {int64_t{1} << 20, int64_t{16} << 20}) {
    const std::string g = "relu(x*2+1)/n:" + ew_label(n) + "/";
    benchmark::RegisterBenchmark((g + "memcpy").c_str(), ew_memcpy, n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((g + "fused_loop").c_str(), ew_fused_loop, n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((g + "gradlab").c_str(), ew_gradlab, n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((g + "gradlab_mul").c_str(), ew_gradlab_mul, n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  {
    const int64_t n = int64_t{1} << 20;
    using Fn = gl::Tensor (*)(const gl::Tensor&, const gl::Tensor&);
    const std::pair<const char*, Fn> unary[] = {
        {"exp", [](const gl::Tensor& a, const gl::Tensor&) { return gl::exp(a); }},
        {"tanh", [](const gl::Tensor& a, const gl::Tensor&) { return gl::tanh(a); }},
        {"sigmoid", [](const gl::Tensor& a, const gl::Tensor&) { return gl::sigmoid(a); }},
        {"gelu", [](const gl::Tensor& a, const gl::Tensor&) { return gl::gelu(a); }}};
    const std::pair<const char*, Fn> binary[] = {
        {"add", [](const gl::Tensor& a, const gl::Tensor& b) { return a + b; }},
        {"maximum", [](const gl::Tensor& a, const gl::Tensor& b) { return gl::maximum(a, b); }},
        {"gt", [](const gl::Tensor& a, const gl::Tensor& b) { return a > b; }}};
    benchmark::RegisterBenchmark("unary/n:1M/memcpy", ew_memcpy, n)->UseRealTime()->Unit(benchmark::kMicrosecond);
    for (auto [name, f] : unary)
      benchmark::RegisterBenchmark((std::string("unary/n:1M/") + name).c_str(), ew_op<Fn>, n, f)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    for (auto [name, f] : binary)
      benchmark::RegisterBenchmark((std::string("binary/n:1M/") + name).c_str(), ew_op<Fn>, n, f)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("tiny_add/n:1/no_grad", tiny_add_nograd)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("tiny_add/n:1/forward", tiny_add_forward)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("tiny_add/n:1/forward_backward", tiny_add_forward_backward)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("tiny_add/n:1/chain100_forward_backward",
                               tiny_add_chain100_forward_backward)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
