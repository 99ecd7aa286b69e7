// nn::Module: registration, traversal with dotted names, modes, zero_grad, to(dtype),
// printing, state_dict round trips, holders.

#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::vals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> names(const nn::NamedTensors& n) {
  std::vector<std::string> r;
  for (const auto& [k, v] : n) r.push_back(k);
  return r;
}

struct BlockImpl : nn::Module {
  BlockImpl() {
    fc = register_module("fc", nn::Linear(4, 3));
    bn = register_module("bn", nn::BatchNorm1d(3));
    scale = register_parameter("scale", ones({3}));
  }
  Tensor forward(const Tensor& x) { return bn(fc(x)) * scale; }
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
  Tensor scale;
};
GRADLAB_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() {
    encoder = register_module("encoder", nn::Sequential(nn::Linear(4, 4), nn::ReLU(), Block()));
    head = register_module("head", nn::Linear(3, 2));
  }
  Tensor forward(const Tensor& x) { return head(encoder(x)); }
  nn::Sequential encoder{nullptr};
  nn::Linear head{nullptr};
};

TEST(Module, NamedParametersUseDottedNamesInRegistrationOrder) {
  NetImpl net;
  EXPECT_THAT(names(net.named_parameters()),
              ElementsAre("encoder.0.weight", "encoder.0.bias", "encoder.2.scale",
                          "encoder.2.fc.weight", "encoder.2.fc.bias", "encoder.2.bn.weight",
                          "encoder.2.bn.bias", "head.weight", "head.bias"));
  EXPECT_THAT(names(net.named_buffers()),
              ElementsAre("encoder.2.bn.running_mean", "encoder.2.bn.running_var",
                          "encoder.2.bn.num_batches_tracked"));
  EXPECT_EQ(net.parameters().size(), 9u);
  EXPECT_EQ(net.parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(net.children().size(), 2u);
  EXPECT_EQ(net.named_children()[0].first, "encoder");
  std::vector<std::string> mods;
  for (auto& [n, m] : net.named_modules()) mods.push_back(n);
  EXPECT_THAT(mods, ElementsAre("encoder", "encoder.0", "encoder.1", "encoder.2", "encoder.2.fc",
                                "encoder.2.bn", "head"));
  EXPECT_EQ(net.num_parameters(), 4 * 4 + 4 + 3 + 4 * 3 + 3 + 3 + 3 + 3 * 2 + 2);
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  for (const Tensor& b : net.buffers()) EXPECT_FALSE(b.requires_grad());
}

TEST(Module, ParametersAreHandlesToTheRegisteredTensors) {
  nn::Linear lin(2, 2);
  Tensor w = lin->named_parameters()[0].second;
  EXPECT_EQ(w.impl(), lin->weight.impl());
  {
    NoGradGuard ng;
    w.fill_(3.0);
  }
  EXPECT_THAT(vals(lin->weight), ElementsAre(3, 3, 3, 3));
}

TEST(Module, TiedParametersAreListedOnce) {
  struct Tied : nn::Module {
    Tied() {
      a = register_module("a", nn::Linear(3, 3));
      b = register_module("b", nn::Linear(3, 3));
      b->weight = a->weight;  // the member only: the registered tensor is unchanged
    }
    nn::Linear a{nullptr}, b{nullptr};
  };
  struct Shared : nn::Module {
    Shared() {
      lin = register_module("first", nn::Linear(3, 3));
      register_module("second", lin);  // the same module twice
    }
    nn::Linear lin{nullptr};
  };
  Shared s;
  EXPECT_EQ(s.named_parameters().size(), 2u);
  EXPECT_EQ(s.named_parameters(true, /*remove_duplicate=*/false).size(), 4u);
  EXPECT_EQ(s.state_dict().size(), 4u) << "state_dict keeps both names, as PyTorch";
  Tied t;
  EXPECT_EQ(t.parameters().size(), 4u);
}

TEST(Module, RegistrationErrors) {
  nn::Module m("M");
  m.register_parameter("w", zeros({2}));
  EXPECT_THROW_MSG(m.register_parameter("w", zeros({2})), ValueError, "already registered");
  EXPECT_THROW_MSG(m.register_buffer("w", zeros({2})), ValueError, "already registered");
  EXPECT_THROW_MSG(m.register_parameter("a.b", zeros({2})), ValueError, "must not contain \".\"");
  EXPECT_THROW_MSG(m.register_parameter("", zeros({2})), ValueError, "must not be empty");
  EXPECT_THROW_MSG(m.register_parameter("i", zeros({2}, dtype(kInt64))), DTypeError,
                   "floating point");
  Tensor leaf = ones({2}, requires_grad());
  Tensor computed = leaf * 2;
  EXPECT_THROW_MSG(m.register_parameter("c", computed), AutogradError, "leaf", "MulBackward0",
                   "detach()");
  EXPECT_THROW_MSG(m.register_module("x", std::shared_ptr<nn::Module>()), ValueError, "null");
  m.register_parameter("frozen", zeros({2}), /*requires_grad=*/false);
  EXPECT_EQ(m.num_parameters(), 4);
  EXPECT_EQ(m.num_parameters(/*trainable_only=*/true), 2);
  nn::Linear empty{nullptr};
  EXPECT_THROW_MSG(empty->forward(zeros({1})), ValueError, "empty module holder");
}

TEST(Module, TrainEvalPropagatesToEverySubmodule) {
  NetImpl net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  for (auto& [n, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << n;
  net.train();
  for (auto& [n, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << n;
}

TEST(Module, ZeroGradToNoneOrZeros) {
  nn::Linear lin(3, 2);
  sum(lin(ones({4, 3}))).backward();
  ASSERT_TRUE(lin->weight.grad().defined());
  lin->zero_grad(/*set_to_none=*/false);
  EXPECT_THAT(vals(lin->weight.grad()), ElementsAre(0, 0, 0, 0, 0, 0));
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_FALSE(lin->bias.grad().defined());
}

TEST(Module, ToDtypeConvertsInPlaceKeepingHandles) {
  nn::Sequential seq(nn::Linear(3, 2), nn::BatchNorm1d(2));
  Tensor w = seq->parameters()[0];
  const std::vector<double> before = vals(w);
  seq->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64) << "handles held elsewhere see the new dtype";
  EXPECT_THAT(vals(w), checks::Near(before, 0));
  for (const Tensor& p : seq->parameters()) EXPECT_EQ(p.dtype(), kFloat64);
  const auto bufs = seq->named_buffers();
  EXPECT_EQ(bufs[0].second.dtype(), kFloat64);
  EXPECT_EQ(bufs[2].second.dtype(), kInt64) << "num_batches_tracked stays int64";
  Tensor y = seq->forward(ones({4, 3}, dtype(kFloat64)));
  EXPECT_EQ(y.dtype(), kFloat64);
  sum(y).backward();
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_THROW_MSG(seq->to(kInt64), DTypeError, "floating point");
}

TEST(Module, PrintsTheTreeWithParameterCounts) {
  nn::Sequential seq(nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.2), nn::Linear(128, 10));
  std::ostringstream os;
  os << *seq;
  const std::string s = os.str();
  EXPECT_THAT(s, HasSubstr("Sequential(\n"));
  EXPECT_THAT(
      s, HasSubstr("  (0): Linear(in_features=64, out_features=128, bias=true)  [8,320 params]\n"));
  EXPECT_THAT(s, HasSubstr("  (1): ReLU()\n"));
  EXPECT_THAT(s, HasSubstr("  (2): Dropout(p=0.2)\n"));
  EXPECT_THAT(
      s, HasSubstr("  (3): Linear(in_features=128, out_features=10, bias=true)  [1,290 params]\n"));
  EXPECT_THAT(s, HasSubstr(")  [9,610 params, 9,610 trainable]"));
  std::ostringstream custom;
  NetImpl net;
  custom << net;
  EXPECT_THAT(custom.str(), HasSubstr("Net(\n  (encoder): Sequential(\n"));
  EXPECT_THAT(
      custom.str(),
      HasSubstr("    (2): Block(\n      (fc): Linear(in_features=4, out_features=3, bias=true)"));
  EXPECT_EQ(nn::group_digits(1234567), "1,234,567");
  EXPECT_EQ(nn::group_digits(12), "12");
}

TEST(Module, StateDictRoundTripAndStrictness) {
  manual_seed(1);
  NetImpl a;
  manual_seed(2);
  NetImpl b;
  // One training-mode forward changes a's BatchNorm running stats.
  a.forward(randn({8, 4}));
  const StateDict sd = a.state_dict();
  EXPECT_EQ(sd.keys()[0], "encoder.0.weight");
  EXPECT_EQ(sd.size(), 12u);
  EXPECT_TRUE(sd.contains("encoder.2.bn.running_mean"));
  EXPECT_FALSE(sd.at("encoder.0.weight").requires_grad());
  EXPECT_TRUE(sd.at("encoder.0.weight").is_same_storage(a.encoder->parameters()[0]))
      << "detached handles";
  nn::LoadResult r = b.load_state_dict(sd);
  EXPECT_TRUE(r.ok());
  for (const auto& [k, v] : b.state_dict()) EXPECT_TRUE(equal(v, sd.at(k))) << k;
  EXPECT_TRUE(b.parameters()[0].requires_grad()) << "loading keeps parameters trainable";

  StateDict partial = sd;
  partial.erase("head.bias");
  partial.insert("extra.weight", zeros({1}));
  // (the exact wording is io's; see checks/io)
  EXPECT_THROW_MSG(b.load_state_dict(partial), Error, "missing", "head.bias", "unexpected",
                   "extra.weight");
  r = b.load_state_dict(partial, /*strict=*/false);
  EXPECT_THAT(r.missing_keys, ElementsAre("head.bias"));
  EXPECT_THAT(r.unexpected_keys, ElementsAre("extra.weight"));
  StateDict wrong = sd;
  wrong.insert("head.weight", zeros({3, 3}));
  EXPECT_THROW_MSG(b.load_state_dict(wrong, false), Error, "mismatch", "head.weight", "[2, 3]",
                   "[3, 3]");
}

TEST(Sequential, ForwardIndexingAndNamedConstruction) {
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  EXPECT_EQ(seq->size(), 3u);
  Tensor x = randn({5, 3});
  Tensor manual = seq->at<nn::LinearImpl>(2).forward(relu(seq->at<nn::LinearImpl>(0).forward(x)));
  EXPECT_TRUE(allclose(seq(x), manual));
  EXPECT_EQ(seq->ptr(1)->name(), "ReLU");
  EXPECT_THROW_MSG(seq->at<nn::LinearImpl>(1), ValueError, "another type");
  EXPECT_THROW_MSG(seq->ptr(3), ShapeError, "out of range");
  nn::Sequential named({{"fc", nn::Linear(3, 2)}, {"act", nn::Tanh()}});
  EXPECT_THAT(names(named->named_parameters()), ElementsAre("fc.weight", "fc.bias"));
  seq->push_back(nn::Sigmoid());
  seq->push_back("out", nn::Linear(2, 1));
  EXPECT_EQ(seq(x).sizes(), (Shape{5, 1}));
  EXPECT_THAT(names(seq->named_parameters()),
              ElementsAre("0.weight", "0.bias", "2.weight", "2.bias", "out.weight", "out.bias"));
  nn::Sequential empty;
  EXPECT_TRUE(equal(empty(x), x));
}

// NOTE: C++ leaves the order in which a call's arguments are evaluated unspecified, so
// `Sequential(nn::Linear(..), nn::Linear(..))` draws the layers' initial weights in an order that
// depends on the compiler (g++ 12 makes the last layer first, clang 19 the first): the same seed
// gives other weights. Inside braces the order is left to right by the standard ([dcl.init.list]),
// so `Sequential{...}` draws them in order, as Python's nn.Sequential(...) does, under any compiler.
TEST(Sequential, BracesDrawTheLayersWeightsInOrder) {
  manual_seed(3);
  nn::Sequential braces{nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 4)};
  manual_seed(3);
  nn::Linear first(2, 3);
  nn::Linear second(3, 4);
  const auto p = braces->parameters();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_TRUE(equal(p[0], first->weight));
  EXPECT_TRUE(equal(p[1], first->bias));
  EXPECT_TRUE(equal(p[2], second->weight));
  EXPECT_TRUE(equal(p[3], second->bias));
}

// Every layer with state: state_dict -> a fresh differently-seeded copy -> same outputs.
template <class Make>
void expect_round_trip(Make make, const Tensor& input, const char* what) {
  manual_seed(11);
  auto a = make();
  manual_seed(12);
  auto b = make();
  a->train();
  (void)a(input);  // BatchNorm: running stats move away from their initial values
  a->eval();
  b->eval();
  EXPECT_FALSE(equal(a(input), b(input))) << what << ": the two copies start different";
  EXPECT_TRUE(b->load_state_dict(a->state_dict()).ok()) << what;
  EXPECT_TRUE(equal(a(input), b(input))) << what << ": identical after load_state_dict";
}

TEST(Module, EveryStatefulLayerRoundTripsThroughStateDict) {
  expect_round_trip([] { return nn::Linear(4, 3); }, randn({2, 4}), "Linear");
  expect_round_trip([] { return nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1)); },
                    randn({2, 2, 5, 5}), "Conv2d");
  expect_round_trip([] { return nn::BatchNorm1d(4); }, randn({6, 4}), "BatchNorm1d");
  expect_round_trip(
      [] {
        nn::LayerNorm ln(Shape{4});
        nn::init::normal_(ln->weight, 0.0, 1.0);
        return ln;
      },
      randn({2, 4}), "LayerNorm");
  expect_round_trip([] { return nn::Embedding(5, 3); },
                    from_vector(std::vector<int64_t>{0, 4, 2}, {3}), "Embedding");
  expect_round_trip(
      [] {
        return nn::Sequential(nn::Conv2d(1, 2, 3), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                              nn::Linear(2 * 3 * 3, 4), nn::BatchNorm1d(4), nn::Dropout(0.5),
                              nn::Linear(4, 2));
      },
      randn({3, 1, 8, 8}), "small CNN");
}

TEST(Module, ApplyVisitsChildrenThenSelfAndIdentityPassesThrough) {
  NetImpl net;
  std::vector<std::string> seen;
  net.apply([&](nn::Module& m) { seen.push_back(m.name()); });
  EXPECT_THAT(seen, ElementsAre("Linear", "ReLU", "Linear", "BatchNorm1d", "Block", "Sequential",
                                "Linear", "Net"));
  nn::Identity id;
  Tensor x = randn({3});
  EXPECT_TRUE(id(x).is_same_storage(x));
  EXPECT_NO_THROW(net.to(Device()));
}

}  // namespace
}  // namespace gradlab
