// Peak tensor memory of one training step under each out-of-memory fix (lesson 12), for an MLP
// and a small CNN, and the speed of bfloat16 autocast steps against float32 ones on the CPU.
//
//   <model>_peak/<fix>     counters: peak_MiB (highest memory::allocated() during the step, above
//                          what was alive before it: model, optimizer state and data) and
//                          vs_baseline (peak / the baseline's peak, the baseline measured in
//                          the same run, in the same benchmark, just before)
//     fixes: baseline (the big batch, float32), small_batch (a quarter of it), accumulate_4
//            (4 micro-batches of a quarter, one update), no_grad_eval (forward only, under
//            NoGradGuard), bf16_autocast (amp::autocast(kCPU)), checkpoint (the trunk in two
//            gradlab::checkpoint segments)
//   <model>_step/f32, <model>_step/bf16_autocast   time per training step (tools/bench_ratios.py
//                          divides the second by the first)
//   faults/mlp_adam, faults/cnn_sgd, faults/dcgan/<width>   page faults per training step
//                          (counter faults_per_step: getrusage minor + major faults of the
//                          process over the timed steps, after 3 warm-up steps), memory::stats()
//                          cache hits and evictions per step, the cache's size at the end. The
//                          workloads: issue 28's MLP 784-256-10 + Adam, batch 256, and CNN conv
//                          3x3 1->16, pool, conv 16->32, pool, linear, batch 64, 28x28, SGD; a
//                          DCGAN (pytorch/examples' cpp/dcgan at half (1) and full (2) width,
//                          batch 64). A step that reuses its buffers faults ~0 times; one that
//                          gets fresh pages from the system faults once per 4 KiB page it writes
//                          (a full-width DCGAN step: 150k faults under the old fixed 256 MiB
//                          cache; strace showed ~8 munmap + mmap of its largest buffers a step).
//
// One BLAS thread. Run from the repository root:
//   build/release/bench/bench_memory --benchmark_min_time=0.5
//   build/release/bench/bench_memory --benchmark_format=json > mem.json && python3 tools/bench_ratios.py mem.json

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <sys/resource.h>

#include <functional>
#include <gradlab/gradlab.hpp>
#include <string>

namespace {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace F = gradlab::nn::functional;

const bool kOneThread = [] {
  openblas_set_num_threads(1);
  return true;
}();

enum class Fix { Baseline, SmallBatch, Accumulate4, NoGradEval, BF16Autocast, Checkpoint };

// A model split into two trunk segments and a head, so checkpoint can wrap the segments.
struct Net {
  nn::Sequential seg1, seg2, head;
  gl::Tensor x, y;
  std::vector<gl::Tensor> parameters() const {
    std::vector<gl::Tensor> p;
    for (const nn::Sequential* s : {&seg1, &seg2, &head})
      for (const gl::Tensor& t : (*s)->parameters()) p.push_back(t);
    return p;
  }
};

// MLP 256 -> 4 x 512 -> 10, batch 4096: activations (8 MiB each) outweigh the 3.5 MiB of weights,
// as in lesson 12, so the fixes have something to save.
Net make_mlp() {
  gl::manual_seed(0);
  Net n;
  n.seg1->push_back(nn::Linear(256, 512));
  n.seg1->push_back(nn::ReLU());
  n.seg1->push_back(nn::Linear(512, 512));
  n.seg1->push_back(nn::ReLU());
  n.seg2->push_back(nn::Linear(512, 512));
  n.seg2->push_back(nn::ReLU());
  n.seg2->push_back(nn::Linear(512, 512));
  n.seg2->push_back(nn::ReLU());
  n.head->push_back(nn::Linear(512, 10));
  n.x = gl::randn({4096, 256});
  n.y = gl::randint(0, 10, {4096});
  return n;
}

// CNN on 3 x 32 x 32 images: conv(3->16) relu conv(16->16) relu pool | conv(16->32) relu
// conv(32->32) relu pool | flatten linear(2048 -> 10); batch 64.
Net make_cnn() {
  gl::manual_seed(0);
  Net n;
  auto conv = [](int64_t i, int64_t o) { return nn::Conv2d(nn::Conv2dOptions(i, o, 3).padding(1)); };
  n.seg1->push_back(conv(3, 16));
  n.seg1->push_back(nn::ReLU());
  n.seg1->push_back(conv(16, 16));
  n.seg1->push_back(nn::ReLU());
  n.seg1->push_back(nn::MaxPool2d(2));
  n.seg2->push_back(conv(16, 32));
  n.seg2->push_back(nn::ReLU());
  n.seg2->push_back(conv(32, 32));
  n.seg2->push_back(nn::ReLU());
  n.seg2->push_back(nn::MaxPool2d(2));
  n.head->push_back(nn::Flatten());
  n.head->push_back(nn::Linear(32 * 8 * 8, 10));
  n.x = gl::randn({64, 3, 32, 32});
  n.y = gl::randint(0, 10, {64});
  return n;
}

// One SGD step (or, for no_grad_eval, one forward) under `fix`; returns its peak above the start.
std::size_t step(Net& n, gl::optim::SGD& opt, Fix fix) {
  gl::memory::PeakScope peak;
  const int64_t B = n.x.size(0);
  if (fix == Fix::NoGradEval) {
    gl::NoGradGuard no_grad;
    benchmark::DoNotOptimize(n.head(n.seg2(n.seg1(n.x))));
    return peak.peak_increase();
  }
  opt.zero_grad();
  const int parts = fix == Fix::Accumulate4 ? 4 : 1;
  const int64_t rows = fix == Fix::SmallBatch || fix == Fix::Accumulate4 ? B / 4 : B;
  for (int k = 0; k < parts; ++k) {
    gl::Tensor xb = n.x.narrow(0, k * rows, rows), yb = n.y.narrow(0, k * rows, rows);
    gl::Tensor loss;
    {
      gl::amp::autocast ac(gl::kCPU, std::nullopt, fix == Fix::BF16Autocast);
      gl::Tensor h;
      if (fix == Fix::Checkpoint) {
        h = gl::checkpoint([&](const gl::TensorList& in) { return n.seg1(in[0]); }, {xb});
        h = gl::checkpoint([&](const gl::TensorList& in) { return n.seg2(in[0]); }, {h});
      } else {
        h = n.seg2(n.seg1(xb));
      }
      loss = F::cross_entropy(n.head(h), yb) / static_cast<double>(parts);
    }
    loss.backward();
  }
  opt.step();
  return peak.peak_increase();
}

void peak_bench(benchmark::State& state, Net (*make)(), Fix fix) {
  Net n = make();
  gl::optim::SGD opt(n.parameters(), gl::optim::SGDOptions(0.01));
  step(n, opt, Fix::Baseline);  // gradients exist from here on, as in a running loop
  const double base = static_cast<double>(step(n, opt, Fix::Baseline));
  double peak = 0;
  for (auto _ : state) peak = static_cast<double>(step(n, opt, fix));
  state.counters["peak_MiB"] = peak / (1 << 20);
  state.counters["vs_baseline"] = peak / base;
}

void speed_bench(benchmark::State& state, Net (*make)(), Fix fix) {
  Net n = make();
  gl::optim::SGD opt(n.parameters(), gl::optim::SGDOptions(0.01));
  step(n, opt, fix);
  for (auto _ : state) step(n, opt, fix);
}

#define GRADLAB_PEAK(model, maker, name, fix) \
  BENCHMARK_CAPTURE(peak_bench, name, maker, fix)->Name(#model "_peak/" #name)->Unit(benchmark::kMillisecond)
GRADLAB_PEAK(mlp, make_mlp, baseline, Fix::Baseline);
GRADLAB_PEAK(mlp, make_mlp, small_batch, Fix::SmallBatch);
GRADLAB_PEAK(mlp, make_mlp, accumulate_4, Fix::Accumulate4);
GRADLAB_PEAK(mlp, make_mlp, no_grad_eval, Fix::NoGradEval);
GRADLAB_PEAK(mlp, make_mlp, bf16_autocast, Fix::BF16Autocast);
GRADLAB_PEAK(mlp, make_mlp, checkpoint, Fix::Checkpoint);
GRADLAB_PEAK(cnn, make_cnn, baseline, Fix::Baseline);
GRADLAB_PEAK(cnn, make_cnn, small_batch, Fix::SmallBatch);
GRADLAB_PEAK(cnn, make_cnn, accumulate_4, Fix::Accumulate4);
GRADLAB_PEAK(cnn, make_cnn, no_grad_eval, Fix::NoGradEval);
GRADLAB_PEAK(cnn, make_cnn, bf16_autocast, Fix::BF16Autocast);
GRADLAB_PEAK(cnn, make_cnn, checkpoint, Fix::Checkpoint);

BENCHMARK_CAPTURE(speed_bench, mlp_f32, make_mlp, Fix::Baseline)->Name("mlp_step/f32")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(speed_bench, mlp_bf16, make_mlp, Fix::BF16Autocast)
    ->Name("mlp_step/bf16_autocast")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(speed_bench, cnn_f32, make_cnn, Fix::Baseline)->Name("cnn_step/f32")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(speed_bench, cnn_bf16, make_cnn, Fix::BF16Autocast)
    ->Name("cnn_step/bf16_autocast")
    ->Unit(benchmark::kMillisecond);

long page_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

// Runs `step` 3 times untimed, then times it and reports faults and cache hits per step.
void faults_bench(benchmark::State& state, const std::function<void()>& step) {
  for (int i = 0; i < 3; ++i) step();
  const long f0 = page_faults();
  const gl::memory::Stats s0 = gl::memory::stats();
  for (auto _ : state) step();
  const double n = static_cast<double>(state.iterations());
  state.counters["faults_per_step"] = static_cast<double>(page_faults() - f0) / n;
  const gl::memory::Stats s = gl::memory::stats();
  state.counters["cache_hits_per_step"] = static_cast<double>(s.cache_hits - s0.cache_hits) / n;
  state.counters["evictions_per_step"] = static_cast<double>(s.cache_evictions - s0.cache_evictions) / n;
  state.counters["allocs_per_step"] = static_cast<double>(s.allocations_total - s0.allocations_total) / n;
  state.counters["cached_MiB"] = static_cast<double>(s.cached) / (1 << 20);
}

void faults_mlp_adam(benchmark::State& state) {
  gl::manual_seed(0);
  nn::Sequential model(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  gl::optim::Adam opt(model->parameters(), gl::optim::AdamOptions(1e-3));
  const gl::Tensor x = gl::randn({256, 784}), y = gl::randint(0, 10, {256});
  faults_bench(state, [&] {
    opt.zero_grad();
    gl::Tensor loss = F::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
  });
}

void faults_cnn_sgd(benchmark::State& state) {
  gl::manual_seed(0);
  auto conv = [](int64_t i, int64_t o) { return nn::Conv2d(nn::Conv2dOptions(i, o, 3).padding(1)); };
  nn::Sequential model(conv(1, 16), nn::ReLU(), nn::MaxPool2d(2), conv(16, 32), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Flatten(), nn::Linear(32 * 7 * 7, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  const gl::Tensor x = gl::randn({64, 1, 28, 28}), y = gl::randint(0, 10, {64});
  faults_bench(state, [&] {
    opt.zero_grad();
    gl::Tensor loss = F::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
  });
}
// The DCGAN of pytorch/examples (cpp/dcgan) at half its channels, batch 64: generator
// ConvTranspose2d 100->128->64->32->1 with BatchNorm2d + ReLU and Tanh, discriminator strided
// Conv2d 1->32->64->128->1 with BatchNorm2d + LeakyReLU and Sigmoid, BCE, two Adams; one step
// trains D on real and detached fake images, then G through D. Many buffer sizes per step.
void faults_dcgan(benchmark::State& state) {
  gl::manual_seed(0);
  const int64_t w = state.range(0);  // channel width multiplier: 2 is the example's full width
  using nn::BatchNorm2d, nn::ReLU;
  auto convt = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
    return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(i, o, k).stride(s).padding(p).bias(false));
  };
  auto conv = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
    return nn::Conv2d(nn::Conv2dOptions(i, o, k).stride(s).padding(p).bias(false));
  };
  auto lrelu = [] { return nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)); };
  nn::Sequential g(convt(100, 128 * w, 4, 1, 0), BatchNorm2d(128 * w), ReLU(), convt(128 * w, 64 * w, 3, 2, 1),
                   BatchNorm2d(64 * w), ReLU(), convt(64 * w, 32 * w, 4, 2, 1), BatchNorm2d(32 * w), ReLU(),
                   convt(32 * w, 1, 4, 2, 1), nn::Tanh());
  nn::Sequential d(conv(1, 32 * w, 4, 2, 1), lrelu(), conv(32 * w, 64 * w, 4, 2, 1), BatchNorm2d(64 * w), lrelu(),
                   conv(64 * w, 128 * w, 4, 2, 1), BatchNorm2d(128 * w), lrelu(), conv(128 * w, 1, 3, 1, 0),
                   nn::Sigmoid());
  const auto adam = gl::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999));
  gl::optim::Adam g_opt(g->parameters(), adam), d_opt(d->parameters(), adam);
  const int64_t B = 64;
  const gl::Tensor real = gl::rand({B, 1, 28, 28}) * 2 - 1, ones = gl::ones({B}), zeros = gl::zeros({B});
  faults_bench(state, [&] {
    d->zero_grad();
    F::binary_cross_entropy(d(real).reshape({B}), ones).backward();
    const gl::Tensor fake = g(gl::randn({B, 100, 1, 1}));
    F::binary_cross_entropy(d(fake.detach()).reshape({B}), zeros).backward();
    d_opt.step();
    g->zero_grad();
    F::binary_cross_entropy(d(fake).reshape({B}), ones).backward();
    g_opt.step();
  });
}

BENCHMARK(faults_mlp_adam)->Name("faults/mlp_adam")->Unit(benchmark::kMillisecond);
BENCHMARK(faults_cnn_sgd)->Name("faults/cnn_sgd")->Unit(benchmark::kMillisecond);
BENCHMARK(faults_dcgan)->Name("faults/dcgan")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace
