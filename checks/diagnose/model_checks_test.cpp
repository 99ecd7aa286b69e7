// Model checks: each catches its planted bug and stays quiet on the healthy digits MLP.

#include <cmath>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;
using ::testing::Not;

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

// Calls an nn::Softmax module from its forward: the op's own line is inside gradlab (layers.cpp),
// the pairing check must name this file's call of the module instead.
struct SoftmaxModuleImpl : nn::Module {
  nn::Linear fc{nullptr};
  nn::Softmax sm{nullptr};
  SoftmaxModuleImpl() {
    fc = register_module("fc", nn::Linear(64, 10));
    sm = register_module("sm", nn::Softmax(1));
  }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return sm(fc(x)); }  // the user's call of the module
};
GRADLAB_MODULE(SoftmaxModule);

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
  const int given_line = __LINE__ + 1;
  const dg::Finding f = dg::check_loss_pairing(net, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail);
  // No user line calls the Sequential's Softmax: the finding names the line that handed the model
  // (and the loss) over, never a line of gradlab's own sources.
  EXPECT_THAT(f.evidence, HasSubstr("softmax (DivBackward0, inside the model given at checks/diagnose/model_checks_test.cpp:" +
                                    std::to_string(given_line) + " (in "));
  EXPECT_THAT(f.evidence, HasSubstr("fed to cross_entropy (inside the loss given at checks/diagnose/model_checks_test.cpp:" +
                                    std::to_string(given_line)));
  EXPECT_THAT(f.evidence, HasSubstr("the output of module '1' (Softmax)"));
  EXPECT_THAT(f.evidence, Not(HasSubstr("src/gradlab/"))) << f;

  // an nn::Softmax called from the user's forward: that call's line
  SoftmaxModule sm;
  const dg::Finding m = dg::check_loss_pairing(sm, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(m.verdict, dg::Verdict::Fail);
  EXPECT_THAT(m.evidence, HasSubstr("softmax (DivBackward0, inside a module called at checks/diagnose/model_checks_test.cpp:" +
                                    std::to_string(SoftmaxModuleImpl::kLine) + " (in "));
  EXPECT_THAT(m.evidence, HasSubstr("the output of module 'sm' (Softmax)"));
  EXPECT_THAT(m.evidence, Not(HasSubstr("src/gradlab/"))) << m;

  // functional softmax in the user's forward: the finding names the user's line
  FunctionalSoftmax fs;
  const dg::Finding g = dg::check_loss_pairing(fs, dg::Loss::cross_entropy(), xb(), yb());
  EXPECT_EQ(g.verdict, dg::Verdict::Fail);
  EXPECT_THAT(g.evidence, HasSubstr("softmax (DivBackward0, called at checks/diagnose/model_checks_test.cpp:" +
                                    std::to_string(FunctionalSoftmaxImpl::kLine) + " (in "));
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
  ASSERT_EQ(fs.size(), 8u);
  for (const dg::Finding& f : fs) EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
}

namespace {

// fc2(relu(fc1(x))) with the ReLU called as a function; `bias` plants a dead ReLU (fc1's bias at
// -100: every pre-activation negative).
struct FunctionalReluImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  explicit FunctionalReluImpl(double bias = 0) {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
    gl::NoGradGuard no_grad;
    if (bias != 0) fc1->bias.fill_(bias);
  }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return fc2(gl::relu(fc1(x))); }  // the planted line
};
GRADLAB_MODULE(FunctionalRelu);

// fc2(tanh(scale * fc1(x))): a large scale saturates the functional tanh.
struct FunctionalTanhImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  double scale;
  explicit FunctionalTanhImpl(double s = 1) : scale(s) {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 64));
    fc2 = register_module("fc2", nn::Linear(64, 10));
  }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return fc2(fc1(x).mul(scale).tanh()); }
};
GRADLAB_MODULE(FunctionalTanh);

// `depth` Linear layers of width 64 with `act` between them; init_std > 0 redraws every weight
// from N(0, init_std^2) and zeroes the biases.
template <class Act>
nn::Sequential deep_mlp(int depth, double init_std = 0) {
  gl::manual_seed(3);
  nn::Sequential net;
  for (int i = 0; i < depth; ++i) {
    net->push_back(nn::Linear(64, i + 1 == depth ? 10 : 64));
    if (i + 1 < depth) net->push_back(Act());
  }
  if (init_std > 0) {
    gl::NoGradGuard no_grad;
    for (auto& [name, p] : net->named_parameters()) {
      if (name.find("weight") != std::string::npos) nn::init::normal_(p, 0.0, init_std);
      else p.zero_();
    }
  }
  return net;
}

// A FunctionalRelu called from this module's forward: the relu's node carries both sites.
struct OuterImpl : nn::Module {
  FunctionalRelu inner{nullptr};
  OuterImpl() { inner = register_module("inner", FunctionalRelu()); }
  static constexpr int kLine = __LINE__ + 1;
  gl::Tensor forward(const gl::Tensor& x) { return inner(x); }
};
GRADLAB_MODULE(Outer);

// A leaf module (parameters, no children) whose forward ends in gl::relu; bias -100 kills it.
struct LeafReluImpl : nn::Module {
  gl::Tensor w, b;
  LeafReluImpl() {
    gl::manual_seed(1);
    w = register_parameter("w", gl::randn({64, 32}) * 0.1);
    b = register_parameter("b", gl::full({32}, -100.0));
  }
  gl::Tensor forward(const gl::Tensor& x) { return gl::relu(gl::matmul(x, w) + b); }
};
GRADLAB_MODULE(LeafRelu);

// A regression model ending with `act` (or linear when none), output [B, 1].
template <class... Act>
nn::Sequential regressor(Act... act) {
  gl::manual_seed(2);
  return nn::Sequential(nn::Linear(64, 16), nn::ReLU(), nn::Linear(16, 1), act...);
}

}  // namespace

TEST(DiagnoseModel, ActivationStatsSeesFunctionalActivationsOnce) {
  FunctionalRelu healthy;
  const auto layers = dg::activation_stats(healthy, xb());
  ASSERT_EQ(layers.size(), 3u) << "fc1, the functional relu, fc2 in forward order";
  EXPECT_EQ(layers[0].name, "fc1");
  EXPECT_TRUE(layers[1].functional);
  EXPECT_EQ(layers[1].type, "ReLU");
  EXPECT_THAT(layers[1].name, HasSubstr("relu at "));
  EXPECT_THAT(layers[1].name, HasSubstr("model_checks_test.cpp:" + std::to_string(FunctionalReluImpl::kLine)));
  EXPECT_EQ(layers[1].shape, (gl::Shape{64, 128}));
  EXPECT_EQ(layers[2].name, "fc2");
  EXPECT_EQ(dg::check_activations(healthy, xb()).verdict, dg::Verdict::Ok);

  // nn::ReLU in a Sequential is a graph node too: counted once, as the module
  const auto seq = dg::activation_stats(mlp(), xb());
  ASSERT_EQ(seq.size(), 3u);
  for (const auto& s : seq) EXPECT_FALSE(s.functional) << s.name;
  EXPECT_EQ(seq[1].name, "1");
}

TEST(DiagnoseModel, ActivationStatsNameTheModuleCallOfAFunctionalActivation) {
  Outer outer;
  const auto layers = dg::activation_stats(outer, xb());
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_THAT(layers[1].name, HasSubstr("relu at checks/diagnose/model_checks_test.cpp:" +
                                        std::to_string(FunctionalReluImpl::kLine)));
  EXPECT_THAT(layers[1].name, HasSubstr(", inside a module called at checks/diagnose/model_checks_test.cpp:" +
                                        std::to_string(OuterImpl::kLine)));
  EXPECT_EQ(layers[0].name, "inner.fc1");
}

TEST(DiagnoseModel, ActivationsSeeTheReluAtTheEndOfACustomLeafModule) {
  gl::manual_seed(1);
  nn::Sequential net(LeafRelu(), nn::Linear(32, 10));
  const auto layers = dg::activation_stats(net, xb());
  ASSERT_EQ(layers.size(), 3u) << "module 0, its relu (the same output, measured as a relu), module 1";
  EXPECT_EQ(layers[0].name, "0");
  EXPECT_EQ(layers[0].type, "LeafRelu");
  EXPECT_TRUE(layers[1].functional);
  EXPECT_EQ(layers[1].dead_fraction, 1.0);
  EXPECT_EQ(dg::check_activations(net, xb()).verdict, dg::Verdict::Fail);
}

TEST(DiagnoseModel, ActivationsFindADeadFunctionalRelu) {
  FunctionalRelu dead(-100.0);
  const dg::Finding f = dg::check_activations(dead, xb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  const std::string site = "model_checks_test.cpp:" + std::to_string(FunctionalReluImpl::kLine);
  EXPECT_THAT(f.evidence, HasSubstr("relu at "));
  EXPECT_THAT(f.evidence, HasSubstr(site));
  EXPECT_THAT(f.evidence, HasSubstr("100% of its units are 0 for every sample (dead ReLU)"));

  // and doctor stops at the model stage with the same finding
  gl::optim::SGD opt(dead->parameters(), gl::optim::SGDOptions(0.1));
  const dg::Report r = dg::doctor(dead, nn::CrossEntropyLoss(), opt, {digits().train.data(), digits().train.targets()});
  ASSERT_TRUE(r.stopped_at.has_value()) << r;
  EXPECT_EQ(*r.stopped_at, dg::Stage::Model) << r;
  const dg::Finding* a = r.find("activations");
  ASSERT_NE(a, nullptr) << r;
  EXPECT_EQ(a->verdict, dg::Verdict::Fail) << r;
  EXPECT_THAT(a->evidence, HasSubstr(site));
}

TEST(DiagnoseModel, ActivationsFindASaturatedFunctionalTanh) {
  FunctionalTanh healthy;
  EXPECT_EQ(dg::check_activations(healthy, xb()).verdict, dg::Verdict::Ok) << dg::check_activations(healthy, xb());
  FunctionalTanh saturated(50.0);
  const dg::Finding f = dg::check_activations(saturated, xb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_THAT(f.evidence, HasSubstr("tanh at "));
  EXPECT_THAT(f.evidence, HasSubstr("model_checks_test.cpp:" + std::to_string(FunctionalTanhImpl::kLine)));
  EXPECT_THAT(f.evidence, HasSubstr("of its outputs are saturated"));
}

TEST(DiagnoseModel, LayerGradientsHealthy) {
  const dg::Finding two = dg::check_layer_gradients(mlp(), nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(two.verdict, dg::Verdict::Ok) << two;
  EXPECT_EQ(two.metric("layers"), 2);
  EXPECT_THAT(two.evidence, HasSubstr("'0' (Linear): ||dL/dy||"));
  const dg::Finding four = dg::check_layer_gradients(deep_mlp<nn::ReLU>(4), nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(four.verdict, dg::Verdict::Ok) << four;
  EXPECT_EQ(four.metric("layers"), 4);

  const auto layers = dg::layer_gradients(mlp(), nn::CrossEntropyLoss(), xb(), yb());
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_NEAR(two.metric("ratio"), layers[0].output_grad_norm / layers[1].output_grad_norm, 1e-12);
  EXPECT_GT(layers[0].param_grad_norm, 0);
}

TEST(DiagnoseModel, LayerGradientsNoneReachesTheFirstLayer) {
  FunctionalRelu dead(-100.0);  // the relu after fc1 passes no gradient back
  const dg::Finding f = dg::check_layer_gradients(dead, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_EQ(f.metric("ratio"), 0);
  EXPECT_THAT(f.evidence, HasSubstr("no gradient at all reaches the first layer's output"));
  EXPECT_THAT(f.hint, HasSubstr("dead ReLUs"));
}

TEST(DiagnoseModel, LayerGradientsVanishInADeepSigmoidStackWithATinyInit) {
  const dg::Finding f = dg::check_layer_gradients(deep_mlp<nn::Sigmoid>(10, 0.01), nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_LT(f.metric("ratio"), 1e-4);
  EXPECT_EQ(f.metric("layers"), 10);
  EXPECT_THAT(f.evidence, HasSubstr("vanishing gradients: "));
  EXPECT_THAT(f.evidence, HasSubstr("'18' (Linear): ||dL/dy||"));
  EXPECT_THAT(f.hint, HasSubstr("ReLU-family"));
}

TEST(DiagnoseModel, LayerGradientsExplodeInADeepStackWithALargeInit) {
  const dg::Finding f = dg::check_layer_gradients(deep_mlp<nn::ReLU>(10, 1.0), nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_GT(f.metric("ratio"), 1e4);
  EXPECT_THAT(f.evidence, HasSubstr("exploding gradients: "));
  EXPECT_THAT(f.hint, HasSubstr("init scale is too large"));
  dg::LayerGradientOptions lax;
  lax.warn_ratio = 1e30;
  lax.fail_ratio = 1e30;
  EXPECT_EQ(dg::check_layer_gradients(deep_mlp<nn::ReLU>(10, 1.0), nn::CrossEntropyLoss(), xb(), yb(), lax).verdict,
            dg::Verdict::Ok);
  lax.fail_ratio = 1;
  EXPECT_THROW(dg::check_layer_gradients(mlp(), nn::CrossEntropyLoss(), xb(), yb(), lax), gl::ValueError);
}

TEST(DiagnoseModel, LossFloorHealthy) {
  EXPECT_EQ(dg::check_loss_floor(mlp(), nn::CrossEntropyLoss(), xb(), yb()).verdict, dg::Verdict::Ok);
  const gl::Tensor y = gl::linspace(5, 50, 64).reshape({64, 1});
  const dg::Finding linear = dg::check_loss_floor(regressor(), nn::MSELoss(), xb(), y);
  EXPECT_EQ(linear.verdict, dg::Verdict::Ok) << linear;
  EXPECT_THAT(linear.evidence, HasSubstr("not bounded by an output activation"));
  // a sigmoid output on targets inside (0, 1): reachable
  const dg::Finding inside =
      dg::check_loss_floor(regressor(nn::Sigmoid()), nn::MSELoss(), xb(), gl::linspace(0.2, 0.8, 64).reshape({64, 1}));
  EXPECT_EQ(inside.verdict, dg::Verdict::Ok) << inside;
  EXPECT_EQ(inside.metric("floor"), 0);
  // relu output, non-negative targets; relu logits into cross-entropy (unbounded above)
  const dg::Finding relu = dg::check_loss_floor(regressor(nn::ReLU()), nn::MSELoss(), xb(), y);
  EXPECT_EQ(relu.verdict, dg::Verdict::Ok) << relu;
  EXPECT_THAT(relu.evidence, HasSubstr("targets span [5, 50]: inside the range, MSE can reach 0"));
  gl::manual_seed(1);
  nn::Sequential relu_logits(nn::Linear(64, 10), nn::ReLU());
  const dg::Finding ce = dg::check_loss_floor(relu_logits, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(ce.verdict, dg::Verdict::Ok) << ce;
  EXPECT_THAT(ce.evidence, HasSubstr("unbounded above: no floor"));
}

TEST(DiagnoseModel, LossFloorSigmoidOutputOnLargeRegressionTargets) {
  const gl::Tensor y = gl::linspace(5, 50, 64).reshape({64, 1});
  const dg::Finding f = dg::check_loss_floor(regressor(nn::Sigmoid()), nn::MSELoss(), xb(), y);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  // every target is above 1: floor = mean((y - 1)^2)
  const double floor = gl::mean(gl::pow(y.to(gl::kFloat64) - 1.0, 2.0)).item<double>();
  EXPECT_NEAR(f.metric("floor"), floor, 1e-9 * floor);
  EXPECT_EQ(f.metric("target_min"), 5);
  EXPECT_EQ(f.metric("target_max"), 50);
  // the Sequential's Sigmoid runs inside gradlab: named by the line that handed the model over
  EXPECT_THAT(f.evidence, HasSubstr("sigmoid inside the model given at checks/diagnose/model_checks_test.cpp:"));
  EXPECT_THAT(f.evidence, Not(HasSubstr("src/gradlab/")));
  EXPECT_THAT(f.evidence, HasSubstr("the output of module '3' (Sigmoid)"));
  EXPECT_THAT(f.evidence, HasSubstr("bounds the output to (0, 1)"));
  EXPECT_THAT(f.evidence, HasSubstr("targets span [5, 50]: MSE cannot fall below "));
  EXPECT_THAT(f.hint, HasSubstr("remove the output sigmoid"));
}

TEST(DiagnoseModel, LossFloorReluOutputOnNegativeTargets) {
  const gl::Tensor y = gl::linspace(-3, 1, 64).reshape({64, 1});
  const dg::Finding f = dg::check_loss_floor(regressor(nn::ReLU()), nn::MSELoss(), xb(), y);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  const gl::Tensor neg = gl::clamp(y.to(gl::kFloat64), std::nullopt, 0.0);
  EXPECT_NEAR(f.metric("floor"), gl::mean(neg * neg).item<double>(), 1e-9);
  EXPECT_THAT(f.evidence, HasSubstr("relu inside the model given at checks/diagnose/model_checks_test.cpp:"));
  EXPECT_THAT(f.evidence, HasSubstr("bounds the output to [0, inf)"));
}

TEST(DiagnoseModel, LossFloorSigmoidOrSoftmaxIntoMSEOnOneHotTargets) {
  std::vector<double> hot(64 * 10, 0.0);
  const std::vector<int64_t> labels = yb().to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) hot[i * 10 + size_t(labels[i])] = 1.0;
  const gl::Tensor onehot = gl::from_vector(hot, {64, 10}).to(gl::kFloat32);
  gl::manual_seed(1);
  nn::Sequential soft(nn::Linear(64, 10), nn::Softmax(1));
  const dg::Finding f = dg::check_loss_floor(soft, nn::MSELoss(), xb(), onehot);
  EXPECT_EQ(f.verdict, dg::Verdict::Warn) << f;
  EXPECT_THAT(f.evidence, HasSubstr("softmax inside the model given at checks/diagnose/model_checks_test.cpp:"));
  EXPECT_THAT(f.evidence, HasSubstr("every target on an asymptote of softmax"));
  EXPECT_THAT(f.hint, HasSubstr("CrossEntropyLoss"));
  gl::manual_seed(1);
  nn::Sequential sig(nn::Linear(64, 10), nn::Sigmoid());
  const dg::Finding g = dg::check_loss_floor(sig, nn::MSELoss(), xb(), onehot);
  EXPECT_EQ(g.verdict, dg::Verdict::Warn) << g;
  EXPECT_THAT(g.hint, HasSubstr("BCEWithLogitsLoss"));
}

TEST(DiagnoseModel, LossFloorBoundedLogitsIntoCrossEntropyAndBCE) {
  gl::manual_seed(1);
  nn::Sequential tanh_out(nn::Linear(64, 10), nn::Tanh());
  const dg::Finding ce = dg::check_loss_floor(tanh_out, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(ce.verdict, dg::Verdict::Fail) << ce;
  // logits in (-1, 1): the best p = e / (e + 9 / e)  ->  floor ln(1 + 9 e^-2)
  EXPECT_NEAR(ce.metric("floor"), std::log1p(9 * std::exp(-2.0)), 1e-12);
  EXPECT_NEAR(ce.metric("relative_floor"), std::log1p(9 * std::exp(-2.0)) / std::log(10.0), 1e-12);
  EXPECT_THAT(ce.hint, HasSubstr("remove the output tanh"));

  gl::manual_seed(1);
  nn::Sequential relu_out(nn::Linear(64, 1), nn::ReLU());
  const gl::Tensor y01 = (yb() >= 5).to(gl::kFloat32).reshape({64, 1});  // digit >= 5
  const dg::Finding bce = dg::check_loss_floor(relu_out, nn::BCEWithLogitsLoss(), xb(), y01);
  EXPECT_EQ(bce.verdict, dg::Verdict::Fail) << bce;
  // logits >= 0: a target 0 costs at least softplus(0) = ln 2
  const double zeros = 1.0 - gl::mean(y01.to(gl::kFloat64)).item<double>();
  EXPECT_NEAR(bce.metric("floor"), zeros * std::log(2.0), 1e-12);

  // a softmax into cross-entropy is loss_pairing's failure, not counted twice
  gl::manual_seed(1);
  nn::Sequential soft(nn::Linear(64, 10), nn::Softmax(1));
  const dg::Finding paired = dg::check_loss_floor(soft, nn::CrossEntropyLoss(), xb(), yb());
  EXPECT_EQ(paired.verdict, dg::Verdict::Ok) << paired;
  EXPECT_THAT(paired.evidence, HasSubstr("see loss_pairing"));
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
