// Training-step and whole-run speed of gradlab (see train_workload.hpp). With LibTorch
// installed, bench_train_torch runs the same workloads in LibTorch and gradlab side by side.
//
//   build/release/bench/bench_train --benchmark_min_time=1

#include "train_workload.hpp"

namespace {
const bool kRegistered = [] {
  bench_train::register_gradlab_mlp_step();
  bench_train::register_gradlab_digits();
  return true;
}();
}  // namespace
