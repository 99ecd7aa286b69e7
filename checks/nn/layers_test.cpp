// Layers: forward values (by hand or recorded from PyTorch), gradients with respect to inputs
// (gradcheck) and parameters (central differences), train/eval behaviour, default inits, errors.

#include <cmath>
#include <sstream>

#include "nn/nn_helpers.hpp"
#include "nn/pytorch_ref_nn.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
using checks::Near;
using checks::param_grad_ok;
using checks::rnd64;
using checks::vals;
using ::testing::ElementsAre;

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

// ---- Linear ------------------------------------------------------------------------------------

TEST(Linear, ForwardIsXWtPlusBAndDefaultInitIsBounded) {
  manual_seed(3);
  nn::Linear lin(64, 128);
  EXPECT_EQ(lin->weight.sizes(), (Shape{128, 64}));
  EXPECT_EQ(lin->bias.sizes(), (Shape{128}));
  const double bound = 1.0 / std::sqrt(64.0);
  double wmax = 0, wsq = 0;
  for (double v : vals(lin->weight)) wmax = std::max(wmax, std::abs(v)), wsq += v * v;
  for (double v : vals(lin->bias)) EXPECT_LE(std::abs(v), bound);
  EXPECT_LE(wmax, bound);
  EXPECT_GT(wmax, 0.95 * bound) << "U(-b, b) reaches close to b over 8192 draws";
  // Var of U(-b, b) is b²/3.
  EXPECT_NEAR(wsq / (128 * 64), bound * bound / 3, 0.05 * bound * bound / 3);
  Tensor x = randn({5, 64});
  EXPECT_TRUE(allclose(lin(x), matmul(x, lin->weight.t()) + lin->bias, 1e-5, 1e-6));
  EXPECT_EQ(lin(randn({2, 3, 64})).sizes(), (Shape{2, 3, 128}));
  EXPECT_EQ(printed(*lin), "Linear(in_features=64, out_features=128, bias=true)");
  nn::Linear nobias(nn::LinearOptions(4, 2).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
  EXPECT_EQ(nobias->parameters().size(), 1u);
}

TEST(Linear, WrongInputShapeNamesTheExpectedDimension) {
  nn::Linear lin(64, 10);
  try {
    lin(zeros({32, 63}));
    FAIL() << "no exception";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("Linear: ", 0), 0u) << m;
    EXPECT_THAT(m, ::testing::HasSubstr("expected input with last dimension 64, got [32, 63]"));
  }
  EXPECT_THROW_MSG(lin(zeros({2, 1, 8, 8})), ShapeError,
                   "expected input with last dimension 64, got [2, 1, 8, 8]", "x.flatten(1)");
  EXPECT_THROW_MSG(nn::Linear(0, 3), ValueError, "in_features must be positive");
}

TEST(Linear, ParameterGradientsMatchCentralDifferences) {
  nn::Linear lin(3, 2);
  lin->to(kFloat64);
  Tensor x = rnd64({4, 3}, 5).detach();
  auto loss = [&] { return sum(tanh(lin(x))); };
  EXPECT_TRUE(param_grad_ok(loss, lin->weight));
  EXPECT_TRUE(param_grad_ok(loss, lin->bias));
}

TEST(Flatten, FlattensAllButTheBatchDim) {
  nn::Flatten f;
  EXPECT_EQ(f(zeros({2, 1, 8, 8})).sizes(), (Shape{2, 64}));
  nn::Flatten g(nn::FlattenOptions().start_dim(0).end_dim(1));
  EXPECT_EQ(g(zeros({2, 3, 4})).sizes(), (Shape{6, 4}));
  EXPECT_EQ(printed(*g), "Flatten(start_dim=0, end_dim=1)");
}

// ---- activations -------------------------------------------------------------------------------

TEST(Activations, MatchPyTorch) {
  Tensor z = d64(ref::act_input, {2, 4});
  EXPECT_THAT(vals(nn::GELU()(z)), Near(ref::gelu_exact, 1e-14));
  EXPECT_THAT(vals(nn::GELU(nn::GELUOptions().approximate("tanh"))(z)),
              Near(ref::gelu_tanh, 1e-14));
  EXPECT_THAT(vals(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))(z)),
              Near(ref::leaky_relu_02, 1e-15));
  EXPECT_THAT(vals(nn::Softmax(1)(z)), Near(ref::softmax_dim1, 1e-15));
  EXPECT_THAT(vals(nn::LogSoftmax(0)(z)), Near(ref::log_softmax_dim0, 1e-14));
  EXPECT_THAT(vals(nn::ReLU()(d64({-1, 0, 2}, {3}))), ElementsAre(0, 0, 2));
  EXPECT_THAT(vals(nn::Tanh()(d64({0.5}, {1}))), Near({std::tanh(0.5)}, 1e-15));
  EXPECT_THAT(vals(nn::Sigmoid()(d64({0.5}, {1}))), Near({1 / (1 + std::exp(-0.5))}, 1e-15));
  EXPECT_THROW_MSG(nn::GELU(nn::GELUOptions().approximate("fast")), ValueError,
                   "\"none\" or \"tanh\"");
  EXPECT_EQ(printed(*nn::Softmax(1)), "Softmax(dim=1)");
  EXPECT_EQ(printed(*nn::LeakyReLU()), "LeakyReLU(negative_slope=0.01)");
  // Softplus(beta=2, threshold=1): log(1 + exp(2x)) / 2, and x where 2x > 1 (PyTorch's definition)
  std::vector<double> want;
  for (double v : ref::act_input) want.push_back(2 * v > 1 ? v : std::log1p(std::exp(2 * v)) / 2);
  EXPECT_THAT(vals(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(1))(z)), Near(want, 1e-15));
  EXPECT_EQ(printed(*nn::Softplus()), "Softplus(beta=1, threshold=20)");
}

TEST(Activations, Gradcheck) {
  Tensor x = rnd64({3, 4}, 8);
  nn::GELU gt(nn::GELUOptions().approximate("tanh"));
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return gt(in[0]); }, {x}, "GELU tanh"));
  nn::GELU ge;
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return ge(in[0]); }, {x}, "GELU"));
  nn::Softmax sm(1);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return sm(in[0]); }, {x}, "Softmax"));
  nn::LeakyReLU lr(nn::LeakyReLUOptions().negative_slope(0.3));
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return lr(in[0]); }, {x}, "LeakyReLU"));
  nn::Softplus sp(nn::SoftplusOptions().beta(1.5));
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return sp(in[0]); }, {x}, "Softplus"));
}

// ---- Dropout -----------------------------------------------------------------------------------

TEST(DropoutModule, TrainDropsEvalIsIdentitySeededByGenerator) {
  Generator gen(42);
  nn::Dropout d(nn::DropoutOptions(0.5).generator(&gen));
  Tensor x = ones({2000});
  Tensor a = d(x);
  const double kept = sum(a != 0).item<double>();
  EXPECT_GT(kept, 900);
  EXPECT_LT(kept, 1100);
  EXPECT_NEAR(mean(a).item<double>(), 1.0, 0.1) << "1/(1-p) scaling keeps the expectation";
  gen.manual_seed(42);
  EXPECT_TRUE(equal(d(x), a)) << "reseeding the generator replays the mask";
  EXPECT_FALSE(equal(d(x), a)) << "each call draws a new mask";
  d->eval();
  EXPECT_TRUE(equal(d(x), x));
  EXPECT_THROW_MSG(nn::Dropout(-0.1), ValueError, "between 0 and 1");
}

// ---- BatchNorm1d -------------------------------------------------------------------------------

TEST(BatchNorm1d, TrainingAndEvalMatchPyTorch) {
  nn::BatchNorm1d bn(3);
  bn->to(kFloat64);
  {
    NoGradGuard ng;
    bn->weight.copy_(d64({1.5, 0.5, -1.0}, {3}));
    bn->bias.copy_(d64({0.1, -0.2, 0.3}, {3}));
  }
  EXPECT_THAT(vals(bn(d64(ref::bn_x1, {4, 3}))), Near(ref::bn_y1, 1e-12));
  EXPECT_THAT(vals(bn(d64(ref::bn_x2, {4, 3}))), Near(ref::bn_y2, 1e-12));
  EXPECT_THAT(vals(bn->running_mean), Near(ref::bn_running_mean, 1e-14));
  EXPECT_THAT(vals(bn->running_var), Near(ref::bn_running_var, 1e-14));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  bn->eval();
  EXPECT_THAT(vals(bn(d64(ref::bn_x3, {2, 3}))), Near(ref::bn_eval_y3, 1e-12));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2) << "eval does not count batches";
  EXPECT_THAT(vals(bn->running_mean), Near(ref::bn_running_mean, 1e-14))
      << "eval leaves running stats alone";
  // A single sample works in eval mode (running stats), not in training mode.
  EXPECT_EQ(bn(d64({1, 2, 3}, {1, 3})).sizes(), (Shape{1, 3}));
  bn->train();
  EXPECT_THROW_MSG(bn(d64({1, 2, 3}, {1, 3})), ValueError, "more than 1 value per channel",
                   "model.eval()");
}

TEST(BatchNorm1d, CumulativeMomentumAnd3dInput) {
  nn::BatchNorm1d bnc(nn::BatchNormOptions(3).momentum(std::nullopt).affine(false));
  bnc->to(kFloat64);
  EXPECT_TRUE(bnc->parameters().empty());
  bnc(d64(ref::bn_x1, {4, 3}));
  bnc(d64(ref::bn_x2, {4, 3}));
  EXPECT_THAT(vals(bnc->running_mean), Near(ref::bn_cumulative_mean, 1e-14));
  EXPECT_THAT(vals(bnc->running_var), Near(ref::bn_cumulative_var, 1e-14));
  nn::BatchNorm1d bn3(3);
  bn3->to(kFloat64);
  EXPECT_THAT(vals(bn3(d64(ref::bn3d_x, {2, 3, 4}))), Near(ref::bn3d_y, 1e-12));
  EXPECT_THAT(vals(bn3->running_var), Near(ref::bn3d_running_var, 1e-14));
  nn::BatchNorm1d nostats(nn::BatchNormOptions(3).track_running_stats(false));
  EXPECT_TRUE(nostats->buffers().empty());
  nostats->eval();
  Tensor x = randn({6, 3});
  EXPECT_NEAR(mean(nostats(x)).item<double>(), 0.0, 1e-5)
      << "without running stats eval uses batch stats";
  EXPECT_EQ(printed(*bnc),
            "BatchNorm1d(3, eps=1e-05, momentum=None, affine=false, track_running_stats=true)");
}

TEST(BatchNorm1d, GradientsAndErrors) {
  nn::BatchNorm1d bn(3);
  bn->to(kFloat64);
  Tensor x = rnd64({5, 3}, 17);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return bn(in[0]); }, {x}, "BatchNorm1d train"));
  Tensor c = rnd64({5, 3}, 18).detach();
  auto loss = [&] { return sum(bn(x.detach()) * c); };
  EXPECT_TRUE(param_grad_ok(loss, bn->weight));
  EXPECT_TRUE(param_grad_ok(loss, bn->bias));
  EXPECT_THROW_MSG(bn(zeros({4, 5}, dtype(kFloat64))), ShapeError, "BatchNorm1d:", "3 features",
                   "[4, 5]");
  EXPECT_THROW_MSG(bn(zeros({4, 3, 2, 2}, dtype(kFloat64))), ShapeError,
                   "BatchNorm1d:", "2-D or 3-D");
  bn->reset_parameters();
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);
  EXPECT_THAT(vals(bn->running_var), ElementsAre(1, 1, 1));
}

// ---- BatchNorm2d / 3d ----------------------------------------------------------------------------

namespace {
// The per-channel reference, by plain loops over x in [N, C, S] order (S = the spatial elements):
// y = (x - mean_c) / sqrt(var_c + eps) * w_c + b_c with the biased variance; the running stats
// after one step from (0, 1) with momentum 0.1 use the unbiased variance.
struct BnRef {
  std::vector<double> y, running_mean, running_var;
};
BnRef bn_reference(const std::vector<double>& x, int64_t N, int64_t C, int64_t S,
                   const std::vector<double>& w, const std::vector<double>& b) {
  BnRef r;
  r.y.resize(x.size());
  const double n = static_cast<double>(N * S);
  for (int64_t c = 0; c < C; ++c) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t s = 0; s < S; ++s) m += x[static_cast<size_t>((i * C + c) * S + s)];
    m /= n;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t s = 0; s < S; ++s) {
        const double d = x[static_cast<size_t>((i * C + c) * S + s)] - m;
        v += d * d;
      }
    for (int64_t i = 0; i < N; ++i)
      for (int64_t s = 0; s < S; ++s) {
        const size_t k = static_cast<size_t>((i * C + c) * S + s);
        r.y[k] = (x[k] - m) / std::sqrt(v / n + 1e-5) * w[static_cast<size_t>(c)] +
                 b[static_cast<size_t>(c)];
      }
    r.running_mean.push_back(0.1 * m);
    r.running_var.push_back(0.9 + 0.1 * v / (n - 1));
  }
  return r;
}
}  // namespace

TEST(BatchNorm2d, TrainingStepMatchesPerChannelLoopsAndEvalUsesRunningStats) {
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(3));
  bn->to(kFloat64);
  const std::vector<double> w{1.5, 0.5, -1.0}, b{0.1, -0.2, 0.3};
  {
    NoGradGuard ng;
    bn->weight.copy_(d64(w, {3}));
    bn->bias.copy_(d64(b, {3}));
  }
  Tensor x = rnd64({2, 3, 2, 5}, 31);
  const BnRef r = bn_reference(vals(x), 2, 3, 10, w, b);
  Tensor y = bn(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 2, 5}));
  EXPECT_THAT(vals(y), Near(r.y, 1e-12));
  EXPECT_THAT(vals(bn->running_mean), Near(r.running_mean, 1e-14));
  EXPECT_THAT(vals(bn->running_var), Near(r.running_var, 1e-14));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // Eval: (x - running_mean) / sqrt(running_var + eps) * w + b, channel by channel.
  bn->eval();
  Tensor z = rnd64({1, 3, 2, 2}, 32);
  const std::vector<double> zv = vals(z), got = vals(bn(z));
  for (size_t k = 0; k < zv.size(); ++k) {
    const size_t c = k / 4;
    EXPECT_NEAR(got[k], (zv[k] - r.running_mean[c]) / std::sqrt(r.running_var[c] + 1e-5) * w[c] + b[c],
                1e-12)
        << "element " << k;
  }
  EXPECT_EQ(printed(*bn),
            "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
}

TEST(BatchNorm2d, GradientsAndErrors) {
  nn::BatchNorm2d bn(2);
  bn->to(kFloat64);
  Tensor x = rnd64({3, 2, 2, 2}, 33);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return bn(in[0]); }, {x}, "BatchNorm2d train"));
  Tensor c = rnd64({3, 2, 2, 2}, 34).detach();
  auto loss = [&] { return sum(bn(x.detach()) * c); };
  EXPECT_TRUE(param_grad_ok(loss, bn->weight));
  EXPECT_TRUE(param_grad_ok(loss, bn->bias));
  EXPECT_THROW_MSG(bn(zeros({3, 2, 4}, dtype(kFloat64))), ShapeError, "BatchNorm2d:",
                   "expected a 4-D input", "[3, 2, 4]");
  EXPECT_THROW_MSG(bn(zeros({3, 5, 2, 2}, dtype(kFloat64))), ShapeError, "BatchNorm2d:",
                   "2 features", "[3, 5, 2, 2]");
}

TEST(BatchNorm3d, TrainingStepMatchesPerChannelLoops) {
  nn::BatchNorm3d bn(2);
  bn->to(kFloat64);
  Tensor x = rnd64({2, 2, 2, 3, 2}, 35);
  const BnRef r = bn_reference(vals(x), 2, 2, 12, {1.0, 1.0}, {0.0, 0.0});
  EXPECT_THAT(vals(bn(x)), Near(r.y, 1e-12));
  EXPECT_THAT(vals(bn->running_var), Near(r.running_var, 1e-14));
  EXPECT_THROW_MSG(bn(zeros({2, 2, 3, 3}, dtype(kFloat64))), ShapeError, "BatchNorm3d:",
                   "expected a 5-D input", "[2, 2, 3, 3]");
}

// ---- LayerNorm ---------------------------------------------------------------------------------

TEST(LayerNorm, MatchesPyTorchSameInTrainAndEval) {
  nn::LayerNorm ln(Shape{3});
  ln->to(kFloat64);
  {
    NoGradGuard ng;
    ln->weight.copy_(d64(ref::ln_w, {3}));
    ln->bias.copy_(d64(ref::ln_b, {3}));
  }
  Tensor x = d64(ref::ln_x, {2, 2, 3});
  EXPECT_THAT(vals(ln(x)), Near(ref::ln_y_last, 1e-12));
  ln->eval();
  EXPECT_THAT(vals(ln(x)), Near(ref::ln_y_last, 1e-12));
  nn::LayerNorm ln2(nn::LayerNormOptions({2, 3}).elementwise_affine(false));
  ln2->to(kFloat64);
  EXPECT_TRUE(ln2->parameters().empty());
  EXPECT_THAT(vals(ln2(x)), Near(ref::ln_y_two, 1e-12));
  auto loss = [&] { return sum(ln(x) * x); };
  EXPECT_TRUE(param_grad_ok(loss, ln->weight));
  EXPECT_TRUE(param_grad_ok(loss, ln->bias));
  EXPECT_THROW_MSG(ln(zeros({2, 4}, dtype(kFloat64))), ShapeError, "[*, 3]", "[2, 4]");
  EXPECT_EQ(printed(*ln), "LayerNorm([3], eps=1e-05, elementwise_affine=true)");
}

// ---- Embedding ---------------------------------------------------------------------------------

TEST(Embedding, LookupAndPaddingIdxGetsNoGradient) {
  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(1));
  emb->to(kFloat64);
  EXPECT_THAT(vals(emb->weight.select(0, 1)), ElementsAre(0, 0, 0))
      << "the padding row starts at zero";
  {
    NoGradGuard ng;
    emb->weight.copy_(d64(ref::emb_weight, {5, 3}));
  }
  Tensor ids = from_vector(ref::emb_ids, {2, 3});
  Tensor out = emb(ids);
  EXPECT_EQ(out.sizes(), (Shape{2, 3, 3}));
  EXPECT_THAT(vals(out[0][2]), Near(vals(emb->weight[3]), 0));
  sum(out * arange(1, 19, 1, dtype(kFloat64)).reshape({2, 3, 3})).backward();
  EXPECT_THAT(vals(emb->weight.grad()), Near(ref::emb_grad, 0));
  EXPECT_THROW_MSG(emb(zeros({2}, dtype(kFloat64))), DTypeError, "Embedding:", "int64");
  EXPECT_THROW_MSG(emb(tensor({7})), ShapeError, "index out of range");
  EXPECT_THROW_MSG(nn::Embedding(nn::EmbeddingOptions(5, 3).padding_idx(5)), ValueError,
                   "padding_idx");
  EXPECT_EQ(printed(*emb), "Embedding(5, 3, padding_idx=1)");
}

// ---- Conv2d, MaxPool2d
// ---------------------------------------------------------------------------

TEST(Conv2dModule, ForwardInitAndErrors) {
  manual_seed(5);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).stride(2).padding(1));
  EXPECT_EQ(conv->weight.sizes(), (Shape{3, 2, 3, 3}));
  const double bound = 1.0 / std::sqrt(2.0 * 9.0);
  for (double v : vals(conv->weight)) EXPECT_LE(std::abs(v), bound);
  for (double v : vals(conv->bias)) EXPECT_LE(std::abs(v), bound);
  conv->to(kFloat64);
  {
    NoGradGuard ng;
    conv->weight.copy_(d64(ref::conv_w, {3, 2, 3, 3}));
    conv->bias.copy_(d64(ref::conv_b, {3}));
  }
  EXPECT_THAT(vals(conv(d64(ref::conv_x, {2, 2, 5, 5}))), Near(ref::conv_s2_p1, 1e-12));
  EXPECT_EQ(printed(*conv),
            "Conv2d(2, 3, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], bias=true)");
  EXPECT_THROW_MSG(conv(zeros({2, 64}, dtype(kFloat64))), ShapeError, "Conv2d:", "[2, 64]",
                   "x.view({-1, 1, 8, 8})");
  EXPECT_THROW_MSG(conv(zeros({2, 8, 8, 2}, dtype(kFloat64))), ShapeError,
                   "Conv2d:", "input with 2 channels", "[2, 8, 8, 2]", "channels first");
  Tensor x = d64(ref::conv_x, {2, 2, 5, 5});
  auto loss = [&] { return sum(tanh(conv(x))); };
  EXPECT_TRUE(param_grad_ok(loss, conv->bias));
  EXPECT_TRUE(param_grad_ok(loss, conv->weight));
}

TEST(MaxPool2dModule, ForwardAndPrint) {
  nn::MaxPool2d pool(2);
  Tensor x = d64(ref::pool_x, {1, 2, 5, 5});
  EXPECT_THAT(vals(pool(x)), Near(ref::pool_k2, 0));
  nn::MaxPool2d pool3(nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_THAT(vals(pool3(x)), Near(ref::pool_k3_s2_p1, 0));
  EXPECT_EQ(printed(*pool3), "MaxPool2d(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1])");
}

TEST(SmallCnn, TrainsOnOneBatchOf8x8Images) {
  manual_seed(0);
  nn::Sequential cnn(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                     nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 4 * 4, 10));
  Tensor x = rand({16, 1, 8, 8});
  Tensor y = randint(0, 10, {16});
  optim::Adam opt(cnn->parameters(), optim::AdamOptions(0.05));
  nn::CrossEntropyLoss ce;
  double first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    opt.zero_grad();
    Tensor loss = ce(cnn(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_GT(first, 1.5);
  EXPECT_LT(last, 0.1) << "a small CNN overfits one batch";
}

}  // namespace
}  // namespace gradlab
