// The fused CPU optimizer update (backend/cpu/optim.cpp): which parameters take it (SGD, Adam,
// AdamW, RMSprop, Adagrad), that the others still get the composite's values, and that its in-place
// writes bump the versions the saved-tensor check reads. Its bits against the composite:
// fused_step_prop.cpp.

#include <gtest/gtest.h>

#include <string>

#include "common/check_helpers.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/gradlab.hpp"

namespace gradlab {
namespace {

struct FusedOn {
  ~FusedOn() { kern::set_cpu_fused_step(true); }
};

// Two Adam steps on a copy of p0 with gradient g (as given: its layout counts); returns the
// parameter's values and how much exp_avg's version grew per step: 1 = one fused pass, 2 = the
// composite's mul_ and add_.
struct AdamRun {
  std::vector<double> values;
  uint32_t exp_avg_bumps_per_step;
};
AdamRun adam_run(const Tensor& p0, const Tensor& g, const optim::AdamOptions& o) {
  // A fresh copy with p0's layout (a 2-d p0 that is not contiguous is a transpose).
  Tensor p = p0.is_contiguous() ? p0.detach().clone() : p0.detach().t().clone().t();
  p.requires_grad_();
  p.mutable_grad() = g;
  optim::Adam opt({p}, o);
  opt.step();
  const uint32_t v1 = opt.state(p).at("exp_avg").version();
  opt.step();
  const uint32_t v2 = opt.state(p).at("exp_avg").version();
  return {checks::vals(p.detach()), v2 - v1};
}

TEST(FusedStep, TakenOnlyWhereSupportedAndOtherwiseTheComposite) {
  FusedOn restore;
  Generator gen(5);
  const Tensor p = randn({5, 70}, dtype(kFloat32), &gen), g = randn({5, 70}, dtype(kFloat32), &gen);
  const Tensor pt = randn({70, 5}, dtype(kFloat32), &gen).t();  // a non-contiguous [5, 70]
  ASSERT_FALSE(pt.is_contiguous());
  struct Case {
    std::string what;
    Tensor p, g;
    optim::AdamOptions o;
    uint32_t bumps;  // 1: fused
  };
  const std::vector<Case> cases = {
      {"contiguous float32", p, g, optim::AdamOptions(0.01).weight_decay(0.1), 1},
      {"contiguous float64", p.to(kFloat64), g.to(kFloat64), optim::AdamOptions(0.01), 1},
      {"non-contiguous parameter", pt, g, optim::AdamOptions(0.01), 2},
      {"non-contiguous gradient", p, g.t().contiguous().t(), optim::AdamOptions(0.01), 2},
      {"amsgrad", p, g, optim::AdamOptions(0.01).amsgrad(true), 2},
      {"maximize", p, g, optim::AdamOptions(0.01).maximize(true), 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    kern::set_cpu_fused_step(false);
    const AdamRun want = adam_run(c.p, c.g, c.o);
    EXPECT_EQ(want.exp_avg_bumps_per_step, 2u) << "the switch must turn the fused path off";
    kern::set_cpu_fused_step(true);
    const AdamRun got = adam_run(c.p, c.g, c.o);
    EXPECT_EQ(got.exp_avg_bumps_per_step, c.bumps) << (c.bumps == 1 ? "not fused" : "fused where it must not be");
    EXPECT_EQ(got.values, want.values) << "the composite's values, bit for bit";
  }
}

// RMSprop / Adagrad: which path ran, seen two ways. (1) Bytes the second step allocates: the fused
// pass none of p's size (only the 0-d step counter's scalar), the composite several temporaries
// (g * g, sqrt, + eps, / ...). (2) keys[0]'s version growth per step: square_avg 1 fused, 2
// composite (mul_ then add_); Adagrad's sum takes one add_ on both paths, so there (1) decides.
struct PathRun {
  std::vector<double> values;     // the parameter after two steps
  std::vector<double> state;      // every state tensor named in `keys`, concatenated
  size_t step_bytes;              // bytes allocated during the second step
  uint32_t state_bumps_per_step;  // keys[0]'s version growth in the second step
};

template <class Opt, class Options>
PathRun path_run(const Tensor& p0, const Tensor& g, const Options& o, const std::vector<std::string>& keys) {
  Tensor p = p0.is_contiguous() ? p0.detach().clone() : p0.detach().t().clone().t();
  p.requires_grad_();
  p.mutable_grad() = g;
  Opt opt({p}, o);
  opt.step();
  const uint32_t v1 = opt.state(p).at(keys[0]).version();
  const size_t before = memory::stats().allocated_total;
  opt.step();
  const size_t bytes = memory::stats().allocated_total - before;
  const uint32_t v2 = opt.state(p).at(keys[0]).version();
  PathRun r{checks::vals(p.detach()), {}, bytes, v2 - v1};
  for (const std::string& k : keys)
    for (double v : checks::vals(opt.state(p).at(k))) r.state.push_back(v);
  return r;
}

template <class Opt, class Options>
void check_paths(const std::string& what, const Tensor& p, const Tensor& g, const Options& o,
                 const std::vector<std::string>& keys, bool fused, uint32_t composite_bumps) {
  SCOPED_TRACE(what);
  const size_t p_bytes = static_cast<size_t>(p.numel()) * (p.dtype() == kFloat64 ? 8 : 4);
  kern::set_cpu_fused_step(false);
  const PathRun want = path_run<Opt>(p, g, o, keys);
  EXPECT_GE(want.step_bytes, p_bytes) << "the switch must turn the fused path off";
  EXPECT_EQ(want.state_bumps_per_step, composite_bumps) << "the switch must turn the fused path off";
  kern::set_cpu_fused_step(true);
  const PathRun got = path_run<Opt>(p, g, o, keys);
  if (fused) {
    EXPECT_LT(got.step_bytes, p_bytes) << "not fused: the step allocated " << got.step_bytes << " bytes";
    EXPECT_EQ(got.state_bumps_per_step, 1u) << "not fused, or " << keys[0] << "'s version not bumped exactly once";
  } else {
    EXPECT_GE(got.step_bytes, p_bytes) << "fused where it must not be";
    EXPECT_EQ(got.state_bumps_per_step, composite_bumps) << "fused where it must not be";
  }
  EXPECT_EQ(got.values, want.values) << "the composite's values, bit for bit";
  EXPECT_EQ(got.state, want.state) << "the composite's state, bit for bit";
}

TEST(FusedStep, RmspropAndAdagradTakenOnlyWhereSupportedAndOtherwiseTheComposite) {
  FusedOn restore;
  Generator gen(6);
  const Tensor p = randn({5, 70}, dtype(kFloat32), &gen), g = randn({5, 70}, dtype(kFloat32), &gen);
  const Tensor pt = randn({70, 5}, dtype(kFloat32), &gen).t();  // a non-contiguous [5, 70]
  ASSERT_FALSE(pt.is_contiguous());
  const Tensor gt = g.t().contiguous().t();  // g's values, not contiguous
  const Tensor p64 = p.to(kFloat64), g64 = g.to(kFloat64);
  using optim::RMSprop;
  using optim::RMSpropOptions;
  const auto every = RMSpropOptions(0.01).alpha(0.9).eps(1e-6).weight_decay(0.1).momentum(0.8).centered(true);
  const std::vector<std::string> rk = {"square_avg", "grad_avg", "momentum_buffer"};
  check_paths<RMSprop>("RMSprop float32, every option", p, g, every, rk, true, 2);
  check_paths<RMSprop>("RMSprop float64, every option", p64, g64, every, rk, true, 2);
  check_paths<RMSprop>("RMSprop defaults", p, g, RMSpropOptions(0.01), {"square_avg"}, true, 2);
  check_paths<RMSprop>("RMSprop non-contiguous parameter", pt, g, every, rk, false, 2);
  check_paths<RMSprop>("RMSprop non-contiguous gradient", p, gt, every, rk, false, 2);
  check_paths<RMSprop>("RMSprop maximize", p, g, RMSpropOptions(0.01).centered(true).maximize(true),
                       {"square_avg", "grad_avg"}, false, 2);
  using optim::Adagrad;
  using optim::AdagradOptions;
  const auto all = AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.1).initial_accumulator_value(0.3).eps(1e-8);
  check_paths<Adagrad>("Adagrad float32, every option", p, g, all, {"sum"}, true, 1);
  check_paths<Adagrad>("Adagrad float64, every option", p64, g64, all, {"sum"}, true, 1);
  check_paths<Adagrad>("Adagrad defaults", p, g, AdagradOptions(0.1), {"sum"}, true, 1);
  check_paths<Adagrad>("Adagrad non-contiguous parameter", pt, g, all, {"sum"}, false, 1);
  check_paths<Adagrad>("Adagrad non-contiguous gradient", p, gt, all, {"sum"}, false, 1);
  check_paths<Adagrad>("Adagrad maximize", p, g, AdagradOptions(0.1).maximize(true), {"sum"}, false, 1);
}

TEST(FusedStep, WritesBumpVersionsSoTheSavedTensorCheckFires) {
  FusedOn restore;
  const char* names[] = {"SGD with momentum", "Adam", "RMSprop centered with momentum", "Adagrad"};
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(names[which]);
    Tensor w = full({100}, 0.5).requires_grad_();
    w.mutable_grad() = full({100}, 0.25);
    const std::vector<Tensor> ws = {w};
    std::unique_ptr<optim::Optimizer> opt;
    std::vector<std::string> keys;
    switch (which) {
      case 0:
        opt = std::make_unique<optim::SGD>(ws, optim::SGDOptions(0.1).momentum(0.9));
        keys = {"momentum_buffer"};
        break;
      case 1:
        opt = std::make_unique<optim::Adam>(ws, optim::AdamOptions(0.1));
        keys = {"exp_avg", "exp_avg_sq"};
        break;
      case 2:
        opt = std::make_unique<optim::RMSprop>(ws, optim::RMSpropOptions(0.1).momentum(0.9).centered(true));
        keys = {"square_avg", "grad_avg", "momentum_buffer"};
        break;
      default:
        opt = std::make_unique<optim::Adagrad>(ws, optim::AdagradOptions(0.1));
        keys = {"sum"};
    }
    opt->step();  // creates the state
    std::vector<uint32_t> before;
    for (const std::string& k : keys) before.push_back(opt->state(w).at(k).version());
    const uint32_t w_before = w.version(), g_before = w.grad().version();
    const Tensor y = (w * w).sum();  // saves w
    opt->step();
    EXPECT_GT(w.version(), w_before) << "the parameter's version";
    EXPECT_EQ(w.grad().version(), g_before) << "the gradient is only read";
    for (size_t i = 0; i < keys.size(); ++i)
      EXPECT_GT(opt->state(w).at(keys[i]).version(), before[i]) << keys[i] << "'s version";
    try {
      y.backward();
      ADD_FAILURE() << "backward through a w the step modified";
    } catch (const AutogradError& e) {
      EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gradlab
