// LibTorch parity additions (docs/libtorch_parity.md): the activation modules and their option
// forms, the nn::functional option structs, nn::Functional, nn::ModuleList, nn::ModuleDict. The
// values against LibTorch are in the compatibility corpus (checks/compat); the ops' gradients in
// the op table (testing/op_table/activation.cpp). These check what neither covers: the F::-only
// composites' float64 gradients, module behaviour (parameters, names, modes, dtype) and errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::error_of;
using checks::grad_ok;
using checks::gradgrad_ok;
using checks::rnd64;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace F = nn::functional;

std::vector<double> vals(const Tensor& t) { return t.contiguous().to_vector<double>(); }

std::vector<std::string> names(const nn::NamedTensors& n) {
  std::vector<std::string> r;
  for (const auto& [k, v] : n) r.push_back(k);
  return r;
}


// ---- the F::-only composites and the option forms, gradchecked in float64 -----------------------

TEST(ActivationParity, FunctionalOnlyCompositesGradcheck) {
  Tensor x = rnd64({3, 4}, 1);
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::softsign(in[0] * 2 + 0.05); }, {x}, "softsign"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::tanhshrink(in[0]); }, {x}, "tanhshrink"));
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return F::tanhshrink(in[0]); }, {x}, "tanhshrink"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::softmin(in[0], F::SoftminFuncOptions(1)); },
                      {x}, "softmin"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::logsigmoid(in[0] * 3); }, {x}, "logsigmoid"));
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("tanh")); }, {x},
      "gelu tanh"));
  EXPECT_TRUE(gradgrad_ok(
      [](const TensorList& in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("tanh")); }, {x},
      "gelu tanh"));
}

TEST(ActivationParity, KnownValues) {
  Tensor x = d64({-2.0, -0.5, 0.5, 3.0}, {4});
  EXPECT_THAT(vals(F::softsign(x)), ElementsAre(-2.0 / 3, -0.5 / 1.5, 0.5 / 1.5, 0.75));
  EXPECT_THAT(vals(hardtanh(x, -1.0, 1.0)), ElementsAre(-1.0, -0.5, 0.5, 1.0));
  EXPECT_THAT(vals(relu6(x * 3)), ElementsAre(0.0, 0.0, 1.5, 6.0));
  EXPECT_THAT(vals(threshold(x, 0.0, 7.0)), ElementsAre(7.0, 7.0, 0.5, 3.0));
  // selu(1) is its scale; selu(-inf) -> -scale * alpha
  EXPECT_DOUBLE_EQ(selu(d64({1.0}, {1})).item<double>(), 1.0507009873554805);
  EXPECT_NEAR(selu(d64({-40.0}, {1})).item<double>(), -1.0507009873554805 * 1.6732632423543772, 1e-15);
  EXPECT_THAT(vals(hardsigmoid(x)), ElementsAre(1.0 / 6, 2.5 / 6, 3.5 / 6, 1.0));
  // no overflow at the far ends
  Tensor far = d64({-800.0, 800.0}, {2});
  EXPECT_THAT(vals(log_sigmoid(far)), ElementsAre(-800.0, 0.0));
  EXPECT_THAT(vals(elu(far)), ElementsAre(-1.0, 800.0));
  Tensor g = far.clone().requires_grad_();
  elu(g).sum().backward();
  EXPECT_THAT(vals(g.grad()), ElementsAre(0.0, 1.0));  // not NaN from the dropped exp branch
}

TEST(ActivationParity, OptionFormsMatchThePositionalOnes) {
  Tensor x = rnd64({2, 3, 4, 4}, 2).detach();
  Tensor w = rnd64({6, 3, 3, 3}, 3).detach(), b = rnd64({6}, 4).detach();
  EXPECT_TRUE(allclose(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1)),
                       conv2d(x, w, b, 2, 1)));
  EXPECT_TRUE(allclose(F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(1)), max_pool2d(x, 2, IntPair(1))));
  EXPECT_TRUE(allclose(F::layer_norm(x, F::LayerNormFuncOptions({4, 4}).eps(1e-3)), layer_norm(x, {4, 4}, {}, {}, 1e-3)));
  EXPECT_TRUE(allclose(F::unfold(x, F::UnfoldFuncOptions(2).stride(2)), unfold(x, 2, 1, 0, 2)));
  EXPECT_TRUE(allclose(F::mse_loss(x, x * 0.5, F::MSELossFuncOptions(kSum)), mse_loss(x, x * 0.5, 2)));
  EXPECT_TRUE(allclose(F::softmax(x, F::SoftmaxFuncOptions(1)), softmax(x, 1)));
  // dtype: the input is cast first
  EXPECT_EQ(F::softmax(x.to(kFloat32), F::SoftmaxFuncOptions(1).dtype(kFloat64)).dtype(), kFloat64);
  // smooth L1: options.beta() counts unless the argument is given
  Tensor y = x * 0.3;
  EXPECT_TRUE(allclose(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.5)), smooth_l1_loss(x, y, 1, 0.5)));
  EXPECT_TRUE(allclose(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.5), 2.0),
                       smooth_l1_loss(x, y, 1, 2.0)));
}

// groups = 2 is two independent convolutions: check against them, and gradcheck the composite.
TEST(ActivationParity, Conv2dGroupsIsPerGroupConvolutions) {
  Tensor x = rnd64({1, 4, 5, 5}, 5), w = rnd64({6, 2, 3, 3}, 6), b = rnd64({6}, 7);
  Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding(1).groups(2));
  Tensor y0 = conv2d(x.narrow(1, 0, 2), w.narrow(0, 0, 3), b.narrow(0, 0, 3), 1, 1);
  Tensor y1 = conv2d(x.narrow(1, 2, 2), w.narrow(0, 3, 3), b.narrow(0, 3, 3), 1, 1);
  EXPECT_TRUE(allclose(y, cat({y0, y1}, 1)));
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) {
        return F::conv2d(in[0], in[1], F::Conv2dFuncOptions().bias(in[2]).stride(2).padding(1).groups(2));
      },
      {x, w, b}, "conv2d groups"));
  EXPECT_THAT(error_of<ShapeError>([&] { F::conv2d(x, w, F::Conv2dFuncOptions().groups(3)); }),
              HasSubstr("conv2d: input channels do not match the weight of size [6, 2, 3, 3] with groups 3"));
}

TEST(ActivationParity, EmbeddingPaddingIdxGetsNoGradient) {
  Tensor w = rnd64({5, 2}, 8);
  Tensor idx = from_vector(std::vector<int64_t>{0, 2, 0, 4}, {4});
  Tensor out = F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(0));
  EXPECT_TRUE(allclose(out, embedding(w, idx)));  // the padding row is still read
  out.sum().backward();
  EXPECT_THAT(vals(w.grad()), ElementsAre(0, 0, 0, 0, 1, 1, 0, 0, 1, 1));
  EXPECT_THAT(error_of<ValueError>([&] { F::embedding(idx, w, F::EmbeddingFuncOptions().max_norm(1.0)); }),
              HasSubstr("max_norm"));
}

TEST(ActivationParity, InPlaceFormsWriteTheInputAndKeepTheGradient) {
  Tensor x = rnd64({3, 4}, 9);
  for (int form = 0; form < 4; ++form) {
    SCOPED_TRACE(form);
    auto f = [form](const TensorList& in) {
      Tensor y = in[0] * 1.0;
      Tensor r;
      if (form == 0) r = F::relu(y, F::ReLUFuncOptions().inplace(true));
      if (form == 1) r = F::elu(y, F::ELUFuncOptions().alpha(0.5).inplace(true));
      if (form == 2) r = F::hardtanh(y, F::HardtanhFuncOptions().min_val(-0.3).max_val(0.4).inplace(true));
      if (form == 3) r = F::leaky_relu(y, F::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true));
      EXPECT_TRUE(r.is_same_storage(y));
      return y;
    };
    EXPECT_TRUE(grad_ok(f, {x}, "in place"));
  }
  // a leaf that requires grad is refused, as LibTorch
  EXPECT_THAT(error_of<AutogradError>([&] { relu_(x); }), HasSubstr("leaf"));
  Tensor plain = d64({-1.0, 2.0}, {2});
  nn::ReLU relu(nn::ReLUOptions().inplace(true));
  relu(plain);
  EXPECT_THAT(vals(plain), ElementsAre(0.0, 2.0));
}

TEST(ActivationParity, ClearErrors) {
  Tensor x = rnd64({2, 3}, 10).detach();
  EXPECT_THAT(error_of<ShapeError>([&] { glu(x); }),
              HasSubstr("glu: halving dimension must be even; expected an even size along dim 1, got [2, 3]"));
  EXPECT_THAT(error_of<ValueError>([&] { F::max_pool2d(x.reshape({1, 1, 2, 3}), F::MaxPool2dFuncOptions(2).ceil_mode(true)); }),
              HasSubstr("max_pool2d: ceil_mode is not supported by gradlab; expected ceil_mode(false), got ceil_mode(true); hint:"));
  nn::MaxPool2d pool(nn::MaxPool2dOptions(2).ceil_mode(true));
  EXPECT_THAT(error_of<ValueError>([&] { pool(x.reshape({1, 1, 2, 3})); }), HasSubstr("ceil_mode"));
  EXPECT_THAT(error_of<ValueError>([&] { F::gelu(x, F::GELUFuncOptions().approximate("fast")); }),
              HasSubstr("expected \"none\" or \"tanh\", got \"fast\""));
  EXPECT_THAT(error_of<ValueError>([&] { celu(x, 0.0); }), HasSubstr("celu: alpha must not be 0"));
  EXPECT_THAT(error_of<ValueError>([&] { nn::Hardtanh(nn::HardtanhOptions().min_val(1).max_val(-1)); }),
              HasSubstr("max_val must be greater than min_val"));
  Tensor rm = zeros({3}, TensorOptions().dtype(kFloat64)), rv = ones({3}, TensorOptions().dtype(kFloat64));
  EXPECT_THAT(error_of<ValueError>([&] {
                F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().momentum(std::nullopt));
              }),
              HasSubstr("momentum nullopt"));
  EXPECT_THAT(error_of<ShapeError>([&] { prelu(x, d64({0.1, 0.2}, {2})); }),
              HasSubstr("prelu: the number of weights must be 1 or the input's channel count (dim 1); expected 3 weights, got 2"));
}

TEST(ActivationParity, DistancesAndPadGradcheck) {
  Tensor a = rnd64({3, 4}, 13), b = rnd64({3, 4}, 14);
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::normalize(in[0]); }, {a}, "normalize"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::normalize(in[0], F::NormalizeFuncOptions().p(3).dim(0)); },
                      {a}, "normalize p3"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::cosine_similarity(in[0], in[1]); }, {a, b},
                      "cosine_similarity"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return F::pairwise_distance(in[0], in[1]); }, {a, b},
                      "pairwise_distance"));
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) { return F::pad(in[0].reshape({1, 3, 4}), F::PadFuncOptions({2, -1, 1, 0}).value(0.5)); },
      {a}, "pad"));
  // cosine of a row with itself is 1; the distance of a row to itself is ‖eps‖
  EXPECT_TRUE(allclose(F::cosine_similarity(a, a), ones({3}, TensorOptions().dtype(kFloat64))));
  EXPECT_NEAR(F::pairwise_distance(a, a).max().item<double>(), 2e-6, 1e-15);  // sqrt(4) * 1e-6
  Tensor x = d64({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  EXPECT_THAT(vals(F::pad(x, F::PadFuncOptions({1, -1}))), ElementsAre(0, 1, 2, 0, 4, 5));
  // kReflect is checked in checks/nn/pool_pad_parity_test.cpp
  EXPECT_THAT(vals(F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect))), ElementsAre(2, 1, 2, 3, 2, 5, 4, 5, 6, 5));
  EXPECT_THAT(error_of<ShapeError>([&] { F::pad(x, F::PadFuncOptions({1, 1, 1})); }), HasSubstr("pairs"));
  EXPECT_THAT(vals(nn::ZeroPad2d(1)(x)).size(), 4u * 5u);
  EXPECT_THAT(error_of<ValueError>([] { nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 2})); }), HasSubstr("one number or four"));
  EXPECT_EQ(nn::Unflatten(nn::UnflattenOptions(-1, {-1, 1}))(x).sizes(), Shape({1, 2, 3, 1}));
  EXPECT_THAT(error_of<ShapeError>([&] { nn::Unflatten(nn::UnflattenOptions(2, {2, 2}))(x); }),
              HasSubstr("the sizes must multiply to the size of dim 2"));
}

TEST(ActivationParity, OneHotAndKlDiv) {
  Tensor idx = from_vector(std::vector<int64_t>{2, 0}, {2});
  EXPECT_THAT(one_hot(idx).to_vector<int64_t>(), ElementsAre(0, 0, 1, 1, 0, 0));
  EXPECT_EQ(one_hot(idx, 4).sizes(), Shape({2, 4}));
  EXPECT_THAT(error_of<ValueError>([&] { one_hot(idx, 2); }), HasSubstr("smaller than num_classes"));
  EXPECT_THAT(error_of<DTypeError>([&] { one_hot(idx.to(kFloat64)); }), HasSubstr("index tensors"));
  // kBatchMean: the summed KL over the batch size; a target of 0 contributes 0 (0 log 0 = 0)
  Tensor q = rnd64({4, 3}, 15);
  Tensor logq = log_softmax(q, 1);
  Tensor p = d64({0.5, 0.5, 0.0, 0.2, 0.3, 0.5, 1.0, 0.0, 0.0, 0.1, 0.1, 0.8}, {4, 3});
  Tensor bm = F::kl_div(logq, p, F::KLDivFuncOptions(kBatchMean));
  EXPECT_NEAR(bm.item<double>(), F::kl_div(logq, p, F::KLDivFuncOptions(kSum)).item<double>() / 4, 1e-15);
  EXPECT_TRUE(std::isfinite(bm.item<double>()));
  bm.backward();
  EXPECT_TRUE(isfinite(q.grad()).all().item<bool>());
  EXPECT_NEAR(nn::KLDivLoss(nn::KLDivLossOptions(kBatchMean))(logq, p).item<double>(), bm.item<double>(), 1e-15);
}

// ---- modules -----------------------------------------------------------------------------------

TEST(ActivationModules, PReLUHasOneLearnableWeightPerChannel) {
  nn::PReLU m(nn::PReLUOptions().num_parameters(3).init(0.1));
  EXPECT_THAT(names(m->named_parameters()), ElementsAre("weight"));
  EXPECT_EQ(m->num_parameters(), 3);
  EXPECT_THAT(vals(m->weight), ElementsAre(0.1f, 0.1f, 0.1f));  // float32, as LibTorch
  EXPECT_EQ(m->weight.dtype(), kFloat32);
  m->to(kFloat64);
  EXPECT_EQ(m->weight.dtype(), kFloat64);
  Tensor x = rnd64({2, 3, 2}, 11).detach();
  EXPECT_TRUE(allclose(m(x), F::prelu(x, m->weight)));
  m->eval();  // no mode-dependent behaviour
  EXPECT_TRUE(allclose(m(x), F::prelu(x, m->weight)));
  // the weight learns: its gradient is Σ x over the negative inputs of its channel
  m(x).sum().backward();
  Tensor neg = where(x > 0, 0.0, x).sum(std::vector<int64_t>{0, 2});
  EXPECT_TRUE(allclose(m->weight.grad(), neg));
  nn::PReLU one;  // LibTorch's default: one weight, 0.25
  EXPECT_THAT(vals(one->weight), ElementsAre(0.25));
  std::ostringstream os;
  os << *m;
  EXPECT_THAT(os.str(), HasSubstr("PReLU(num_parameters=3)"));
}

TEST(ActivationModules, ForwardIsTheFunctional) {
  Tensor x = rnd64({2, 4}, 12).detach();
  EXPECT_TRUE(allclose(nn::ELU(nn::ELUOptions().alpha(0.5))(x), F::elu(x, F::ELUFuncOptions().alpha(0.5))));
  EXPECT_TRUE(allclose(nn::SELU()(x), selu(x)));
  EXPECT_TRUE(allclose(nn::CELU(nn::CELUOptions().alpha(2.0))(x), celu(x, 2.0)));
  EXPECT_TRUE(allclose(nn::Hardtanh(nn::HardtanhOptions().min_val(-0.2).max_val(0.3))(x), clamp(x, -0.2, 0.3)));
  EXPECT_TRUE(allclose(nn::ReLU6()(x * 5), relu6(x * 5)));
  EXPECT_TRUE(allclose(nn::SiLU()(x), x * sigmoid(x)));
  EXPECT_TRUE(allclose(nn::Mish()(x), mish(x)));
  EXPECT_TRUE(allclose(nn::Softsign()(x), F::softsign(x)));
  EXPECT_TRUE(allclose(nn::Tanhshrink()(x), x - tanh(x)));
  EXPECT_TRUE(allclose(nn::LogSigmoid()(x), log(sigmoid(x))));
  EXPECT_TRUE(allclose(nn::Threshold(0.1, -1.0)(x), threshold(x, 0.1, -1.0)));
  EXPECT_TRUE(allclose(nn::GLU()(x), glu(x, -1)));
  EXPECT_TRUE(allclose(nn::Softmin(1)(x), softmax(-x, 1)));
  EXPECT_TRUE(allclose(nn::LogSoftmax(nn::LogSoftmaxOptions(1))(x), log_softmax(x, 1)));
  EXPECT_TRUE(allclose(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))(x), leaky_relu(x, 0.2)));
  nn::Sequential seq{nn::ELU(), nn::PReLU()};
  EXPECT_THAT(names(seq->named_parameters()), ElementsAre("1.weight"));
}

// ---- containers --------------------------------------------------------------------------------

struct StackImpl : nn::Module {
  StackImpl() {
    layers = register_module("layers", nn::ModuleList(nn::Linear(4, 3), nn::BatchNorm1d(3)));
    layers->push_back(nn::Linear(3, 2));
    layers->push_back(nn::Functional(relu));
  }
  Tensor forward(Tensor x) {
    for (const auto& m : *layers) {
      if (auto* lin = m->as<nn::Linear>()) x = lin->forward(x);
      else if (auto* bn = m->as<nn::BatchNorm1d>()) x = bn->forward(x);
      else x = m->as<nn::Functional>()->forward(x);
    }
    return x;
  }
  nn::ModuleList layers{nullptr};
};
GRADLAB_MODULE(Stack);

TEST(Containers, ModuleListNamesIndexesAndIterates) {
  Stack s;
  EXPECT_THAT(names(s->named_parameters()),
              ElementsAre("layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                          "layers.2.weight", "layers.2.bias"));
  EXPECT_THAT(names(s->named_buffers()), ElementsAre("layers.1.running_mean", "layers.1.running_var",
                                                     "layers.1.num_batches_tracked"));
  EXPECT_EQ(s->layers->size(), 4u);
  EXPECT_FALSE(s->layers->is_empty());
  EXPECT_NE(s->layers[0]->as<nn::Linear>(), nullptr);
  EXPECT_EQ(s->layers->ptr<nn::LinearImpl>(2)->options.out_features(), 2);
  EXPECT_EQ(s->layers->ptr<nn::Linear>(1), nullptr);  // another type: null, as LibTorch
  EXPECT_EQ(s->layers->at<nn::BatchNorm1d>(1).options.num_features(), 3);
  // forward through the loop equals the layers called one by one; modes reach the list's items
  Tensor x = randn({5, 4});
  auto& l0 = s->layers->at<nn::Linear>(0);
  auto& bn = s->layers->at<nn::BatchNorm1dImpl>(1);
  auto& l2 = s->layers->at<nn::Linear>(2);
  s->eval();
  EXPECT_FALSE(bn.is_training());
  EXPECT_TRUE(allclose(s->forward(x), relu(l2.forward(bn.forward(l0.forward(x))))));
  s->train();
  EXPECT_TRUE(bn.is_training());
  s->to(kFloat64);
  EXPECT_EQ(l0.weight.dtype(), kFloat64);
  EXPECT_EQ(s->forward(x.to(kFloat64)).dtype(), kFloat64);
  // extend, and the errors: index out of range, at<T> of another type
  nn::ModuleList more;
  more->extend(std::vector<std::shared_ptr<nn::Module>>{nn::Tanh().ptr(), nn::ReLU().ptr()});
  EXPECT_EQ(more->size(), 2u);
  EXPECT_THAT(error_of<ValueError>([&] { more[5]; }),
              HasSubstr("ModuleList: index 5 is out of range; expected an index < 2, got 5"));
  EXPECT_THAT(error_of<ValueError>([&] { more->at<nn::Linear>(0); }),
              HasSubstr("ModuleList::at: module 0 has another type; expected the requested module type, got Tanh; hint:"));
  EXPECT_THAT(error_of<ValueError>([] { nn::ModuleList()->ptr(0); }), HasSubstr("the list is empty"));
}

TEST(Containers, FunctionalBindsArgumentsAndHasNoParameters) {
  Tensor x = d64({-1.0, 2.0}, {2});
  nn::Functional f1(relu), f2(leaky_relu, 0.5), f3([](Tensor t) { return t * 3; });
  EXPECT_THAT(vals(f1(x)), ElementsAre(0.0, 2.0));
  EXPECT_THAT(vals(f2(x)), ElementsAre(-0.5, 2.0));
  EXPECT_THAT(vals(f3(x)), ElementsAre(-3.0, 6.0));
  nn::Functional f4(elu, 1.0, 1.0, 1.0);
  EXPECT_TRUE(allclose(f4(x), elu(x)));
  EXPECT_EQ(f2->parameters().size(), 0u);
  nn::Sequential seq(nn::Linear(2, 2), nn::Functional(tanh));
  EXPECT_THAT(names(seq->named_parameters()), ElementsAre("0.weight", "0.bias"));
  std::ostringstream os;
  os << *seq;
  EXPECT_THAT(os.str(), HasSubstr("(1): Functional()"));
}

TEST(Containers, ModuleDictByName) {
  struct NetImpl : nn::Module {
    NetImpl() {
      blocks = register_module(
          "blocks", nn::ModuleDict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
                        {"enc", nn::Linear(4, 3).ptr()}, {"act", nn::ReLU().ptr()}}));
    }
    nn::ModuleDict blocks{nullptr};
  };
  auto net = std::make_shared<NetImpl>();
  EXPECT_THAT(names(net->named_parameters()), ElementsAre("blocks.enc.weight", "blocks.enc.bias"));
  EXPECT_THAT(net->blocks->keys(), ElementsAre("enc", "act"));
  EXPECT_TRUE(net->blocks->contains("act"));
  EXPECT_EQ(net->blocks->at<nn::Linear>("enc").options.in_features(), 4);
  std::vector<std::string> seen;
  for (const auto& item : *net->blocks) seen.push_back(item.key() + ":" + item.value()->name());
  EXPECT_THAT(seen, ElementsAre("enc:Linear", "act:ReLU"));
  // updating a name replaces its module (and its registered parameters)
  net->blocks->update({{"enc", nn::Linear(4, 5).ptr()}});
  EXPECT_EQ(net->blocks->size(), 2u);
  EXPECT_EQ(net->named_parameters()["blocks.enc.weight"].size(0), 5);
  EXPECT_THAT(error_of<ValueError>([&] { (*net->blocks)["dec"]; }),
              HasSubstr("ModuleDict: there is no module 'dec'; expected one of \"enc\", \"act\", got \"dec\""));
  EXPECT_THAT(error_of<ValueError>([&] { net->blocks->at<nn::Linear>("act"); }), HasSubstr("has another type"));
  EXPECT_EQ(net->blocks->pop("act")->name(), "ReLU");
  EXPECT_FALSE(net->blocks->contains("act"));
}

}  // namespace
}  // namespace gradlab
