// Issue 28's side-by-side table: ONE source compiled twice, so gradlab and LibTorch 1.13 run the
// same code (built only when find_package(Torch) succeeds; bench/CMakeLists.txt):
//   bench_vs_libtorch_gradlab   #include <gradlab/gradlab.hpp> + namespace torch = gradlab
//   bench_vs_libtorch_torch     #include <torch/torch.h> (GRADLAB_BENCH_LIBTORCH=1)
//
// Rows (float32), each at threads:1 and threads:2 (wall time: UseRealTime):
//   memcpy_16M            std::memcpy of 16M floats: the machine's bandwidth, in the same run
//   memcpy_16M_split      the same copy split over the row's thread count (std::threads): how the
//                         bandwidth grows with a second thread
//   gelu_1M exp_1M sigmoid_1M tanh_1M add_1M   y = f(x) (a + b) on 1M elements
//   gelu_backward_1M      dx = autograd::grad(gelu(x), x, dy): the forward, then its backward
//                         (erf and exp); not a row of tools/vs_libtorch.py's table
//   gelu_16M exp_16M      y = f(x) on 16M elements: elementwise ops bound by arithmetic, not by
//                         memory, for the 2-threads-vs-1 rows (relu_chain_16M is bound by memory)
//   sum_16M               x.sum() over 16M elements
//   sum_128K              x.sum() over 128K elements (512 KiB: stays in L2 between iterations, so
//                         the loop's own speed shows, not DRAM's; not a row of the README's table)
//   sum_dim1_4096x4096    x.sum(1): 4096 contiguous rows of 4096 (issue 28's reductions)
//   sum_dim0_4096x4096    x.sum(0): down the columns (strided outer dim)
//   max_16M               x.max() over 16M elements
//   softmax_16384x1024    softmax over dim 1
//   cnn_step              conv 3x3 1->16, ReLU, max-pool 2, conv 3x3 16->32, ReLU, max-pool 2,
//                         linear 1568->10; batch 64, 1x28x28; cross-entropy, SGD(0.01); counter
//                         faults_per_step (getrusage minor + major, the whole process)
//   mlp_step              Linear 784-256, ReLU, Linear 256-10, cross-entropy, Adam(1e-3), batch 256
//   relu_chain_16M        relu(x * 2 + 1), eager
//   depthwise_conv_32x64x56x56  conv2d 3x3, padding 1, groups 64 on [32, 64, 56, 56], forward and
//                         backward (dx and dw; gradients accumulate across iterations)
//   relu_chain_compiled_16M  the same through gradlab::jit::compile (gradlab only: LibTorch's C++
//                         API has no compile step)
// Each binary's counter threads_api is 1 when the library's set_num_threads was called, 0 when
// the library has none (then only OpenBLAS's threads follow the row's thread count). LibTorch's
// binary also sets OpenBLAS's count to the row's, so its matmuls use that many threads; gradlab's
// set_num_threads governs its matmuls itself (split over its own threads, OpenBLAS kept at 1).
//
//   build/release/bench/bench_vs_libtorch_gradlab --benchmark_repetitions=3 --benchmark_format=json
//   python3 tools/vs_libtorch.py     (runs both binaries and prints the README's table)

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#if GRADLAB_BENCH_LIBTORCH
#include <dlfcn.h>  // dlsym: OpenBLAS's thread count, see use_threads
#include <torch/torch.h>
#else
#include <cblas.h>

#include <gradlab/gradlab.hpp>
namespace torch = gradlab;
#endif

// set_num_threads(n) when the library has it: the ellipsis overload below is the worst match, so
// the library's own function wins wherever it exists (LibTorch: at::set_num_threads through
// torch's using-directive; gradlab: once issue 28's threads land).
namespace bench_fallback {
struct Absent {};
inline Absent set_num_threads(...) { return {}; }
}  // namespace bench_fallback
namespace bench_probe {
using namespace bench_fallback;
using namespace torch;
inline auto set_threads(int n) { return set_num_threads(n); }
}  // namespace bench_probe

namespace {

constexpr bool kHasThreadsApi =
    !std::is_same_v<decltype(bench_probe::set_threads(1)), bench_fallback::Absent>;

void use_threads(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  if constexpr (kHasThreadsApi) bench_probe::set_threads(n);
#if !GRADLAB_BENCH_LIBTORCH
  if constexpr (!kHasThreadsApi) openblas_set_num_threads(n);
#else
  // NOTE: Debian's LibTorch multiplies through OpenBLAS, and at::set_num_threads does not set
  // OpenBLAS's count (it sets MKL's, which this build lacks): without this call LibTorch's
  // "1 thread" rows ran their matmuls on every core (perf: as many sgemm_kernel samples on
  // OpenBLAS's worker as on the main thread). Looked up at run time, as the symbol comes from a
  // library LibTorch pulls in, not one this program links.
  using SetBlasThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    f(n);
#endif
  state.counters["threads_api"] = kHasThreadsApi ? 1 : 0;
}

const bool kOneInteropThread = [] {
#if GRADLAB_BENCH_LIBTORCH
  torch::set_num_interop_threads(1);
#endif
  return true;
}();

long page_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

void memcpy_16M(benchmark::State& state) {
  use_threads(state);
  std::vector<float> src(std::size_t{16} << 20, 1.0f), dst(src.size(), 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(2 * src.size() * sizeof(float)));
}

// The same copy split over the row's thread count (std::threads started for each copy: tens of
// µs on a copy of milliseconds): how much the machine's memory bandwidth grows with a second
// thread, the ceiling of any memory-bound op's 2-thread speed-up. Not a library call.
void memcpy_16M_split(benchmark::State& state) {
  use_threads(state);
  const std::size_t parts = static_cast<std::size_t>(state.range(0));
  std::vector<float> src(std::size_t{16} << 20, 1.0f), dst(src.size(), 0.0f);
  const std::size_t per = src.size() / parts;
  auto copy_part = [&](std::size_t k) {
    const std::size_t b = k * per, e = k + 1 == parts ? src.size() : b + per;
    std::memcpy(dst.data() + b, src.data() + b, (e - b) * sizeof(float));
  };
  for (auto _ : state) {
    std::vector<std::thread> others;
    for (std::size_t k = 1; k < parts; ++k) others.emplace_back(copy_part, k);
    copy_part(0);
    for (std::thread& t : others) t.join();
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(2 * src.size() * sizeof(float)));
}

template <class F>
void unary(benchmark::State& state, int64_t n, F f) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({n});
  for (auto _ : state) {
    torch::Tensor y = f(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}

void gelu_1M(benchmark::State& s) {
  unary(s, 1 << 20, [](const torch::Tensor& x) { return torch::gelu(x); });
}
void gelu_backward_1M(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({1 << 20}).requires_grad_(true);
  const torch::Tensor dy = torch::randn({1 << 20});
  for (auto _ : state) {
    const auto dx = torch::autograd::grad({torch::gelu(x)}, {x}, {dy});
    benchmark::DoNotOptimize(dx[0].data_ptr<float>());
  }
}
void exp_1M(benchmark::State& s) {
  unary(s, 1 << 20, [](const torch::Tensor& x) { return torch::exp(x); });
}
void sigmoid_1M(benchmark::State& s) {
  unary(s, 1 << 20, [](const torch::Tensor& x) { return torch::sigmoid(x); });
}
void tanh_1M(benchmark::State& s) {
  unary(s, 1 << 20, [](const torch::Tensor& x) { return torch::tanh(x); });
}
void gelu_16M(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return torch::gelu(x); });
}
void exp_16M(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return torch::exp(x); });
}
void sum_16M(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return x.sum(); });
}
void sum_128K(benchmark::State& s) {
  unary(s, 128 << 10, [](const torch::Tensor& x) { return x.sum(); });
}
void sum_dim1_4096x4096(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return x.reshape({4096, 4096}).sum(1); });
}
void sum_dim0_4096x4096(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return x.reshape({4096, 4096}).sum(0); });
}
void max_16M(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return x.max(); });
}
void relu_chain_16M(benchmark::State& s) {
  unary(s, 16 << 20, [](const torch::Tensor& x) { return torch::relu(x * 2 + 1); });
}

void add_1M(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({1 << 20}), b = torch::randn({1 << 20});
  for (auto _ : state) {
    torch::Tensor y = a + b;
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}

void softmax_16384x1024(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({16384, 1024});
  for (auto _ : state) {
    torch::Tensor y = torch::softmax(x, 1);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}

// One training step: zero_grad, forward, cross-entropy, backward, optimizer step.
template <class Model, class Opt>
void train_step(Model& model, Opt& opt, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  loss.backward();
  opt.step();
}

void cnn_step(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  namespace nn = torch::nn;
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                       nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(),
                       nn::Linear(32 * 7 * 7, 10));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor x = torch::randn({64, 1, 28, 28}), y = torch::randint(0, 10, {64});
  for (int i = 0; i < 3; ++i) train_step(model, opt, x, y);  // warm: gradients, caches, pages
  const long f0 = page_faults();
  for (auto _ : state) train_step(model, opt, x, y);
  state.counters["faults_per_step"] =
      static_cast<double>(page_faults() - f0) / static_cast<double>(state.iterations());
}

void mlp_step(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  namespace nn = torch::nn;
  nn::Sequential model(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  const torch::Tensor x = torch::randn({256, 784}), y = torch::randint(0, 10, {256});
  for (int i = 0; i < 3; ++i) train_step(model, opt, x, y);
  for (auto _ : state) train_step(model, opt, x, y);
}

// A depthwise 3x3 conv (MobileNet's block: groups == channels), forward and backward (dx, dw).
void depthwise_conv_32x64x56x56(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({32, 64, 56, 56}).requires_grad_();
  const torch::Tensor w = (torch::randn({64, 1, 3, 3}) * 0.3).requires_grad_();
  const torch::Tensor dy = torch::randn({32, 64, 56, 56});
  for (auto _ : state) {
    torch::Tensor y = torch::conv2d(x, w, {}, 1, 1, 1, 64);
    y.backward(dy);
    benchmark::DoNotOptimize(x.grad().data_ptr<float>());
  }
}

#if !GRADLAB_BENCH_LIBTORCH
void relu_chain_compiled_16M(benchmark::State& state) {
  use_threads(state);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({16 << 20});
  auto f = gradlab::jit::compile([](const gradlab::Tensor& t) { return gradlab::relu(t * 2 + 1); });
  (void)f(x);  // the first call traces
  for (auto _ : state) {
    torch::Tensor y = f(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}
#endif

#define ROW(fn, unit) \
  BENCHMARK(fn)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::unit)
ROW(memcpy_16M, kMillisecond);
ROW(memcpy_16M_split, kMillisecond);
ROW(gelu_1M, kMicrosecond);
ROW(gelu_backward_1M, kMicrosecond);
ROW(exp_1M, kMicrosecond);
ROW(sigmoid_1M, kMicrosecond);
ROW(tanh_1M, kMicrosecond);
ROW(add_1M, kMicrosecond);
ROW(gelu_16M, kMillisecond);
ROW(exp_16M, kMillisecond);
ROW(sum_16M, kMillisecond);
ROW(sum_128K, kMicrosecond);
ROW(sum_dim1_4096x4096, kMillisecond);
ROW(sum_dim0_4096x4096, kMillisecond);
ROW(max_16M, kMillisecond);
ROW(softmax_16384x1024, kMillisecond);
ROW(cnn_step, kMillisecond);
ROW(mlp_step, kMillisecond);
ROW(relu_chain_16M, kMillisecond);
ROW(depthwise_conv_32x64x56x56, kMillisecond);
#if !GRADLAB_BENCH_LIBTORCH
ROW(relu_chain_compiled_16M, kMillisecond);
#endif

}  // namespace
