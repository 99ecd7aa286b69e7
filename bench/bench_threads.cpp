// Intra-op threads: each workload at 1 and 2 gradlab threads in one run. The threads:2 row
// carries a counter `speedup` = (1-thread time) / (2-thread time) from the same run; with
// --benchmark_repetitions, tools/bench_ratios.py prints the same ratio from medians
// ("vs first": the threads:1 row is the group's baseline).
//
//   add/n:16M/threads:<t>            a + b, float32                  (issue 28: 2 vs 1 >= 1.7x)
//   sum/n:16M/threads:<t>            sum(x), float32 (fixed blocks, double partial sums)
//   <op>/n:1M/threads:<t>            exp, sigmoid, tanh, gelu
//   softmax/16384x1024/threads:<t>   softmax(x, -1), composed (amax, exp, sum, div)
//   region/tiny/parallel_for:<rt>    one parallel_for over 2 one-item chunks at 2 threads: the
//                                    overhead of a region on gradlab's pool, and on OpenMP when
//                                    the library has it (detail::set_runtime;
//                                    GRADLAB_THREAD_RUNTIME)
//   region/tiny/openmp               a bare `#pragma omp parallel for` (when CMake found OpenMP)
//
// Run:  build/release/bench/bench_threads --benchmark_repetitions=5 --benchmark_format=json
//           > threads.json && python3 tools/bench_ratios.py threads.json

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <gradlab/backend/cpu/parallel.hpp>
#include <gradlab/gradlab.hpp>
#include <map>
#include <string>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace gl = gradlab;

namespace {

using Op = std::function<gl::Tensor(const gl::Tensor&)>;

// Seconds per iteration of the threads:1 run of each group, for the threads:2 row's `speedup`.
std::map<std::string, double>& one_thread_time() {
  static std::map<std::string, double> m;
  return m;
}

void run_op(benchmark::State& state, std::string group, gl::Shape shape, Op op, int threads) {
  gl::manual_seed(1);
  const gl::Tensor x = gl::randn(shape);
  const int saved = gl::get_num_threads();
  gl::set_num_threads(threads);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    gl::Tensor y = op(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  gl::set_num_threads(saved);
  const double per_iter = seconds / static_cast<double>(state.iterations());
  if (threads == 1)
    one_thread_time()[group] = per_iter;
  else if (one_thread_time().count(group))
    state.counters["speedup"] = one_thread_time()[group] / per_iter;
}

void region_runtime(benchmark::State& state, std::string runtime) {
  const int saved = gl::get_num_threads();
  const std::string saved_rt = gl::cpu::detail::runtime_name();
  gl::set_num_threads(2);
  gl::cpu::detail::set_runtime(runtime);
  std::atomic<int64_t> work{0};
  for (auto _ : state) gl::cpu::parallel_for(0, 2, 1, [&](int64_t b, int64_t e) { work += e - b; });
  gl::cpu::detail::set_runtime(saved_rt);
  gl::set_num_threads(saved);
  benchmark::DoNotOptimize(work.load());
}

#if defined(_OPENMP)
void region_openmp(benchmark::State& state) {
  std::atomic<int64_t> work{0};
  for (auto _ : state) {
#pragma omp parallel for num_threads(2)
    for (int k = 0; k < 2; ++k) work += 1;
  }
  benchmark::DoNotOptimize(work.load());
}
#endif

const int kRegistered = [] {
  const gl::Tensor b = gl::randn({int64_t{1} << 24});
  struct Row {
    std::string group;
    gl::Shape shape;
    Op op;
  };
  const std::vector<Row> rows = {
      {"add/n:16M", {int64_t{1} << 24}, [b](const gl::Tensor& x) { return x + b; }},
      {"sum/n:16M", {int64_t{1} << 24}, [](const gl::Tensor& x) { return gl::sum(x); }},
      {"exp/n:1M", {int64_t{1} << 20}, [](const gl::Tensor& x) { return gl::exp(x); }},
      {"sigmoid/n:1M", {int64_t{1} << 20}, [](const gl::Tensor& x) { return gl::sigmoid(x); }},
      {"tanh/n:1M", {int64_t{1} << 20}, [](const gl::Tensor& x) { return gl::tanh(x); }},
      {"gelu/n:1M", {int64_t{1} << 20}, [](const gl::Tensor& x) { return gl::gelu(x); }},
      {"softmax/16384x1024", {16384, 1024}, [](const gl::Tensor& x) { return gl::softmax(x, -1); }},
  };
  for (const Row& r : rows)
    for (int t : {1, 2})
      benchmark::RegisterBenchmark((r.group + "/threads:" + std::to_string(t)).c_str(), run_op,
                                   r.group, r.shape, r.op, t)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("region/tiny/parallel_for:pool", region_runtime, "pool")
      ->UseRealTime();
  if (std::string(gl::cpu::detail::runtime_name()) == "openmp")
    benchmark::RegisterBenchmark("region/tiny/parallel_for:openmp", region_runtime, "openmp")
        ->UseRealTime();
#if defined(_OPENMP)
  benchmark::RegisterBenchmark("region/tiny/openmp", region_openmp)->UseRealTime();
#endif
  return 0;
}();

}  // namespace
