// Training checks: each catches its planted bug, stays quiet on the healthy digits MLP, and puts
// the model and the optimizer back as they were.

#include <cmath>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;
using ::testing::Not;

namespace {

double symptom(const dg::Finding& f) { return f.metric("symptom"); }

// log of a linear layer's output: NaN as soon as one output is negative (a hand-written loss bug).
struct LogOfLinearImpl : nn::Module {
  nn::Linear fc{nullptr};
  LogOfLinearImpl() {
    gl::manual_seed(1);
    fc = register_module("fc", nn::Linear(64, 10));
  }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return gl::log(fc(x)); }
};
GRADLAB_MODULE(LogOfLinear);

// sqrt(relu(.)): finite forward, infinite gradient where the ReLU output is exactly 0.
struct SqrtOfReluImpl : nn::Module {
  nn::Linear fc{nullptr};
  SqrtOfReluImpl() {
    gl::manual_seed(1);
    fc = register_module("fc", nn::Linear(64, 10));
  }
  gl::Tensor forward(const gl::Tensor& x) { return gl::sqrt(gl::relu(fc(x))); }
};
GRADLAB_MODULE(SqrtOfRelu);

// Calls an nn::Linear whose output overflows from its forward: the op is inside gradlab's Linear,
// the user's line is this call of it.
struct OverflowingLayerImpl : nn::Module {
  nn::Linear fc{nullptr};
  OverflowingLayerImpl() { fc = register_module("fc", nn::Linear(64, 10)); }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return fc(x); }
};
GRADLAB_MODULE(OverflowingLayer);

// A hand-written |h| = sqrt(h * h) on a zero-initialized layer (h = 0): finite forward and loss, a
// NaN gradient (inf * 0) at the very first backward.
struct AbsOfZeroLayerImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  AbsOfZeroLayerImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 32));
    fc2 = register_module("fc2", nn::Linear(32, 10));
    gl::NoGradGuard no_grad;
    fc1->weight.zero_();
    fc1->bias.zero_();
  }
  gl::Tensor forward(const gl::Tensor& x) {
    const gl::Tensor h = fc1(x);
    return fc2(gl::sqrt(h * h));
  }
};
GRADLAB_MODULE(AbsOfZeroLayer);

}  // namespace

TEST(DiagnoseTraining, OverfitOneBatchHealthyAndRestored) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1).momentum(0.9));
  const std::vector<double> before = flat(*net);
  const dg::Finding f = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), opt, xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_EQ(f.metric("accuracy"), 1.0);
  EXPECT_EQ(flat(*net), before) << "the model is put back";
  EXPECT_FALSE(opt.has_state(net->parameters()[0])) << "the optimizer's (empty) state is put back";
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
}

TEST(DiagnoseTraining, OverfitOneBatchNamesRisingLossForALargeLR) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(8.0));
  const dg::Finding f = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), opt, xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_EQ(symptom(f), 2);
  EXPECT_THAT(f.evidence, HasSubstr("rising loss"));
  EXPECT_THAT(f.hint, HasSubstr("LR is too large"));
}

TEST(DiagnoseTraining, OverfitOneBatchNamesAFlatLoss) {
  nn::Sequential net = mlp();
  gl::optim::SGD tiny(net->parameters(), gl::optim::SGDOptions(1e-5));
  const dg::Finding f = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), tiny, xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_EQ(symptom(f), 1);
  EXPECT_THAT(f.hint, HasSubstr("LR is too small"));

  // an optimizer that holds none of the model's parameters
  gl::Tensor stray = gl::zeros({3}).requires_grad_(true);
  gl::optim::SGD wrong(std::vector<gl::Tensor>{stray}, gl::optim::SGDOptions(0.1));
  const dg::Finding m = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), wrong, xb(), yb());
  EXPECT_EQ(symptom(m), 1);
  EXPECT_THAT(m.hint, HasSubstr("missing from the optimizer"));

  // no gradient at all: the model's output is detached
  dg::Model detached(net.ptr(), [net](const gl::Tensor& x) { return net(x).detach(); });
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding z = dg::overfit_one_batch(detached, nn::CrossEntropyLoss(), opt, xb(), yb());
  EXPECT_EQ(symptom(z), 1);
  EXPECT_EQ(z.metric("initial_grad_norm"), 0);
  EXPECT_THAT(z.hint, HasSubstr("zero gradient"));
}

TEST(DiagnoseTraining, OverfitOneBatchNamesSlowProgressAndAPlateau) {
  nn::Sequential net = mlp();
  gl::optim::SGD slow(net->parameters(), gl::optim::SGDOptions(0.003));
  const dg::Finding s = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), slow, xb(), yb());
  EXPECT_EQ(s.verdict, dg::Verdict::Fail) << s;
  EXPECT_EQ(symptom(s), 3) << s;

  // label noise: the same 32 images twice, with different labels the second time
  const gl::Tensor x = gl::cat({xb(32), xb(32)}, 0);
  const gl::Tensor y = gl::cat({yb(32), yb(32) + 1 - (yb(32) == 9).to(gl::kInt64) * 10}, 0);  // (y + 1) mod 10
  gl::optim::Adam adam(net->parameters(), gl::optim::AdamOptions(1e-2));
  const dg::Finding p = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), adam, x, y);
  EXPECT_EQ(p.verdict, dg::Verdict::Fail) << p;
  EXPECT_EQ(symptom(p), 4) << p;
  EXPECT_NEAR(p.metric("final_loss"), std::log(2.0), 0.15) << "the best it can do is 50/50 on each pair";
  EXPECT_THAT(p.hint, HasSubstr("label noise"));
}

TEST(DiagnoseTraining, LRRangeTest) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const std::vector<double> before = flat(*net);
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  const dg::LRRangeResult r = dg::lr_range_test(net, nn::CrossEntropyLoss(), opt, x, y);
  EXPECT_EQ(r.finding.verdict, dg::Verdict::Ok) << r.finding;
  ASSERT_GE(r.lrs.size(), 10u);
  EXPECT_TRUE(std::is_sorted(r.lrs.begin(), r.lrs.end()));
  EXPECT_GT(r.best_lr, 0.1);
  EXPECT_LT(r.losses[static_cast<size_t>(std::find(r.lrs.begin(), r.lrs.end(), r.best_lr) - r.lrs.begin())],
            r.losses.front());
  EXPECT_GT(r.diverged_lr, r.best_lr) << "SGD on the digits blows up somewhere below lr 10";
  EXPECT_DOUBLE_EQ(r.suggested_max, r.best_lr / 10);
  EXPECT_EQ(flat(*net), before);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);

  gl::optim::SGD big(net->parameters(), gl::optim::SGDOptions(r.diverged_lr * 2));
  EXPECT_EQ(dg::lr_range_test(net, nn::CrossEntropyLoss(), big, x, y).finding.verdict, dg::Verdict::Fail);
  gl::optim::SGD tiny(net->parameters(), gl::optim::SGDOptions(1e-6));
  EXPECT_EQ(dg::lr_range_test(net, nn::CrossEntropyLoss(), tiny, x, y).finding.verdict, dg::Verdict::Warn);
}

TEST(DiagnoseTraining, GradientStats) {
  nn::Sequential net = mlp();
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const dg::GradientStatsResult ok = dg::gradient_stats(net, nn::CrossEntropyLoss(), opt, x, y);
  EXPECT_EQ(ok.finding.verdict, dg::Verdict::Ok) << ok.finding;
  ASSERT_EQ(ok.parameters.size(), 4u);
  EXPECT_EQ(ok.parameters[0].name, "0.weight");
  ASSERT_EQ(ok.parameters[0].update_ratio.size(), 5u);
  // SGD: ||Δw|| = lr ||g||, so the first step's ratio is lr ||g|| / ||w||
  EXPECT_NEAR(ok.parameters[0].update_ratio[0],
              0.1 * ok.parameters[0].grad_norm[0] / gl::norm(net->parameters()[0].to(gl::kFloat64)).item<double>(),
              1e-6);

  gl::optim::SGD big(net->parameters(), gl::optim::SGDOptions(20.0));
  EXPECT_EQ(dg::gradient_stats(net, nn::CrossEntropyLoss(), big, x, y).finding.verdict, dg::Verdict::Fail);
  gl::optim::SGD tiny(net->parameters(), gl::optim::SGDOptions(1e-8));
  const dg::Finding t = dg::gradient_stats(net, nn::CrossEntropyLoss(), tiny, x, y).finding;
  EXPECT_EQ(t.verdict, dg::Verdict::Warn) << t;
  EXPECT_THAT(t.hint, HasSubstr("tiny updates"));
}

TEST(DiagnoseTraining, GradientStatsDoesNotJudgeParametersThatStartConstant) {
  // biases at 0 (as BatchNorm's bias, or nn::init::zeros_): ||Δw|| / ||w|| means nothing there
  nn::Sequential net = mlp();
  {
    gl::NoGradGuard no_grad;
    for (auto& [name, p] : net->named_parameters())
      if (name.find("bias") != std::string::npos) p.zero_();
  }
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(1e-8));  // tiny: weights must still warn
  const dg::GradientStatsResult r = dg::gradient_stats(net, nn::CrossEntropyLoss(), opt, x, y);
  ASSERT_EQ(r.parameters.size(), 4u);
  for (const auto& p : r.parameters)
    EXPECT_EQ(p.constant_start, p.name.find("bias") != std::string::npos) << p.name;
  EXPECT_THAT(r.finding.evidence, HasSubstr("0.bias: grad norm"));
  EXPECT_THAT(r.finding.evidence, HasSubstr("(starts constant: not judged)"));
  EXPECT_EQ(r.finding.verdict, dg::Verdict::Warn) << r.finding;
  EXPECT_THAT(r.finding.hint, HasSubstr("tiny updates on "));
  EXPECT_THAT(r.finding.hint, HasSubstr(".weight")) << "a weight, never a zero-started bias";
  EXPECT_THAT(r.finding.hint, ::testing::Not(HasSubstr("bias")));
}

TEST(DiagnoseTraining, NonFiniteWatchHealthy) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding f =
      dg::watch_nonfinite(net, nn::CrossEntropyLoss(), opt, digits().train.data(), digits().train.targets());
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_EQ(f.metric("step"), -1);
  EXPECT_FALSE(gl::autograd::is_anomaly_enabled()) << "anomaly mode is switched off again";
}

TEST(DiagnoseTraining, NonFiniteWatchFindsWhereTheNaNWasBorn) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  // in the data: one NaN pixel
  gl::Tensor x = digits().train.data().clone();
  {
    gl::NoGradGuard no_grad;
    x.select(0, 5).select(0, 20).fill_(NAN);
  }
  dg::NonFiniteOptions all;
  all.batch_size = 1437;  // one batch holds every row
  const dg::Finding d = dg::watch_nonfinite(net, nn::CrossEntropyLoss(), opt, x, digits().train.targets(), all);
  EXPECT_EQ(d.verdict, dg::Verdict::Fail);
  EXPECT_EQ(d.metric("phase"), 0);
  EXPECT_THAT(d.evidence, HasSubstr("born in the data"));

  // in forward: log of negative numbers, named with the user's line
  LogOfLinear logm;
  gl::optim::SGD o2(logm->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding fw =
      dg::watch_nonfinite(logm, dg::Loss::nll(), o2, digits().train.data(), digits().train.targets());
  EXPECT_EQ(fw.verdict, dg::Verdict::Fail);
  EXPECT_EQ(fw.metric("phase"), 1);
  EXPECT_THAT(fw.evidence, HasSubstr("anomaly detected in forward: Log (called at "));
  EXPECT_THAT(fw.evidence, HasSubstr("training_checks_test.cpp:" + std::to_string(LogOfLinearImpl::kLine)));

  // in backward: sqrt'(0) = inf
  SqrtOfRelu sq;
  gl::optim::SGD o3(sq->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding bw =
      dg::watch_nonfinite(sq, nn::CrossEntropyLoss(), o3, digits().train.data(), digits().train.targets());
  EXPECT_EQ(bw.verdict, dg::Verdict::Fail) << bw;
  EXPECT_EQ(bw.metric("phase"), 2);
  EXPECT_THAT(bw.evidence, HasSubstr("anomaly detected in backward: SqrtBackward0"));
}

// An op inside a library module (nn::Linear overflowing to inf) is named with the user's line:
// the call of the module in the user's forward, or the line that handed a Sequential over.
TEST(DiagnoseTraining, NonFiniteWatchNamesTheUsersLineForAnOpInsideAModule) {
  auto overflow = [](nn::LinearImpl& fc) {
    gl::NoGradGuard no_grad;
    fc.weight.fill_(3e38);  // finite, but x @ W^T overflows to inf
  };
  nn::Sequential net(nn::Linear(64, 10));
  overflow(*net[0]->as<nn::Linear>());
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const int given_line = __LINE__ + 1;
  const dg::Finding f = dg::watch_nonfinite(net, nn::CrossEntropyLoss(), opt, digits().train.data(),
                                            digits().train.targets());
  ASSERT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_EQ(f.metric("phase"), 1);
  EXPECT_THAT(f.evidence, HasSubstr("that op is inside the model given at checks/diagnose/training_checks_test.cpp:" +
                                    std::to_string(given_line) + " (in "));

  OverflowingLayer user;
  overflow(*user->fc);
  gl::optim::SGD o2(user->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding g = dg::watch_nonfinite(user, nn::CrossEntropyLoss(), o2, digits().train.data(),
                                            digits().train.targets());
  ASSERT_EQ(g.verdict, dg::Verdict::Fail) << g;
  EXPECT_THAT(g.evidence, HasSubstr("inside a module called at checks/diagnose/training_checks_test.cpp:" +
                                    std::to_string(OverflowingLayerImpl::kLine) + " (in "));
  EXPECT_THAT(g.evidence, Not(HasSubstr("that op is inside the model given at")));
}

TEST(DiagnoseTraining, LoaderSpeedHealthyInMemoryLoader) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const gl::data::DataLoader loader(digits().train, gl::data::DataLoaderOptions(64).shuffle(true).seed(2));
  const std::vector<double> before = flat(*net);
  const dg::Finding f = dg::check_loader_speed(net, nn::CrossEntropyLoss(), opt, loader);
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_EQ(f.metric("batches"), 8);
  EXPECT_LT(f.metric("wait_ratio"), 0.5);
  EXPECT_THAT(f.evidence, HasSubstr("over 8 batches (num_workers 0): waiting for a batch took a median "));
  EXPECT_EQ(flat(*net), before) << "the model is put back";
  EXPECT_EQ(loader.state(), (gl::data::LoaderState{2, 0, 0})) << "the loader does not move";
}

TEST(DiagnoseTraining, LoaderSpeedFindsASlowGet) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  // 16 samples of 2 ms each: >= 32 ms per batch against a step well under 1 ms
  const gl::data::DataLoader loader(SlowDigits(2), gl::data::DataLoaderOptions(16).seed(2));
  const std::vector<double> before = flat(*net);
  dg::LoaderSpeedOptions o;
  o.batches = 4;
  const dg::Finding f = dg::check_loader_speed(net, nn::CrossEntropyLoss(), opt, loader, o);
  EXPECT_EQ(f.verdict, dg::Verdict::Warn) << f;
  EXPECT_GE(f.metric("wait_ms"), 32.0) << "sleeps are a lower bound";
  EXPECT_GT(f.metric("wait_ratio"), 0.5);
  EXPECT_EQ(f.metric("batches"), 4);
  EXPECT_THAT(f.evidence, HasSubstr("(the model idles, waiting for data)"));
  EXPECT_THAT(f.hint, HasSubstr("raise num_workers (now 0)"));
  EXPECT_THAT(f.hint, HasSubstr("move decoding out of get()"));
  EXPECT_EQ(flat(*net), before);

  o.batches = 0;
  EXPECT_THROW(dg::check_loader_speed(net, nn::CrossEntropyLoss(), opt, loader, o), gl::ValueError);
}

// A NaN at the first step, before any update, comes from the model, not the LR: no training check
// may tell to lower the LR then.
TEST(DiagnoseTraining, ANonFiniteFirstStepIsNotBlamedOnTheLR) {
  AbsOfZeroLayer net;
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  const dg::Finding o = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), opt, xb(), yb());
  const dg::Finding r = dg::lr_range_test(net, nn::CrossEntropyLoss(), opt, x, y).finding;
  const dg::Finding g = dg::gradient_stats(net, nn::CrossEntropyLoss(), opt, x, y).finding;
  const dg::Finding w = dg::watch_nonfinite(net, nn::CrossEntropyLoss(), opt, x, y);
  EXPECT_THAT(o.evidence, HasSubstr("the first step already gives a non-finite gradient"));
  EXPECT_THAT(r.evidence, HasSubstr("the first step of the sweep"));
  EXPECT_THAT(g.evidence, HasSubstr("is not finite at step 0"));
  EXPECT_THAT(w.evidence, HasSubstr("step 0: anomaly detected in backward"));
  for (const dg::Finding* f : {&o, &r, &g, &w}) {
    EXPECT_EQ(f->verdict, dg::Verdict::Fail) << *f;
    EXPECT_THAT(f->hint, HasSubstr("before any update, so not the LR")) << *f;
    EXPECT_THAT(f->hint, ::testing::Not(HasSubstr("lower"))) << *f;
  }
  // a NaN born later, after updates with a far too large LR, still names the LR
  nn::Sequential m = mlp();
  gl::optim::SGD big(m->parameters(), gl::optim::SGDOptions(50.0));
  const dg::Finding late = dg::watch_nonfinite(m, nn::CrossEntropyLoss(), big, x, y);
  EXPECT_EQ(late.verdict, dg::Verdict::Fail) << late;
  EXPECT_GT(late.metric("step"), 0) << late;
  EXPECT_THAT(late.hint, HasSubstr("lower it 10x"));
}

// LR 0 is named as such (raising it 10x would leave it 0); a small but working LR (Adam 1e-4) is
// still falling after 200 steps: overfit_one_batch runs on (max_steps) and memorizes the batch.
TEST(DiagnoseTraining, OverfitOneBatchNamesLRZeroAndRunsOnWhileStillFalling) {
  nn::Sequential net = mlp();
  gl::optim::SGD zero(net->parameters(), gl::optim::SGDOptions(0.0));
  const dg::Finding z = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), zero, xb(), yb());
  EXPECT_EQ(z.verdict, dg::Verdict::Fail) << z;
  EXPECT_THAT(z.hint, HasSubstr("the LR is 0"));
  EXPECT_THAT(z.hint, ::testing::Not(HasSubstr("10x")));

  gl::optim::Adam slow(net->parameters(), gl::optim::AdamOptions(1e-4));
  const dg::Finding s = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), slow, xb(), yb());
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GT(s.metric("steps_run"), 200) << s;
  EXPECT_THAT(s.evidence, HasSubstr("of 200 (+ up to 800 while still falling) steps"));
  dg::OverfitOptions no_more;
  no_more.max_steps = 200;  // without running on, the same run is judged "still falling"
  const dg::Finding cut = dg::overfit_one_batch(net, nn::CrossEntropyLoss(), slow, xb(), yb(), no_more);
  EXPECT_EQ(cut.verdict, dg::Verdict::Fail) << cut;
  EXPECT_EQ(cut.metric("symptom"), 3) << cut;
}
