// The fused CPU optimizer update (backend/cpu/optim.cpp): which parameters take it, that the
// others still get the composite's values, and that its in-place writes bump the versions the
// saved-tensor check reads. Its bits against the composite: fused_step_prop.cpp.

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

TEST(FusedStep, WritesBumpVersionsSoTheSavedTensorCheckFires) {
  FusedOn restore;
  for (bool sgd : {true, false}) {
    SCOPED_TRACE(sgd ? "SGD with momentum" : "Adam");
    Tensor w = full({100}, 0.5).requires_grad_();
    w.mutable_grad() = full({100}, 0.25);
    std::unique_ptr<optim::Optimizer> opt;
    if (sgd) opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.1).momentum(0.9));
    else opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w}, optim::AdamOptions(0.1));
    opt->step();  // creates the state
    const std::vector<std::string> keys = sgd ? std::vector<std::string>{"momentum_buffer"}
                                              : std::vector<std::string>{"exp_avg", "exp_avg_sq"};
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
