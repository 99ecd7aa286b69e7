// Optimizers: 3-step trajectories against PyTorch (every option), param groups, zero_grad,
// skipped parameters, state_dict round trips, validation errors, and a hand-worked SGD step.

#include "nn/nn_helpers.hpp"
#include "optim/pytorch_ref_optim.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// The gradient record_pytorch.py feeds at step t: 2 (p - 0.1 t) + 0.5 p².
Tensor fake_grad(const Tensor& p, int t) {
  std::vector<double> v = vals(p);
  for (double& x : v) x = 2 * (x - 0.1 * t) + 0.5 * x * x;
  return from_vector(v, p.sizes(), dtype(kFloat64));
}

struct Params {
  Tensor p0 = d64(ref::p0_init, {2, 3}, true);
  Tensor p1 = d64(ref::p1_init, {3}, true);
};

std::vector<double> trajectory(optim::Optimizer& opt, Params& ps) {
  std::vector<double> out;
  for (int t = 0; t < 3; ++t) {
    ps.p0.mutable_grad() = fake_grad(ps.p0, t);
    ps.p1.mutable_grad() = fake_grad(ps.p1, t);
    opt.step();
    for (double v : vals(ps.p0)) out.push_back(v);
    for (double v : vals(ps.p1)) out.push_back(v);
  }
  return out;
}

template <class Opt, class Options>
std::vector<double> run(const Options& o) {
  Params ps;
  Opt opt(std::vector<Tensor>{ps.p0, ps.p1}, o);
  return trajectory(opt, ps);
}

constexpr double kTol = 1e-13;

TEST(SGD, MatchesPyTorch) {
  using optim::SGD;
  using optim::SGDOptions;
  EXPECT_THAT((run<SGD>(SGDOptions(0.1))), Near(ref::sgd_plain, kTol));
  EXPECT_THAT((run<SGD>(SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01))),
              Near(ref::sgd_momentum, kTol));
  EXPECT_THAT((run<SGD>(SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.1))),
              Near(ref::sgd_nesterov, kTol));
  EXPECT_THAT((run<SGD>(SGDOptions(0.1).momentum(0.5).maximize(true))),
              Near(ref::sgd_maximize, kTol));
}

TEST(SGD, OneStepByHand) {
  Tensor w = d64({1.0, -2.0}, {2}, true);
  optim::SGD opt({w}, optim::SGDOptions(0.5).momentum(0.9));
  w.mutable_grad() = d64({0.2, 0.4}, {2});
  opt.step();  // buf = g; w -= 0.5 g
  EXPECT_THAT(vals(w), ElementsAre(0.9, -2.2));
  opt.step();  // buf = 0.9 g + g = 1.9 g; w -= 0.5 * 1.9 g
  EXPECT_THAT(vals(w), Near({0.9 - 0.19, -2.2 - 0.38}, 1e-15));
  EXPECT_THAT(vals(opt.state(w).at("momentum_buffer")), Near({0.38, 0.76}, 1e-15));
}

TEST(Adam, MatchesPyTorch) {
  using optim::Adam;
  using optim::AdamOptions;
  EXPECT_THAT((run<Adam>(AdamOptions(0.01))), Near(ref::adam_default, kTol));
  EXPECT_THAT(
      (run<Adam>(AdamOptions(0.02).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1).amsgrad(true))),
      Near(ref::adam_wd_amsgrad, kTol));
  EXPECT_THAT((run<Adam>(AdamOptions(0.01).maximize(true))), Near(ref::adam_maximize, kTol));
}

TEST(AdamW, MatchesPyTorch) {
  using optim::AdamW;
  using optim::AdamWOptions;
  EXPECT_THAT((run<AdamW>(AdamWOptions(0.01))), Near(ref::adamw_default, kTol));
  EXPECT_THAT((run<AdamW>(AdamWOptions(0.02).weight_decay(0.1).amsgrad(true))),
              Near(ref::adamw_amsgrad, kTol));
}

TEST(RMSprop, MatchesPyTorch) {
  using optim::RMSprop;
  using optim::RMSpropOptions;
  EXPECT_THAT((run<RMSprop>(RMSpropOptions(0.01))), Near(ref::rmsprop_default, kTol));
  EXPECT_THAT(
      (run<RMSprop>(
          RMSpropOptions(0.01).alpha(0.9).eps(1e-6).weight_decay(0.1).momentum(0.5).centered(
              true))),
      Near(ref::rmsprop_full, kTol));
}

TEST(Optimizer, ParamGroupsHaveTheirOwnLr) {
  Params ps;
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{ps.p0});
  groups.emplace_back(std::vector<Tensor>{ps.p1},
                      std::make_unique<optim::SGDOptions>(optim::SGDOptions(0.01).momentum(0.9)));
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options().get_lr(), 0.01);
  EXPECT_THAT(trajectory(opt, ps), Near(ref::sgd_groups, kTol));
  EXPECT_EQ(opt.parameters().size(), 2u);
}

TEST(Optimizer, SkipsParametersWithoutGradientAndZeroGrad) {
  Tensor a = ones({2}, dtype(kFloat64)).requires_grad_(),
         b = ones({2}, dtype(kFloat64)).requires_grad_();
  optim::Adam opt({a, b}, optim::AdamOptions(0.1));
  a.mutable_grad() = ones({2}, dtype(kFloat64));
  opt.step();
  EXPECT_THAT(vals(b), ElementsAre(1, 1));
  EXPECT_FALSE(opt.has_state(b)) << "no state for a parameter that never had a gradient";
  EXPECT_TRUE(opt.has_state(a));
  EXPECT_EQ(opt.state(a).at("step").item<double>(), 1.0);
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_THAT(vals(a.grad()), ElementsAre(0, 0));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, StepWithClosureReturnsItsLoss) {
  Tensor w = d64({3.0}, {1}, true);
  optim::SGD opt({w}, 0.25);
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = sum(w * w);
    l.backward();
    return l;
  });
  EXPECT_DOUBLE_EQ(loss.item<double>(), 9.0);
  EXPECT_DOUBLE_EQ(w.item<double>(), 3.0 - 0.25 * 6.0);
}

TEST(Optimizer, StateDictRoundTripContinuesIdentically) {
  Params a, b;
  optim::Adam oa({a.p0, a.p1}, optim::AdamOptions(0.01).amsgrad(true));
  trajectory(oa, a);
  const StateDict sd = oa.state_dict();
  EXPECT_TRUE(sd.contains("state.0.exp_avg"));
  EXPECT_TRUE(sd.contains("state.1.max_exp_avg_sq"));
  EXPECT_EQ(sd.at("state.1.step").dim(), 0);
  EXPECT_EQ(sd.at("state.1.step").item<double>(), 3.0);
  EXPECT_EQ(sd.at("param_groups.0.beta2").item<double>(), 0.999);
  EXPECT_EQ(sd.at("param_groups.0.lr").dtype(), kFloat64);
  EXPECT_THAT(checks::ivals(sd.at("param_groups.0.params")), ElementsAre(0, 1));
  // b starts from a's parameters and state: both continue identically.
  {
    NoGradGuard ng;
    b.p0.copy_(a.p0);
    b.p1.copy_(a.p1);
  }
  optim::Adam ob({b.p0, b.p1}, optim::AdamOptions(0.5));
  ob.load_state_dict(sd);
  EXPECT_DOUBLE_EQ(ob.param_groups()[0].options().get_lr(), 0.01);
  EXPECT_TRUE(static_cast<optim::AdamOptions&>(ob.param_groups()[0].options()).amsgrad());
  EXPECT_FALSE(ob.state(b.p0).at("exp_avg").is_same_storage(oa.state(a.p0).at("exp_avg")))
      << "state is copied";
  EXPECT_THAT(trajectory(ob, b), Near(trajectory(oa, a), 0));
}

template <class Opt, class Options>
void expect_resume_identical(const Options& o, const char* what) {
  Params a, b;
  Opt oa({a.p0, a.p1}, o);
  trajectory(oa, a);
  {
    NoGradGuard ng;
    b.p0.copy_(a.p0);
    b.p1.copy_(a.p1);
  }
  Opt ob({b.p0, b.p1}, o);
  ob.load_state_dict(oa.state_dict());
  EXPECT_THAT(trajectory(ob, b), Near(trajectory(oa, a), 0)) << what;
}

TEST(Optimizer, EveryOptimizerResumesIdenticallyFromItsStateDict) {
  expect_resume_identical<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true), "SGD");
  expect_resume_identical<optim::Adam>(optim::AdamOptions(0.01).weight_decay(0.1), "Adam");
  expect_resume_identical<optim::AdamW>(optim::AdamWOptions(0.01).amsgrad(true), "AdamW");
  expect_resume_identical<optim::RMSprop>(optim::RMSpropOptions(0.01).momentum(0.5).centered(true),
                                          "RMSprop");
}

TEST(Optimizer, LoadStateDictErrors) {
  Params a;
  optim::SGD sgd({a.p0, a.p1}, optim::SGDOptions(0.1).momentum(0.9));
  trajectory(sgd, a);
  StateDict sd = sgd.state_dict();
  optim::SGD one({a.p0}, 0.1);
  EXPECT_THROW_MSG(one.load_state_dict(sd), ValueError, "doesn't match the size", "1 parameters",
                   "2 parameters");
  std::vector<optim::OptimizerParamGroup> groups{optim::OptimizerParamGroup({a.p0}),
                                                 optim::OptimizerParamGroup({a.p1})};
  optim::SGD two(groups, 0.1);
  EXPECT_THROW_MSG(two.load_state_dict(sd), ValueError, "different number of parameter groups");
  optim::Adam adam({a.p0, a.p1});
  EXPECT_THROW_MSG(adam.load_state_dict(sd), ValueError, "unknown hyperparameter 'momentum'");
  StateDict bad = sd;
  bad.insert("state.0.momentum_buffer", zeros({5}, dtype(kFloat64)));
  optim::SGD again({a.p0, a.p1}, 0.1);
  EXPECT_THROW_MSG(again.load_state_dict(bad), ShapeError, "does not fit its parameter", "[2, 3]",
                   "[5]");
}

TEST(Optimizer, ConstructionErrors) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_THROW_MSG(optim::SGD(std::vector<Tensor>{}, 0.1), ValueError, "empty parameter list");
  EXPECT_THROW_MSG(optim::SGD({w}, -0.1), ValueError, "invalid learning rate");
  EXPECT_THROW_MSG(optim::SGD({w}, optim::SGDOptions(0.1).nesterov(true)), ValueError,
                   "Nesterov momentum requires");
  EXPECT_THROW_MSG(optim::Adam({w}, optim::AdamOptions().betas({1.0, 0.999})), ValueError,
                   "beta parameter at index 0");
  EXPECT_THROW_MSG(optim::SGD({w, w}, 0.1), ValueError, "more than one parameter group");
  Tensor nonleaf = w * 2;
  EXPECT_THROW_MSG(optim::SGD({nonleaf}, 0.1), ValueError, "non-leaf");
  EXPECT_THROW_MSG(optim::RMSprop({w}, optim::RMSpropOptions().alpha(-1)), ValueError, "alpha");
}

}  // namespace
}  // namespace gradlab
