// Lesson 06 exercise answers: each TEST asserts the claim its answer in
// lessons/06_modules_parameters/README.md makes.
#include <gtest/gtest.h>

#include <gradlab/gradlab.hpp>
#include <string>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;

namespace {

struct Data {
  gl::Tensor x, y;
};
Data make_data() {  // the lesson's toy regression: y = x . w_true + 5
  gl::Generator g(6);
  gl::Tensor x = gl::randn({256, 4}, {}, &g);
  gl::Tensor w_true = gl::tensor({0.5, -1.0, 0.25, 2.0}).reshape({4, 1});
  return {x, gl::matmul(x, w_true) + 5.0};
}

template <class Model>
double train(Model& model, const Data& d, int steps, double lr) {
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(lr));
  nn::MSELoss mse;
  double last = 0;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    gl::Tensor loss = mse(model(d.x), d.y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  return last;
}

std::vector<std::string> names_of(const nn::NamedTensors& nt) {
  std::vector<std::string> r;
  for (const auto& [n, t] : nt) r.push_back(n);
  return r;
}

// Exercise 1: offset registered, but frozen.
struct FrozenOffsetImpl : nn::Module {
  FrozenOffsetImpl() {
    fc = register_module("fc", nn::Linear(nn::LinearOptions(4, 1).bias(false)));
    offset = register_parameter("offset", gl::zeros({1}), /*requires_grad=*/false);
  }
  gl::Tensor forward(const gl::Tensor& x) { return fc(x) + offset; }
  nn::Linear fc{nullptr};
  gl::Tensor offset;
};

// Exercise 2: a registered third layer, called, but multiplied by 0.
struct ZeroedThirdImpl : nn::Module {
  ZeroedThirdImpl() {
    hidden = register_module("hidden", nn::Linear(4, 16));
    out = register_module("out", nn::Linear(16, 1));
    extra = register_module("extra", nn::Linear(4, 1));
  }
  gl::Tensor forward(const gl::Tensor& x) { return out(gl::tanh(hidden(x))) + extra(x) * 0.0; }
  nn::Linear hidden{nullptr}, out{nullptr}, extra{nullptr};
};

// Exercise 3: the bug inside a submodule.
int block_forward_line = 0;  // set by BlockImpl::forward: the line of `fc(x) * scale`
struct BlockImpl : nn::Module {
  BlockImpl() {
    fc = register_module("fc", nn::Linear(4, 1));
    register_module("out", nn::Linear(1, 1));  // registered, never used
    scale = gl::ones({1}).requires_grad_();    // BUG: never registered
  }
  gl::Tensor forward(const gl::Tensor& x) {
    return out((block_forward_line = __LINE__, fc(x) * scale));
  }
  nn::Linear fc{nullptr}, out{nn::Linear(1, 1)};
  gl::Tensor scale;
};

}  // namespace

GRADLAB_MODULE(FrozenOffset);
GRADLAB_MODULE(ZeroedThird);
GRADLAB_MODULE(Block);

namespace {

struct NetImpl : nn::Module {
  NetImpl() { block = register_module("block", Block()); }
  gl::Tensor forward(const gl::Tensor& x) { return block(x); }
  Block block{nullptr};
};

// Exercise 4: one Linear under two names.
struct SharedImpl : nn::Module {
  SharedImpl() {
    a = register_module("a", nn::Linear(4, 4));
    b = register_module("b", a);
  }
  nn::Linear a{nullptr}, b{nullptr};
};

}  // namespace

GRADLAB_MODULE(Net);
GRADLAB_MODULE(Shared);

TEST(Lesson06Answers, Exercise1FrozenOffsetIsListedButNeverTrained) {
  gl::manual_seed(0);
  const Data d = make_data();
  FrozenOffset m;
  EXPECT_EQ(names_of(m->named_parameters()), (std::vector<std::string>{"offset", "fc.weight"}));
  EXPECT_EQ(m->parameters().size(), 2u);
  nn::MSELoss mse;
  EXPECT_TRUE(nn::find_unregistered_tensors(mse(m(d.x), d.y), *m).empty());
  const auto before = nn::snapshot_parameters(*m);
  const double loss = train(m, d, 200, 0.1);
  EXPECT_TRUE(nn::parameters_not_updated(before, *m).empty());
  EXPECT_EQ(m->offset.item<double>(), 0.0);
  EXPECT_GT(loss, 20.0);  // the +5 is never learned: the loss stays near 25
}

TEST(Lesson06Answers, Exercise2ZeroedLayerCaughtByParametersNotUpdated) {
  gl::manual_seed(0);
  const Data d = make_data();
  ZeroedThird m;
  nn::MSELoss mse;
  EXPECT_TRUE(nn::find_unregistered_tensors(mse(m(d.x), d.y), *m).empty());
  const auto before = nn::snapshot_parameters(*m);
  train(m, d, 1, 0.1);
  EXPECT_EQ(nn::parameters_not_updated(before, *m),
            (std::vector<std::string>{"extra.weight", "extra.bias"}));
}

TEST(Lesson06Answers, Exercise3SubmoduleBugKeepsDottedNamesAndSourceLine) {
  gl::manual_seed(0);
  const Data d = make_data();
  Net m;
  nn::MSELoss mse;
  const auto before = nn::snapshot_parameters(*m);
  gl::Tensor loss = mse(m(d.x), d.y);
  const auto found = nn::find_unregistered_tensors(loss, *m);
  ASSERT_EQ(found.size(), 3u);  // scale, and the weight and bias of the unregistered `out`
  int scale_hits = 0, layer_hits = 0;
  for (const auto& f : found) {
    const std::string where = f.used_at.str();
    if (f.tensor.impl() == m->block->scale.impl()) {
      ++scale_hits;  // the plain tensor: the line in BlockImpl::forward that used it
      EXPECT_EQ(static_cast<int>(f.used_at.loc.line()), block_forward_line) << f.describe();
      EXPECT_NE(where.find("answers_06_test.cpp"), std::string::npos) << where;
    } else {
      ++layer_hits;  // the unregistered layer's weight/bias: the site is Linear's own forward
      EXPECT_NE(where.find("LinearImpl::forward"), std::string::npos) << where;
      EXPECT_NE(f.describe().find("not a registered submodule"), std::string::npos);
    }
  }
  EXPECT_EQ(scale_hits, 1);
  EXPECT_EQ(layer_hits, 2);
  train(m, d, 1, 0.1);
  EXPECT_EQ(nn::parameters_not_updated(before, *m),
            (std::vector<std::string>{"block.out.weight", "block.out.bias"}));
}

TEST(Lesson06Answers, Exercise4SharedLinearCountedOnce) {
  Shared m;
  EXPECT_EQ(names_of(m->named_parameters()), (std::vector<std::string>{"a.weight", "a.bias"}));
  EXPECT_EQ(m->parameters().size(), 2u);
  EXPECT_EQ(names_of(m->named_parameters(true, /*remove_duplicate=*/false)),
            (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "b.bias"}));
  EXPECT_EQ(m->state_dict().size(), 4u);
}
