// CPU vs GPU, side by side in one program. Every group is <op>/<size>/<variant>; the CPU variant
// comes first, so tools/bench_ratios.py prints GPU / CPU and tools/gpu_check.sh's table the
// speed-up.
//
//   matmul/n:<n>/cpu            gradlab::matmul on CPU tensors (OpenBLAS)      counter GFLOP
//   matmul/n:<n>/gpu            gradlab::matmul on CUDA tensors (cuBLAS)       counter GFLOP
//   gemm_kernel/n:<n>/cublas    cuda::cublas_matmul: one cuBLAS SGEMM           counter GFLOP
//   gemm_kernel/n:<n>/tiled     cuda::tiled_matmul: the 32x32 shared-memory     counter GFLOP
//                               teaching kernel (checked against cuBLAS first)
//   add/n:<n>/{cpu,gpu}         z = x + y, float32                              counter GB
//                               (bytes read + written: 12 per element)
//   softmax_xent/<N>x<C>/{cpu,gpu}   cross_entropy(logits [N, C], targets [N]) forward +
//                               backward (softmax inside), float32             counter items (rows)
//   mlp_step/batch:<B>/{cpu,gpu}     one training step of bench_train's 64-128-10 ReLU MLP:
//                               zero_grad + forward + cross-entropy + backward + SGD step
//   index_check/<op>/{blocking,device}   GPU only: the same op with its index check waiting for
//                               its result at the op (cuda::set_blocking_index_checks(true): one
//                               blocking device-to-host copy per check, what every check cost
//                               before) vs on the device (the default: the error record is read
//                               at the next synchronization, here cuda::Timer::elapsed_ms after
//                               the stop event, so outside the timed interval, as a training
//                               loop pays it once per loss.item()). <op>:
//                                 index_select:<B>  B rows of a [65536, 128] float32 table
//                                 gather:<N>x<C>    logits.gather(1, target[:, None])
//                                 softmax_xent:<N>x<C>  cross_entropy forward + backward
//                                 mlp_step:<B>      the mlp_step above
//
// Timing. CPU: wall clock (UseRealTime; OpenBLAS uses its default thread count). GPU: CUDA events
// (cuda::Timer) around one call, after a warm-up, reported as manual time (UseManualTime); the
// event pair also covers gradlab's host-side dispatch whenever the GPU waits for it, which is what
// dominates small sizes. Every GPU result is checked against the CPU (or cuBLAS) once before it
// is timed; a mismatch marks that benchmark as an error.
// Statistics: this program has its own main() (not benchmark_main) only to change two defaults,
// --benchmark_repetitions=5 and --benchmark_display_aggregates_only=true: the console shows
// mean / median / stddev per benchmark, the --benchmark_out file every repetition (which
// tools/bench_ratios.py needs; stdout JSON would hold the aggregates only). Both flags can be
// given on the command line as usual. Repetitions() is not used: it adds "/repeats:N" to names.
// CPU matmul stops at n = 2048 (n = 8192 is over a TFLOP: seconds per call); the GPU goes on.
// Without a GPU only the CPU benchmarks are registered, and one line on stderr says why.
// NOTE: the host emulator (cuda::emulator) is never used here: its times mean nothing.
//
// Run:  build/release/bench/bench_cuda --benchmark_min_time=0.1 --benchmark_out=cuda.json
//       python3 tools/bench_ratios.py cuda.json

#include <benchmark/benchmark.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <gradlab/core/cuda.hpp>
#include <gradlab/backend/cuda/tiled_matmul.hpp>
#include <gradlab/gradlab.hpp>
#include <set>
#include <string>
#include <vector>

namespace gl = gradlab;

namespace {

constexpr int64_t kCpuMatmulMax = 2048;
constexpr int kWarmup = 2;

bool gpu_ready() { return gl::cuda::is_available() && !gl::cuda::emulator::enabled(); }

gl::Device dev(bool gpu) { return gpu ? gl::Device(gl::kCUDA) : gl::Device(gl::kCPU); }

// Google Benchmark calls a benchmark function several times per repetition (to find the
// iteration count); drawing 8192² normals each time would dominate the run. One input set is
// kept at a time, keyed by what made it.
const std::vector<gl::Tensor>& cached(const std::string& key,
                                      const std::function<std::vector<gl::Tensor>()>& make) {
  static std::string k;
  static std::vector<gl::Tensor> v;
  if (k != key) {
    v.clear();  // NOTE: free the old set first: two 256M-element sets may not fit together
    v = make();
    k = key;
  }
  return v;
}

// Checks a GPU result once per key (the first call of its benchmark); a mismatch fails it.
bool validated_once(benchmark::State& state, const std::string& key,
                    const std::function<double()>& max_rel_err, double tol) {
  static std::set<std::string> done;
  if (done.count(key)) return true;
  const double err = max_rel_err();
  if (!(err <= tol)) {
    state.SkipWithError(("GPU result disagrees: max |diff| / max |ref| = " + std::to_string(err) +
                         " > " + std::to_string(tol))
                            .c_str());
    return false;
  }
  done.insert(key);
  return true;
}

// max |got - want| / max |want|, computed where `want` lives.
double rel_err(const gl::Tensor& got, const gl::Tensor& want) {
  gl::NoGradGuard no_grad;
  const gl::Tensor g = got.to(want.device());
  const double scale = gl::max(gl::abs(want)).item<double>();
  return gl::max(gl::abs(g - want)).item<double>() / (scale > 0 ? scale : 1.0);
}

// The timed loop of every GPU benchmark: warm-up, then CUDA events around each call.
void gpu_loop(benchmark::State& state, const std::function<gl::Tensor()>& op) {
  for (int i = 0; i < kWarmup; ++i) op();
  gl::cuda::synchronize();
  gl::cuda::Timer timer;
  for (auto _ : state) {
    timer.start();
    gl::Tensor out = op();
    timer.stop();
    state.SetIterationTime(timer.elapsed_ms() * 1e-3);
  }
}

void cpu_loop(benchmark::State& state, const std::function<gl::Tensor()>& op) {
  for (auto _ : state) {
    gl::Tensor out = op();
    benchmark::DoNotOptimize(out.impl());
  }
}

void run(benchmark::State& state, bool gpu, const std::function<gl::Tensor()>& op) {
  if (gpu) {
    gpu_loop(state, op);
  } else {
    cpu_loop(state, op);
  }
}

// ---- matmul ----------------------------------------------------------------------------------

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP"] = benchmark::Counter(2.0 * static_cast<double>(n) * n * n * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<gl::Tensor> matmul_inputs(int64_t n, bool gpu) {
  gl::Generator gen(static_cast<uint64_t>(n));
  gl::Tensor a = gl::randn({n, n}, {}, &gen), b = gl::randn({n, n}, {}, &gen);
  if (!gpu) return {a, b};
  return {a, b, a.cuda(), b.cuda()};  // host copies kept for the check
}

void bm_matmul(benchmark::State& state, int64_t n, bool gpu) {
  const auto& in = cached("matmul:" + std::to_string(n) + (gpu ? ":gpu" : ":cpu"),
                          [&] { return matmul_inputs(n, gpu); });
  if (gpu) {
    // Against the CPU only where the CPU product is quick; above that gemm_kernel checks it.
    if (n <= 1024 &&
        !validated_once(
            state, "matmul:" + std::to_string(n),
            [&] { return rel_err(gl::matmul(in[2], in[3]), gl::matmul(in[0], in[1])); }, 1e-3))
      return;
    run(state, true, [&] { return gl::matmul(in[2], in[3]); });
  } else {
    run(state, false, [&] { return gl::matmul(in[0], in[1]); });
  }
  set_flops(state, n);
}

void bm_gemm_kernel(benchmark::State& state, int64_t n, bool tiled) {
  const auto& in =
      cached("matmul:" + std::to_string(n) + ":gpu", [&] { return matmul_inputs(n, true); });
  const gl::Tensor &a = in[2], &b = in[3];
  if (tiled &&
      !validated_once(
          state, "tiled:" + std::to_string(n),
          [&] { return rel_err(gl::cuda::tiled_matmul(a, b), gl::cuda::cublas_matmul(a, b)); },
          1e-4))
    return;
  gpu_loop(state,
           [&] { return tiled ? gl::cuda::tiled_matmul(a, b) : gl::cuda::cublas_matmul(a, b); });
  set_flops(state, n);
}

// ---- elementwise -----------------------------------------------------------------------------

void bm_add(benchmark::State& state, int64_t n, bool gpu) {
  // Values do not matter for the speed of an add; full() is fast even at 256M elements.
  const auto& in = cached("add:" + std::to_string(n) + (gpu ? ":gpu" : ":cpu"), [&] {
    return std::vector<gl::Tensor>{gl::full({n}, 1.5f, dev(gpu)), gl::full({n}, -0.25f, dev(gpu))};
  });
  if (gpu && !validated_once(
                 state, "add:" + std::to_string(n),
                 [&] { return rel_err((in[0] + in[1]).cpu(), gl::full({n}, 1.25f)); }, 0.0))
    return;
  run(state, gpu, [&] { return in[0] + in[1]; });
  // 4n + 4n bytes read, 4n written per call.
  state.counters["GB"] = benchmark::Counter(12.0 * static_cast<double>(n) * 1e-9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

// ---- softmax + cross-entropy -----------------------------------------------------------------

std::vector<gl::Tensor> xent_inputs(int64_t rows, int64_t classes, bool gpu) {
  gl::Generator gen(7);
  gl::Tensor logits = gl::randn({rows, classes}, {}, &gen);
  gl::Tensor target = gl::randint(0, classes, {rows}, {}, &gen);
  std::vector<gl::Tensor> v{logits.requires_grad_(true), target};
  if (gpu) {
    v.push_back(logits.detach().cuda().requires_grad_(true));
    v.push_back(target.cuda());
  }
  return v;
}

// loss = cross_entropy(logits, target); loss.backward(). Returns the gradient.
gl::Tensor xent_step(gl::Tensor& logits, const gl::Tensor& target) {
  logits.zero_grad();  // set to none: each call writes a fresh gradient, nothing accumulates
  gl::Tensor loss = gl::nn::functional::cross_entropy(logits, target);
  loss.backward();
  return logits.grad();
}

void bm_xent(benchmark::State& state, int64_t rows, int64_t classes, bool gpu) {
  const std::string key = "xent:" + std::to_string(rows) + "x" + std::to_string(classes);
  auto in = cached(key + (gpu ? ":gpu" : ":cpu"), [&] { return xent_inputs(rows, classes, gpu); });
  if (gpu) {
    if (!validated_once(
            state, key, [&] { return rel_err(xent_step(in[2], in[3]), xent_step(in[0], in[1])); },
            1e-4))
      return;
    run(state, true, [&] { return xent_step(in[2], in[3]); });
  } else {
    run(state, false, [&] { return xent_step(in[0], in[1]); });
  }
  state.SetItemsProcessed(state.iterations() * rows);
}

// ---- one training step -----------------------------------------------------------------------

void bm_mlp_step(benchmark::State& state, int64_t batch, bool gpu) {
  gl::manual_seed(0);
  gl::nn::Sequential model(gl::nn::Linear(64, 128), gl::nn::ReLU(), gl::nn::Linear(128, 10));
  if (gpu) model->to(gl::Device(gl::kCUDA));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  gl::nn::CrossEntropyLoss criterion;
  const gl::Tensor x = gl::randn({batch, 64}, dev(gpu));
  const gl::Tensor y = gl::randint(0, 10, {batch}, dev(gpu));
  run(state, gpu, [&] {
    opt.zero_grad();
    gl::Tensor loss = criterion(model(x), y);
    loss.backward();
    opt.step();
    return loss;
  });
  state.SetItemsProcessed(state.iterations() * batch);
}

// ---- index checks: blocking at the op vs on the device -------------------------------------------

// Blocking (or device-side) index checks for one scope.
struct BlockingChecks {
  explicit BlockingChecks(bool on) : was_(gl::cuda::blocking_index_checks()) {
    gl::cuda::set_blocking_index_checks(on);
  }
  ~BlockingChecks() { gl::cuda::set_blocking_index_checks(was_); }
  BlockingChecks(const BlockingChecks&) = delete;
  BlockingChecks& operator=(const BlockingChecks&) = delete;
  bool was_;
};

void bm_check_index_select(benchmark::State& state, int64_t rows, bool blocking) {
  const std::string key = "index_select:" + std::to_string(rows);
  auto in = cached(key, [&] {
    gl::Generator gen(3);
    gl::Tensor table = gl::randn({65536, 128}, {}, &gen);
    gl::Tensor idx = gl::randint(0, 65536, {rows}, {}, &gen);
    return std::vector<gl::Tensor>{table, idx, table.cuda(), idx.cuda()};
  });
  BlockingChecks checks(blocking);
  if (!validated_once(
          state, key + (blocking ? ":blocking" : ":device"),
          [&] { return rel_err(gl::index_select(in[2], 0, in[3]), gl::index_select(in[0], 0, in[1])); }, 0.0))
    return;
  run(state, true, [&] { return gl::index_select(in[2], 0, in[3]); });
  state.SetItemsProcessed(state.iterations() * rows);
}

void bm_check_gather(benchmark::State& state, int64_t rows, int64_t classes, bool blocking) {
  const std::string key = "xent:" + std::to_string(rows) + "x" + std::to_string(classes);
  auto in = cached(key + ":gpu", [&] { return xent_inputs(rows, classes, true); });
  BlockingChecks checks(blocking);
  gl::NoGradGuard no_grad;
  auto op = [&](int k) { return gl::gather(in[k], 1, in[k + 1].unsqueeze(1)); };
  if (!validated_once(state, "gather:" + key + (blocking ? ":blocking" : ":device"),
                      [&] { return rel_err(op(2), op(0)); }, 0.0))
    return;
  run(state, true, [&] { return op(2); });
  state.SetItemsProcessed(state.iterations() * rows);
}

void bm_check_xent(benchmark::State& state, int64_t rows, int64_t classes, bool blocking) {
  BlockingChecks checks(blocking);
  bm_xent(state, rows, classes, true);
}

void bm_check_mlp_step(benchmark::State& state, int64_t batch, bool blocking) {
  BlockingChecks checks(blocking);
  bm_mlp_step(state, batch, true);
}

// ---- registration ----------------------------------------------------------------------------

std::string mega(int64_t n) { return std::to_string(n >> 20) + "M"; }

void reg(const std::string& name, bool gpu, benchmark::TimeUnit unit,
         const std::function<void(benchmark::State&)>& fn) {
  // An exception (a CUDA error, out of memory) fails this benchmark only, not the whole run.
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& s) {
    try {
      fn(s);
    } catch (const std::exception& e) {
      s.SkipWithError(e.what());
    }
  });
  if (gpu) {
    b->UseManualTime();
  } else {
    b->UseRealTime();
  }
  b->Unit(unit);
}

void register_all() {
  const bool gpu = gpu_ready();
  if (gpu) {
    std::fprintf(stderr,
                 "bench_cuda: GPU %s; CPU matmul stops at n = %lld (larger n takes "
                 "seconds per call on the CPU), the GPU runs n = 512 .. 8192\n",
                 gl::cuda::device_name().c_str(), static_cast<long long>(kCpuMatmulMax));
    benchmark::AddCustomContext("gpu", gl::cuda::device_name());
  } else {
    std::fprintf(stderr,
                 "bench_cuda: GPU benchmarks SKIPPED: %s. Only the CPU benchmarks are "
                 "registered (CPU matmul up to n = %lld).\n",
                 gl::cuda::unavailable_reason().c_str(), static_cast<long long>(kCpuMatmulMax));
    benchmark::AddCustomContext("gpu", "skipped: " + gl::cuda::unavailable_reason());
  }
  benchmark::AddCustomContext("cpu_matmul_max_n", std::to_string(kCpuMatmulMax));
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;

  for (int64_t n : {512, 1024, 2048, 4096, 8192}) {
    const std::string g = "matmul/n:" + std::to_string(n) + "/";
    if (n <= kCpuMatmulMax)
      reg(g + "cpu", false, kMillisecond, [n](auto& s) { bm_matmul(s, n, false); });
    if (gpu) reg(g + "gpu", true, kMillisecond, [n](auto& s) { bm_matmul(s, n, true); });
  }
  if (gpu) {
    for (int64_t n : {512, 1024, 2048, 4096, 8192}) {
      const std::string g = "gemm_kernel/n:" + std::to_string(n) + "/";
      reg(g + "cublas", true, kMillisecond, [n](auto& s) { bm_gemm_kernel(s, n, false); });
      reg(g + "tiled", true, kMillisecond, [n](auto& s) { bm_gemm_kernel(s, n, true); });
    }
  }
  for (int64_t n : {int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20, int64_t{64} << 20,
                    int64_t{256} << 20}) {
    const std::string g = "add/n:" + mega(n) + "/";
    reg(g + "cpu", false, kMicrosecond, [n](auto& s) { bm_add(s, n, false); });
    if (gpu) reg(g + "gpu", true, kMicrosecond, [n](auto& s) { bm_add(s, n, true); });
  }
  const std::pair<int64_t, int64_t> xent_shapes[] = {
      {4096, 10}, {4096, 1000}, {16384, 100}, {65536, 10}, {65536, 1000}};
  for (auto [rows, classes] : xent_shapes) {
    const std::string g =
        "softmax_xent/" + std::to_string(rows) + "x" + std::to_string(classes) + "/";
    reg(g + "cpu", false, kMillisecond, [=](auto& s) { bm_xent(s, rows, classes, false); });
    if (gpu) reg(g + "gpu", true, kMillisecond, [=](auto& s) { bm_xent(s, rows, classes, true); });
  }
  for (int64_t batch : {64, 1024, 8192}) {
    const std::string g = "mlp_step/batch:" + std::to_string(batch) + "/";
    reg(g + "cpu", false, kMicrosecond, [batch](auto& s) { bm_mlp_step(s, batch, false); });
    if (gpu) reg(g + "gpu", true, kMicrosecond, [batch](auto& s) { bm_mlp_step(s, batch, true); });
  }
  if (!gpu) return;
  // The baseline (first variant) of each group is the blocking check.
  const char* variants[] = {"blocking", "device"};
  for (int64_t rows : {256, 4096}) {
    const std::string g = "index_check/index_select:" + std::to_string(rows) + "/";
    for (int v = 0; v < 2; ++v)
      reg(g + variants[v], true, kMicrosecond, [=](auto& s) { bm_check_index_select(s, rows, v == 0); });
  }
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{4096, 10}, {65536, 1000}}) {
    const std::string shape = std::to_string(rows) + "x" + std::to_string(classes) + "/";
    for (int v = 0; v < 2; ++v)
      reg("index_check/gather:" + shape + variants[v], true, kMicrosecond,
          [=](auto& s) { bm_check_gather(s, rows, classes, v == 0); });
    for (int v = 0; v < 2; ++v)
      reg("index_check/softmax_xent:" + shape + variants[v], true, kMicrosecond,
          [=](auto& s) { bm_check_xent(s, rows, classes, v == 0); });
  }
  for (int64_t batch : {64, 1024}) {
    const std::string g = "index_check/mlp_step:" + std::to_string(batch) + "/";
    for (int v = 0; v < 2; ++v)
      reg(g + variants[v], true, kMicrosecond, [=](auto& s) { bm_check_mlp_step(s, batch, v == 0); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Defaults first, so the same flags given on the command line (parsed later) win.
  std::string reps = "--benchmark_repetitions=5",
              aggregates = "--benchmark_display_aggregates_only=true";
  std::vector<char*> args(argv, argv + argc);
  args.insert(args.begin() + 1, {reps.data(), aggregates.data()});
  args.push_back(nullptr);
  int n = argc + 2;
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
