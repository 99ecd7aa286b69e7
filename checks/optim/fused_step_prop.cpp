// The fused CPU optimizer update (backend/cpu/optim.cpp, formula in backend/math/optim.hpp) against
// its oracle, the composite update of optim/optimizers.cpp (kern::set_cpu_fused_step (false)): SGD
// (momentum, dampening, nesterov, weight decay), Adam (L2 weight decay), AdamW (decoupled), RMSprop
// (alpha, eps, weight decay, momentum, centered) and Adagrad (lr_decay, weight decay,
// initial_accumulator_value, eps), random hyperparameters, float32 and float64, several steps;
// parameters and state must agree BIT FOR BIT at 1 and 2 threads. That is the claim: both paths
// round the same operations in the same order and neither contracts to FMA. ctest runs this binary
// once per forced capability level (extras.cmake: GRADLAB_CPU_CAPABILITY), so every level's vector
// code meets the composite. The sizes cover a tail shorter than a vector, and one tensor large
// enough to split over 2 threads (> 2 kGrain elements).

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/gradlab.hpp"

namespace gradlab {
namespace {

std::vector<unsigned char> bits(const Tensor& t) {
  const Tensor c = t.contiguous();
  const size_t item = c.dtype() == kFloat64 ? sizeof(double) : sizeof(float);
  std::vector<unsigned char> b(static_cast<size_t>(c.numel()) * item);
  if (!b.empty())
    std::memcpy(b.data(),
                c.dtype() == kFloat64 ? static_cast<const void*>(c.data_ptr<double>()) : c.data_ptr<float>(),
                b.size());
  return b;
}

struct Restore {
  int threads = get_num_threads();
  ~Restore() {
    set_num_threads(threads);
    kern::set_cpu_fused_step(true);
  }
};

// A double in [lo, hi) on a grid of 10^6 points (RapidCheck shrinks it towards lo).
double uniform(double lo, double hi) {
  const int k = *rc::gen::inRange(0, 1000000);
  return lo + (hi - lo) * (k / 1e6);
}

// Parameters of sizes {n} and {3, 7}, `steps` steps with seeded random gradients; returns the
// bits of every parameter and of every state tensor after the last step.
template <class Opt, class Options>
std::vector<std::vector<unsigned char>> run(const Options& o, int64_t n, ScalarType dt, uint64_t seed, int steps,
                                            const std::vector<std::string>& state_keys) {
  Generator gen(seed);
  std::vector<Tensor> ps = {randn({n}, dtype(dt), &gen).requires_grad_(),
                            randn({3, 7}, dtype(dt), &gen).requires_grad_()};
  Opt opt(ps, o);
  for (int t = 0; t < steps; ++t) {
    for (Tensor& p : ps) p.mutable_grad() = randn(p.sizes(), dtype(dt), &gen) * 2.0;
    opt.step();
  }
  std::vector<std::vector<unsigned char>> r;
  for (const Tensor& p : ps) {
    r.push_back(bits(p.detach()));
    for (const std::string& k : state_keys) r.push_back(bits(opt.state(p).at(k)));
  }
  return r;
}

// The composite at 1 thread, then the fused update at 1 and 2 threads: equal bits.
template <class Opt, class Options>
void check_same_bits(const Options& o, const std::vector<std::string>& state_keys) {
  // One case in four large enough to split (most of the property's time is spent there).
  const bool big = *rc::gen::element(false, false, false, true);
  const int64_t n = big ? 2 * cpu::kGrain + *rc::gen::inRange<int64_t>(1, 200) : *rc::gen::inRange<int64_t>(1, 100);
  const ScalarType dt = *rc::gen::element(kFloat32, kFloat64);
  const auto seed = *rc::gen::arbitrary<uint32_t>();
  const int steps = *rc::gen::inRange(1, 5);
  RC_CLASSIFY(big, "split over 2 threads");
  RC_CLASSIFY(dt == kFloat64, "float64");
  Restore restore;
  set_num_threads(1);
  kern::set_cpu_fused_step(false);
  const auto want = run<Opt>(o, n, dt, seed, steps, state_keys);
  kern::set_cpu_fused_step(true);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const auto got = run<Opt>(o, n, dt, seed, steps, state_keys);
    for (size_t k = 0; k < want.size(); ++k)
      if (got[k] != want[k])
        RC_FAIL("tensor " + std::to_string(k) + " (parameter, then " + std::to_string(state_keys.size()) +
                " state tensors, per parameter) differs from the composite at " + std::to_string(threads) +
                " thread(s), level " + cpu_capability() + ", " + to_string(dt) + ", n " + std::to_string(n));
  }
}

RC_GTEST_PROP(FusedStep, SgdBitIdenticalToComposite, ()) {
  const bool momentum = *rc::gen::element(false, true), nesterov = momentum && *rc::gen::element(false, true);
  optim::SGDOptions o(uniform(1e-4, 1.0));
  if (momentum) o.momentum(uniform(0.01, 0.99)).dampening(nesterov ? 0.0 : uniform(0.0, 0.9)).nesterov(nesterov);
  if (*rc::gen::element(false, true)) o.weight_decay(uniform(0.0, 0.5));
  RC_CLASSIFY(nesterov, "nesterov");
  check_same_bits<optim::SGD>(o, momentum ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{});
}

RC_GTEST_PROP(FusedStep, AdamAndAdamWBitIdenticalToComposite, ()) {
  const double lr = uniform(1e-4, 0.1), eps = uniform(1e-10, 1e-3);
  const auto betas = std::make_tuple(uniform(0.0, 0.99), uniform(0.5, 0.9999));
  const double wd = *rc::gen::element(false, true) ? uniform(0.0, 0.5) : 0.0;
  const std::vector<std::string> keys = {"exp_avg", "exp_avg_sq"};
  if (*rc::gen::element(false, true)) {
    RC_CLASSIFY(true, "AdamW");
    check_same_bits<optim::AdamW>(optim::AdamWOptions(lr).betas(betas).eps(eps).weight_decay(wd), keys);
  } else {
    check_same_bits<optim::Adam>(optim::AdamOptions(lr).betas(betas).eps(eps).weight_decay(wd), keys);
  }
}

RC_GTEST_PROP(FusedStep, RmspropBitIdenticalToComposite, ()) {
  // alpha from 0.1: nearer 0 a centered s - a² is a difference of nearly equal numbers (at
  // alpha = 0 exactly 0), fine on both paths but no more telling.
  optim::RMSpropOptions o(uniform(1e-4, 0.1));
  o.alpha(uniform(0.1, 0.999)).eps(uniform(1e-10, 1e-3));
  const bool wd = *rc::gen::element(false, true), momentum = *rc::gen::element(false, true),
             centered = *rc::gen::element(false, true);
  if (wd) o.weight_decay(uniform(0.0, 0.5));
  if (momentum) o.momentum(uniform(0.01, 0.99));
  o.centered(centered);
  RC_CLASSIFY(wd, "weight_decay");
  RC_CLASSIFY(momentum, "momentum");
  RC_CLASSIFY(centered, "centered");
  std::vector<std::string> keys = {"square_avg"};
  if (centered) keys.push_back("grad_avg");
  if (o.momentum() > 0) keys.push_back("momentum_buffer");
  check_same_bits<optim::RMSprop>(o, keys);
}

RC_GTEST_PROP(FusedStep, AdagradBitIdenticalToComposite, ()) {
  optim::AdagradOptions o(uniform(1e-4, 0.5));
  o.eps(uniform(1e-10, 1e-3));
  const bool decay = *rc::gen::element(false, true), wd = *rc::gen::element(false, true),
             init = *rc::gen::element(false, true);
  if (decay) o.lr_decay(uniform(0.0, 0.5));
  if (wd) o.weight_decay(uniform(0.0, 0.5));
  if (init) o.initial_accumulator_value(uniform(0.0, 1.0));
  RC_CLASSIFY(decay, "lr_decay");
  RC_CLASSIFY(wd, "weight_decay");
  RC_CLASSIFY(init, "initial_accumulator_value");
  check_same_bits<optim::Adagrad>(o, {"sum"});
}

}  // namespace
}  // namespace gradlab
