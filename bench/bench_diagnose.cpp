// diagnose::doctor on the digits MLP (64-128-10, SGD lr 0.1, the standardized split), against
// one training epoch of the same MLP measured in the same run (the baseline). The target:
// doctor <= 2 s on one core.
//
//   OPENBLAS_NUM_THREADS=1 taskset -c 0 build/release/bench/bench_diagnose
//       --benchmark_repetitions=5 --benchmark_format=json > diagnose.json   (one line)
//   python3 tools/bench_ratios.py diagnose.json      (doctor's time vs one epoch's)
//
// Doctor/one_epoch: 23 steps of zero_grad -> forward -> cross-entropy -> backward -> step over
// the 1437 training rows in batches of 64 (index_select batches of a fixed permutation).
// Doctor/doctor: the full report (data: 6 checks on the whole split + the held-out split;
// model: 6 checks on one batch; training: overfit one batch, LR range test, gradient stats,
// non-finite watch). Doctor/doctor_no_lr_range: the same without the LR range test (~60 steps).

#include <benchmark/benchmark.h>

#include <algorithm>

#include "gradlab/gradlab.hpp"

namespace {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace dg = gradlab::diagnose;

const gl::data::DigitsSplit& digits() {
  static const gl::data::DigitsSplit s = gl::data::load_digits_split();
  return s;
}

nn::Sequential mlp() {
  gl::manual_seed(1);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
}

void one_epoch(nn::Sequential& net, gl::optim::SGD& opt, const gl::Tensor& perm) {
  nn::CrossEntropyLoss criterion;
  const gl::Tensor& x = digits().train.data();
  const gl::Tensor& y = digits().train.targets();
  const int64_t n = x.size(0);
  for (int64_t start = 0; start < n; start += 64) {
    const gl::Tensor idx = perm.narrow(0, start, std::min<int64_t>(64, n - start));
    opt.zero_grad();
    criterion(net(gl::index_select(x, 0, idx)), gl::index_select(y, 0, idx)).backward();
    opt.step();
  }
}

void BM_OneEpoch(benchmark::State& state) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  gl::Generator g(3);
  const gl::Tensor perm = gl::randperm(digits().train.data().size(0), &g);
  for (auto _ : state) one_epoch(net, opt, perm);
}
BENCHMARK(BM_OneEpoch)->Name("Doctor/one_epoch")->Unit(benchmark::kMillisecond);

void run_doctor(benchmark::State& state, bool lr_range) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  dg::DoctorOptions o;
  o.lr_range_test = lr_range;
  const dg::DoctorData d{digits().train.data(), digits().train.targets(), digits().test.data()};
  for (auto _ : state) {
    const dg::Report r = dg::doctor(net, nn::CrossEntropyLoss(), opt, d, o);
    if (r.has_failure()) state.SkipWithError("doctor reported a failure on the healthy MLP");
    benchmark::DoNotOptimize(r.findings().size());
  }
}

void BM_Doctor(benchmark::State& state) { run_doctor(state, true); }
BENCHMARK(BM_Doctor)->Name("Doctor/doctor")->Unit(benchmark::kMillisecond);

void BM_DoctorNoLRRange(benchmark::State& state) { run_doctor(state, false); }
BENCHMARK(BM_DoctorNoLRRange)->Name("Doctor/doctor_no_lr_range")->Unit(benchmark::kMillisecond);

}  // namespace
