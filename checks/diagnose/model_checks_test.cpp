// Model checks: each catches its planted bug and stays quiet on the healthy digits MLP.

#include <cmath>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;

namespace {

// A scale that requires grad but is a plain member, not a registered parameter.
struct UnregisteredImpl : nn::Module {
  nn::Linear fc{nullptr};
  gl::Tensor scale = gl::ones({1}).requires_grad_(true);
  UnregisteredImpl() { fc = register_module("fc", nn::Linear(64, 10)); }
  gl::Tensor forward(const gl::Tensor& x) { return fc(x) * scale; }
};
GRADLAB_MODULE(Unregistered);

// Subtracts the batch mean: every output depends on every sample.
struct MixesTheBatchImpl : nn::Module {
  nn::Linear fc{nullptr};
  MixesTheBatchImpl() { fc = register_module("fc", nn::Linear(64, 10)); }
  gl::Tensor forward(const gl::Tensor& x) { return fc(x - gl::mean(x, {0}, true)); }
};
GRADLAB_MODULE(MixesTheBatch);

// Ends with a functional softmax: the pairing check must name this file's line.
struct FunctionalSoftmaxImpl : nn::Module {
  nn::Linear fc{nullptr};
  FunctionalSoftmaxImpl() { fc = register_module("fc", nn::Linear(64, 10)); }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return gl::softmax(fc(x), 1); }  // the planted line
};
GRADLAB_MODULE(FunctionalSoftmax);

}  // namespace

TEST(DiagnoseModel, OutputShape) {
  nn::Sequential net = mlp();
  EXPECT_EQ(dg::check_output_shape(net, xb(), {64, 10}).verdict, dg::Verdict::Ok);
  const dg::Finding f = dg::check_output_shape(net, xb(), {64, 12});
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  EXPECT_THAT(f.evidence, HasSubstr("output [64, 10] for input [64, 64]; expected [64, 12]"));
  EXPECT_EQ(f.stage, dg::Stage::Model);
}

TEST(DiagnoseModel, GradientFlowHealthy) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding f = dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb(), &opt);
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_EQ(f.metric("trainable"), 4);
  for (const gl::Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined()) << "gradients are cleared";
}

TEST(DiagnoseModel, GradientFlowCatchesALayerLeftOut) {
  LayerLeftOut net;
  const dg::Finding f = dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  EXPECT_EQ(f.metric("unreached"), 2);
  EXPECT_THAT(f.evidence, HasSubstr("fc2.weight, fc2.bias"));
  EXPECT_THAT(f.hint, HasSubstr("left out"));
}

TEST(DiagnoseModel, GradientFlowCatchesParametersMissingFromTheOptimizer) {
  nn::Sequential net = mlp();
  // the optimizer was built from the first layer only
  gl::optim::SGD opt(net->ptr(0)->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Finding f = dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb(), &opt);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  EXPECT_EQ(f.metric("not_in_optimizer"), 2);
  EXPECT_THAT(f.evidence, HasSubstr("not held by the optimizer (SGD): 2.weight, 2.bias"));
}

TEST(DiagnoseModel, GradientFlowCatchesAnUnregisteredTensor) {
  Unregistered net;
  const dg::Finding f = dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  EXPECT_EQ(f.metric("unregistered"), 1);
  EXPECT_THAT(f.evidence, HasSubstr("MulBackward0"));
}

TEST(DiagnoseModel, ActivationsHealthy) {
  nn::Sequential net = mlp();
  const auto layers = dg::activation_stats(net, xb());
  ASSERT_EQ(layers.size(), 3u) << "one per leaf module, through forward hooks";
  EXPECT_EQ(layers[1].name, "1");
  EXPECT_EQ(layers[1].type, "ReLU");
  EXPECT_LT(layers[1].dead_fraction, 0.1);
  EXPECT_EQ(dg::check_activations(net, xb()).verdict, dg::Verdict::Ok);
}

TEST(DiagnoseModel, ActivationsCatchDeadReluAndSaturatedTanh) {
  nn::Sequential dead = mlp();
  {
    gl::NoGradGuard no_grad;
    dead->at<nn::LinearImpl>(0).bias.fill_(-20.0);  // every pre-activation far below 0
  }
  const dg::Finding d = dg::check_activations(dead, xb());
  EXPECT_EQ(d.verdict, dg::Verdict::Fail) << d;
  EXPECT_GT(d.metric("dead_1"), 0.9);
  EXPECT_THAT(d.evidence, HasSubstr("dead ReLU"));

  gl::manual_seed(1);
  nn::Sequential tanh_net(nn::Linear(64, 128), nn::Tanh(), nn::Linear(128, 10));
  EXPECT_EQ(dg::check_activations(tanh_net, xb()).verdict, dg::Verdict::Ok);
  {
    gl::NoGradGuard no_grad;
    tanh_net->at<nn::LinearImpl>(0).weight.mul_(30.0);  // a too large init scale
  }
  const dg::Finding t = dg::check_activations(tanh_net, xb());
  EXPECT_EQ(t.verdict, dg::Verdict::Fail) << t;
  EXPECT_GT(t.metric("saturated_1"), 0.5);
}

TEST(DiagnoseModel, BatchIndependence) {
  nn::Sequential net = mlp();
  const dg::Finding ok = dg::check_batch_independence(net, xb(8), 3);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_EQ(ok.metric("leak"), 0);
  for (const gl::Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined()) << "no gradient is left behind";

  MixesTheBatch mix;
  const dg::Finding bad = dg::check_batch_independence(mix, xb(8));
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail);
  EXPECT_GT(bad.metric("leak"), 1e-3);
}

TEST(DiagnoseModel, BatchNormInTrainModeIsNamedNotBlamed) {
  gl::manual_seed(1);
  nn::Sequential bn(nn::Linear(64, 32), nn::BatchNorm1d(32), nn::ReLU(), nn::Linear(32, 10));
  const dg::Finding f = dg::check_batch_independence(bn, xb(16));
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_GT(f.metric("leak"), 1e-4) << "train mode does mix the samples";
  EXPECT_EQ(f.metric("leak_eval"), 0);
  EXPECT_THAT(f.evidence, HasSubstr("BatchNorm '1' (BatchNorm1d)"));
  EXPECT_TRUE(bn->is_training() && bn->ptr(1)->is_training()) << "the modes are put back";

  // BatchNorm does not excuse a real mix: a model that also subtracts the batch mean fails
  gl::manual_seed(1);
  nn::Sequential both(MixesTheBatch(), nn::BatchNorm1d(10));
  EXPECT_EQ(dg::check_batch_independence(both, xb(16)).verdict, dg::Verdict::Fail);
}

TEST(DiagnoseModel, InitialLossAgainstLnC) {
  nn::Sequential net = mlp();
  const dg::Finding ok = dg::check_initial_loss(net, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_NEAR(ok.metric("expected"), std::log(10.0), 1e-12);
  EXPECT_NEAR(ok.metric("loss"), std::log(10.0), 0.3);

  // unnormalized inputs (pixels 0..255, as read from an 8-bit image) make the init confident and
  // wrong
  const gl::Tensor pixels = raw_digits().train.data().narrow(0, 0, 64) * 255.0;
  const dg::Finding bad = dg::check_initial_loss(net, nn::CrossEntropyLoss(), pixels, yb());
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail) << bad;
  EXPECT_GT(bad.metric("ratio"), 3);
}

TEST(DiagnoseModel, InitialLossForMSEIsTheTargetsSecondMoment) {
  gl::manual_seed(2);
  nn::Sequential reg(nn::Linear(64, 32), nn::ReLU(), nn::Linear(32, 1));
  const gl::Tensor y = gl::randn({64, 1}) * 2.0;
  const dg::Finding ok = dg::check_initial_loss(reg, nn::MSELoss(), xb(), y);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_NEAR(ok.metric("expected"), gl::mean(y * y).item<double>(), 1e-6);
  {
    gl::NoGradGuard no_grad;
    reg->at<nn::LinearImpl>(2).weight.mul_(100.0);
  }
  EXPECT_EQ(dg::check_initial_loss(reg, nn::MSELoss(), xb(), y).verdict, dg::Verdict::Fail);
}

TEST(DiagnoseModel, LossPairingHealthyPairs) {
  nn::Sequential net = mlp();
  EXPECT_EQ(dg::check_loss_pairing(net, nn::CrossEntropyLoss(), xb(), yb()).verdict, dg::Verdict::Ok);
  gl::manual_seed(1);
  nn::Sequential logp(nn::Linear(64, 10), nn::LogSoftmax(1));
  EXPECT_EQ(dg::check_loss_pairing(logp, nn::NLLLoss(), xb(), yb()).verdict, dg::Verdict::Ok);
  gl::manual_seed(1);
  nn::Sequential prob(nn::Linear(64, 1), nn::Sigmoid());
  EXPECT_EQ(dg::check_loss_pairing(prob, nn::MSELoss(), xb(), gl::zeros({64, 1})).verdict, dg::Verdict::Ok)
      << "sigmoid before MSE is not a pairing bug";
}

TEST(DiagnoseModel, LossPairingSoftmaxBeforeCrossEntropy) {
  gl::manual_seed(1);
  nn::Sequential net(nn::Linear(64, 10), nn::Softmax(1));
  const dg::Finding f = dg::check_loss_pairing(net, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  EXPECT_THAT(f.evidence, HasSubstr("softmax (DivBackward0, called at "));
  EXPECT_THAT(f.evidence, HasSubstr("the output of module '1' (Softmax)"));

  // functional softmax in the user's forward: the finding names the user's line
  FunctionalSoftmax fs;
  const dg::Finding g = dg::check_loss_pairing(fs, dg::Loss::cross_entropy(), xb(), yb());
  EXPECT_EQ(g.verdict, dg::Verdict::Fail);
  EXPECT_THAT(g.evidence,
              HasSubstr("model_checks_test.cpp:" + std::to_string(FunctionalSoftmaxImpl::kLine) + " (in "));
  EXPECT_THAT(g.evidence, HasSubstr("the output of the model (FunctionalSoftmax)"));
}

TEST(DiagnoseModel, LossPairingLogSoftmaxSigmoidAndRawLogits) {
  gl::manual_seed(1);
  nn::Sequential logp(nn::Linear(64, 10), nn::LogSoftmax(1));
  const dg::Finding redundant = dg::check_loss_pairing(logp, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(redundant.verdict, dg::Verdict::Warn) << redundant;
  EXPECT_THAT(redundant.evidence, HasSubstr("log_softmax (SubBackward0"));

  gl::manual_seed(1);
  nn::Sequential prob(nn::Linear(64, 1), nn::Sigmoid());
  const dg::Finding sig = dg::check_loss_pairing(prob, nn::BCEWithLogitsLoss(), xb(), gl::zeros({64, 1}));
  EXPECT_EQ(sig.verdict, dg::Verdict::Fail);
  EXPECT_THAT(sig.evidence, HasSubstr("sigmoid (SigmoidBackward0"));

  nn::Sequential net = mlp();
  const dg::Finding raw = dg::check_loss_pairing(net, nn::NLLLoss(), xb(), yb());
  EXPECT_EQ(raw.verdict, dg::Verdict::Fail);
  EXPECT_THAT(raw.evidence, HasSubstr("raw output (AddmmBackward0"));
  EXPECT_THAT(raw.evidence, HasSubstr("module '2' (Linear)"));
}

TEST(DiagnoseModel, CheckModelOnTheHealthyMlp) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  dg::ModelCheckOptions o;
  o.expected_output = {64, 10};
  const auto fs = dg::check_model(net, nn::CrossEntropyLoss(), xb(), yb(), &opt, o);
  ASSERT_EQ(fs.size(), 6u);
  for (const dg::Finding& f : fs) EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
}

// Every parameter frozen: nothing can learn (not "every one of the 0 parameters gets a gradient").
TEST(DiagnoseModel, GradientFlowFailsWhenNoParameterIsTrainable) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  EXPECT_TRUE(dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb(), &opt).ok());
  for (gl::Tensor& p : net->parameters()) p.requires_grad_(false);
  const dg::Finding f = dg::check_gradient_flow(net, nn::CrossEntropyLoss(), xb(), yb(), &opt);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_THAT(f.evidence, HasSubstr("no trainable parameter (4 parameters, all with requires_grad false)"));
}

// A NaN input gradient says nothing about mixing: the check says it cannot judge (and why), it
// does not claim the samples mix.
TEST(DiagnoseModel, BatchIndependenceWithANonFiniteGradient) {
  nn::Sequential net = mlp();
  dg::Model nan_grad(net.ptr(), [net](const gl::Tensor& x) { return net(gl::sqrt(x * 0.0)); });
  const dg::Finding f = dg::check_batch_independence(nan_grad, xb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_THAT(f.evidence, HasSubstr("cannot be judged"));
  EXPECT_THAT(f.evidence, ::testing::Not(HasSubstr("the samples mix")));
  EXPECT_TRUE(dg::check_batch_independence(net, xb()).ok());
}
