#pragma once
// The training workloads of bench_train (gradlab) and bench_train_torch (gradlab and LibTorch
// side by side), shared so both programs measure exactly the same thing:
//
//   mlp_step/batch:<B>/gradlab   one full step of a 64-128-10 ReLU MLP, float32: zero_grad +
//                                forward + cross-entropy + backward + SGD step (lr 0.01)
//   digits_run/gradlab           the whole digits training run: 20 epochs, batch 64, a seeded
//                                shuffle per epoch, batches cut with index_select (the same work
//                                as the LibTorch run), standardized inputs, SGD(0.05, momentum
//                                0.9); counters: test accuracy, peak RSS of the process (MB) and
//                                peak tensor memory (memory::max_allocated, MB)
//   digits_run/gradlab_dataloader  the same run fed by data::DataLoader (TensorDataset's batched
//                                fetch: one index_select per tensor and batch)
//   digits_run/gradlab_dataloader_per_sample  the same DataLoader over a dataset without
//                                get_batch (per-sample get + stack_collate, the path custom
//                                datasets take)
//
// Names follow tools/bench_ratios.py's <group>/<variant> convention (the first variant of a
// group is the baseline: LibTorch in bench_train_torch).
// One thread: openblas_set_num_threads(1) before any work (and torch::set_num_threads(1) in the
// LibTorch program). Run from the repository root (the digits data is found through data/ or
// $GRADLAB_DATA_DIR):
//   build/release/bench/bench_train --benchmark_min_time=1
//   build/release/bench/bench_train --benchmark_filter=digits_run/gradlab$   (a clean peak RSS)

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <gradlab/gradlab.hpp>
#include <memory>
#include <string>
#include <utility>

namespace bench_train {

namespace gl = gradlab;

/// Peak resident set size of this process in MB (Linux reports ru_maxrss in KB).
inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

inline const bool kOneThread = [] {
  openblas_set_num_threads(1);
  return true;
}();

/// The digits split both programs train and test on: 1437/360 seeded split, standardized with
/// the training set's per-pixel mean and std (data::load_digits_split's defaults).
struct Digits {
  gl::Tensor x_train, y_train, x_test, y_test;
};

inline const Digits& digits() {
  static const Digits d = [] {
    const gl::data::DigitsSplit s = gl::data::load_digits_split();
    return Digits{s.train.data(), s.train.targets(), s.test.data(), s.test.targets()};
  }();
  return d;
}

inline void gradlab_mlp_step(benchmark::State& state, int64_t batch) {
  gl::manual_seed(0);
  gl::nn::Sequential model(gl::nn::Linear(64, 128), gl::nn::ReLU(), gl::nn::Linear(128, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.01));
  gl::nn::CrossEntropyLoss criterion;
  const gl::Tensor x = gl::randn({batch, 64});
  const gl::Tensor y = gl::randint(0, 10, {batch});
  for (auto _ : state) {
    opt.zero_grad();
    gl::Tensor loss = criterion(model(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

/// How the digits run gets its batches.
enum class Feed { IndexSelect, Loader, LoaderPerSample };

/// A dataset's samples without its batched fetch: the DataLoader's per-sample path.
class PerSampleOnly : public gl::data::Dataset {
 public:
  explicit PerSampleOnly(std::shared_ptr<gl::data::Dataset> d) : d_(std::move(d)) {}
  gl::data::Example<> get(size_t i) override { return d_->get(i); }
  size_t size() const override { return d_->size(); }

 private:
  std::shared_ptr<gl::data::Dataset> d_;
};

/// Trains the digits MLP for 20 epochs; returns the test accuracy. Batches come from
/// index_select over a shuffled permutation, or from data::DataLoader (batched or per sample).
inline double gradlab_digits_run(Feed feed) {
  const Digits& d = digits();
  gl::manual_seed(0);
  gl::nn::Sequential model(gl::nn::Linear(64, 128), gl::nn::ReLU(), gl::nn::Linear(128, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.05).momentum(0.9));
  gl::nn::CrossEntropyLoss criterion;
  auto step = [&](const gl::Tensor& xb, const gl::Tensor& yb) {
    opt.zero_grad();
    gl::Tensor loss = criterion(model(xb), yb);
    loss.backward();
    opt.step();
  };
  if (feed != Feed::IndexSelect) {
    std::shared_ptr<gl::data::Dataset> ds =
        std::make_shared<gl::data::TensorDataset>(d.x_train, d.y_train);
    if (feed == Feed::LoaderPerSample) ds = std::make_shared<PerSampleOnly>(ds);
    gl::data::DataLoader dl(ds, gl::data::DataLoaderOptions(64).shuffle(true).seed(0));
    for (int epoch = 0; epoch < 20; ++epoch)
      for (gl::data::Batch& b : dl) step(b.data, b.target);
  } else {
    gl::Generator gen(0);
    const int64_t n = d.x_train.size(0);
    for (int epoch = 0; epoch < 20; ++epoch) {
      const gl::Tensor perm = gl::randperm(n, &gen);
      for (int64_t start = 0; start < n; start += 64) {
        const gl::Tensor idx = perm.slice(0, start, std::min(start + 64, n));
        step(gl::index_select(d.x_train, 0, idx), gl::index_select(d.y_train, 0, idx));
      }
    }
  }
  gl::NoGradGuard no_grad;
  model->eval();
  gl::Tensor pred = gl::argmax(model(d.x_test), 1);
  return gl::mean((pred == d.y_test).to(gl::kFloat32)).item<double>();
}

inline void gradlab_digits(benchmark::State& state, Feed feed) {
  digits();  // load outside the timed region
  gl::memory::reset_peak();
  double acc = 0;
  for (auto _ : state) acc = gradlab_digits_run(feed);
  state.counters["test_acc"] = acc;
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.counters["peak_tensor_MB"] = static_cast<double>(gl::memory::max_allocated()) / (1 << 20);
}

}  // namespace bench_train

namespace bench_train {

/// Registers the gradlab workloads (each program decides the order: the baseline goes first).
/// No Arg()/Iterations(): they would add "/64" or "/iterations:1" to the names.
inline void register_gradlab_mlp_step() {
  for (int64_t batch : {64, 1024})
    benchmark::RegisterBenchmark(("mlp_step/batch:" + std::to_string(batch) + "/gradlab").c_str(),
                                 gradlab_mlp_step, batch)
        ->Unit(benchmark::kMicrosecond);
}
inline void register_gradlab_digits() {
  benchmark::RegisterBenchmark("digits_run/gradlab", gradlab_digits, Feed::IndexSelect)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("digits_run/gradlab_dataloader", gradlab_digits, Feed::Loader)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("digits_run/gradlab_dataloader_per_sample", gradlab_digits,
                               Feed::LoaderPerSample)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace bench_train
