// The training workloads of train_workload.hpp in gradlab AND LibTorch, in one program, so one
// run prints both (built only when find_package(Torch) succeeds):
//
//   mlp_step/batch:<B>/libtorch   mlp_step/batch:<B>/gradlab   same model, data, loss, optimizer
//   digits_run/libtorch           digits_run/gradlab           same split, 20 epochs, batch 64
//
// LibTorch gets the same inputs: the same standardized digits tensors (copied), a seeded shuffle
// per epoch (torch::randperm), SGD(0.05, momentum 0.9). One thread in both.
//
//   build/release/bench/bench_train_torch --benchmark_min_time=1 --benchmark_repetitions=5
//       --benchmark_format=json > train.json
//   python3 tools/bench_ratios.py train.json      ("vs first": LibTorch time / gradlab time)
//   build/release/bench/bench_train_torch --benchmark_filter=digits_run/libtorch   (its peak RSS;
//       gradlab's own is bench_train's, without LibTorch loaded)

#include <torch/torch.h>

#include <cstring>

#include "train_workload.hpp"

namespace bench_train {

namespace {

const bool kTorchOneThread = [] {
  torch::set_num_threads(1);
  torch::set_num_interop_threads(1);
  return true;
}();

torch::Tensor to_torch(const gl::Tensor& t) {
  gl::Tensor c = t.contiguous();
  std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
  if (c.dtype() == gl::kInt64) {
    auto out = torch::empty(shape, torch::kInt64);
    std::memcpy(out.data_ptr<int64_t>(), c.data_ptr<int64_t>(), sizeof(int64_t) * c.numel());
    return out;
  }
  gl::Tensor f = c.to(gl::kFloat32).contiguous();
  auto out = torch::empty(shape, torch::kFloat32);
  std::memcpy(out.data_ptr<float>(), f.data_ptr<float>(), sizeof(float) * f.numel());
  return out;
}

torch::nn::Sequential torch_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(64, 128), torch::nn::ReLU(),
                               torch::nn::Linear(128, 10));
}

void libtorch_mlp_step(benchmark::State& state, int64_t batch) {
  torch::manual_seed(0);
  auto model = torch_mlp();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor x = torch::randn({batch, 64});
  const torch::Tensor y = torch::randint(0, 10, {batch}, torch::kInt64);
  for (auto _ : state) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

double libtorch_digits_run() {
  const Digits& d = digits();
  const torch::Tensor xtr = to_torch(d.x_train), ytr = to_torch(d.y_train);
  const torch::Tensor xte = to_torch(d.x_test), yte = to_torch(d.y_test);
  torch::manual_seed(0);
  auto model = torch_mlp();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const int64_t n = xtr.size(0);
  for (int epoch = 0; epoch < 20; ++epoch) {
    const torch::Tensor perm = torch::randperm(n, torch::kInt64);
    for (int64_t start = 0; start < n; start += 64) {
      const torch::Tensor idx = perm.slice(0, start, std::min(start + 64, n));
      const torch::Tensor xb = xtr.index_select(0, idx), yb = ytr.index_select(0, idx);
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(xb), yb);
      loss.backward();
      opt.step();
    }
  }
  torch::NoGradGuard no_grad;
  model->eval();
  return model->forward(xte).argmax(1).eq(yte).to(torch::kFloat32).mean().item<double>();
}

void libtorch_digits(benchmark::State& state) {
  digits();
  double acc = 0;
  for (auto _ : state) acc = libtorch_digits_run();
  state.counters["test_acc"] = acc;
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

}  // namespace

}  // namespace bench_train

namespace {
// LibTorch first in each group: it is the baseline tools/bench_ratios.py divides by.
const bool kRegistered = [] {
  for (int64_t batch : {64, 1024}) {
    benchmark::RegisterBenchmark(("mlp_step/batch:" + std::to_string(batch) + "/libtorch").c_str(),
                                 bench_train::libtorch_mlp_step, batch)
        ->Unit(benchmark::kMicrosecond);
  }
  bench_train::register_gradlab_mlp_step();
  benchmark::RegisterBenchmark("digits_run/libtorch", bench_train::libtorch_digits)
      ->Unit(benchmark::kMillisecond);
  bench_train::register_gradlab_digits();
  return true;
}();
}  // namespace
