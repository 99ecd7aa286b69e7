// LR schedulers: 15-step lr sequences against PyTorch (two param groups), state round trips,
// errors.

#include "nn/nn_helpers.hpp"
#include "optim/pytorch_ref_optim.hpp"

namespace gradlab {
namespace {

using checks::Near;

struct Rig {
  Tensor p = zeros({1}).requires_grad_(), q = zeros({1}).requires_grad_();
  std::unique_ptr<optim::SGD> opt;
  Rig() {
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{p});
    g.emplace_back(std::vector<Tensor>{q}, std::make_unique<optim::SGDOptions>(0.2));
    opt = std::make_unique<optim::SGD>(std::move(g), optim::SGDOptions(0.1));
  }
  std::vector<double> lrs() const {
    return {opt->param_groups()[0].options().get_lr(), opt->param_groups()[1].options().get_lr()};
  }
};

template <class Sched, class... A>
std::vector<double> sequence(A... args) {
  Rig s;
  Sched sched(*s.opt, args...);
  std::vector<double> out = s.lrs();
  EXPECT_THAT(sched.get_last_lr(), Near(s.lrs(), 0));
  for (int i = 0; i < 15; ++i) {
    s.opt->step();
    sched.step();
    for (double v : s.lrs()) out.push_back(v);
  }
  return out;
}

TEST(Schedulers, MatchPyTorch) {
  EXPECT_THAT((sequence<optim::StepLR>(int64_t{3}, 0.5)), Near(ref::step_lr, 1e-15));
  EXPECT_THAT((sequence<optim::MultiStepLR>(std::vector<int64_t>{2, 5, 5, 9}, 0.1)),
              Near(ref::multistep_lr, 1e-15));
  EXPECT_THAT((sequence<optim::ExponentialLR>(0.9)), Near(ref::exponential_lr, 1e-15));
  EXPECT_THAT((sequence<optim::CosineAnnealingLR>(int64_t{5}, 0.01)), Near(ref::cosine_lr, 1e-15));
  EXPECT_THAT((sequence<optim::LinearLR>(0.25, 1.0, int64_t{4})), Near(ref::linear_lr, 1e-15));
}

std::vector<double> plateau(optim::ReduceLROnPlateauOptions o) {
  Rig s;
  optim::ReduceLROnPlateau sched(*s.opt, o);
  std::vector<double> out = s.lrs();
  for (double m : ref::plateau_metrics) {
    sched.step(m);
    for (double v : s.lrs()) out.push_back(v);
  }
  return out;
}

TEST(ReduceLROnPlateau, MatchesPyTorch) {
  optim::ReduceLROnPlateauOptions o;
  o.factor = 0.5;
  o.patience = 2;
  o.threshold = 0.01;
  o.cooldown = 1;
  o.min_lr = 0.03;
  EXPECT_THAT(plateau(o), Near(ref::plateau_min_lr, 1e-15));
  optim::ReduceLROnPlateauOptions m;
  m.mode = optim::ReduceLROnPlateauOptions::Mode::Max;
  m.factor = 0.1;
  m.patience = 1;
  m.threshold = 0.05;
  m.threshold_mode = optim::ReduceLROnPlateauOptions::ThresholdMode::Abs;
  EXPECT_THAT(plateau(m), Near(ref::plateau_max_abs_lr, 1e-15));
}

TEST(Schedulers, StateDictRoundTripResumesTheSequence) {
  Rig a;
  optim::CosineAnnealingLR sa(*a.opt, 5, 0.01);
  for (int i = 0; i < 4; ++i) sa.step();
  const StateDict sd = sa.state_dict();
  EXPECT_EQ(sd.at("last_epoch").item<double>(), 4.0);
  EXPECT_EQ(sd.at("T_max").item<double>(), 5.0);
  EXPECT_TRUE(sd.contains("base_lrs.1"));
  // Resume: the optimizer's lrs come from the optimizer's own state, the counters from the
  // scheduler's.
  Rig b;
  optim::CosineAnnealingLR sb(*b.opt, 99, 0.5);
  b.opt->load_state_dict(a.opt->state_dict());
  sb.load_state_dict(sd);
  EXPECT_EQ(sb.last_epoch(), 4);
  for (int i = 0; i < 8; ++i) {
    sa.step();
    sb.step();
    EXPECT_THAT(sb.get_last_lr(), Near(sa.get_last_lr(), 0)) << i;
  }
  Rig c;
  optim::MultiStepLR ms(*c.opt, {3, 1}, 0.5);
  const StateDict msd = ms.state_dict();
  EXPECT_THAT(checks::ivals(msd.at("milestones")), ::testing::ElementsAre(1, 3));
  Rig d;
  optim::MultiStepLR md(*d.opt, {7}, 0.9);
  md.load_state_dict(msd);
  md.step();
  EXPECT_THAT(md.get_last_lr(), Near({0.05, 0.1}, 1e-15)) << "milestone 1 restored";

  Rig e;
  optim::ReduceLROnPlateau pa(*e.opt);
  pa.step(1.0);
  pa.step(2.0);
  Rig f;
  optim::ReduceLROnPlateau pb(*f.opt);
  pb.load_state_dict(pa.state_dict());
  EXPECT_EQ(pb.best(), 1.0);
  EXPECT_EQ(pb.num_bad_epochs(), 1);
  EXPECT_EQ(pb.last_epoch(), 2);
}

template <class Sched, class... A>
void expect_resume(const char* what, A... args) {
  Rig a, b;
  Sched sa(*a.opt, args...);
  for (int i = 0; i < 3; ++i) sa.step();
  // Resume order (as in PyTorch): build optimizer and scheduler, then load both states. The
  // scheduler's constructor sets step 0's lr (LinearLR scales it); the optimizer's state then
  // restores the saved lr.
  Sched sb(*b.opt, args...);
  b.opt->load_state_dict(a.opt->state_dict());
  sb.load_state_dict(sa.state_dict());
  for (int i = 0; i < 8; ++i) {
    sa.step();
    sb.step();
    EXPECT_THAT(sb.get_last_lr(), Near(sa.get_last_lr(), 0)) << what << " step " << i;
  }
}

TEST(Schedulers, EverySchedulerResumesFromItsStateDict) {
  expect_resume<optim::StepLR>("StepLR", int64_t{2}, 0.5);
  expect_resume<optim::ExponentialLR>("ExponentialLR", 0.8);
  expect_resume<optim::LinearLR>("LinearLR", 0.2, 1.0, int64_t{6});
  expect_resume<optim::MultiStepLR>("MultiStepLR", std::vector<int64_t>{4, 6}, 0.3);
  expect_resume<optim::CosineAnnealingLR>("CosineAnnealingLR", int64_t{4}, 0.0);
}

TEST(Schedulers, Errors) {
  Rig s;
  EXPECT_THROW_MSG(optim::StepLR(*s.opt, 0), ValueError, "step_size must be positive");
  EXPECT_THROW_MSG(optim::LinearLR(*s.opt, 0.0), ValueError, "start_factor");
  EXPECT_THROW_MSG(optim::CosineAnnealingLR(*s.opt, 0), ValueError, "T_max");
  optim::ReduceLROnPlateauOptions o;
  o.factor = 1.5;
  EXPECT_THROW_MSG(optim::ReduceLROnPlateau(*s.opt, o), ValueError, "factor should be < 1.0");
  optim::StepLR st(*s.opt, 2);
  StateDict sd = st.state_dict();
  sd.insert("base_lrs.2", scalar_tensor(0.1, dtype(kFloat64)));
  EXPECT_THROW_MSG(st.load_state_dict(sd), ValueError, "number of param groups");
}

}  // namespace
}  // namespace gradlab
