// Lesson 08 exercise answers: each TEST asserts the claim its answer in
// lessons/08_train_eval_modes/README.md makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <optional>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;

namespace {

const gl::data::DigitsSplit& digits() {
  static const gl::data::DigitsSplit d = gl::data::load_digits_split();
  return d;
}

double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y, int64_t batch) {
  gl::NoGradGuard no_grad;
  double correct = 0;
  for (int64_t s = 0; s < x.size(0); s += batch) {
    const int64_t n = std::min(batch, x.size(0) - s);
    correct += gl::sum(gl::argmax(model(x.narrow(0, s, n)), 1) == y.narrow(0, s, n)).item<double>();
  }
  return correct / static_cast<double>(x.size(0));
}

// Section 3's model and training (10 epochs, SGD + momentum, shuffled batches of 64, drop_last).
nn::Sequential trained(std::optional<double> momentum = 0.1, bool with_bn = true) {
  const auto& d = digits();
  gl::manual_seed(0);
  nn::Sequential model =
      with_bn
          ? nn::Sequential(nn::Linear(64, 128),
                           nn::BatchNorm1d(nn::BatchNormOptions(128).momentum(momentum)),
                           nn::ReLU(), nn::Dropout(0.3), nn::Linear(128, 10))
          : nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.3), nn::Linear(128, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.05).momentum(0.9));
  nn::CrossEntropyLoss criterion;
  gl::data::DataLoader loader(
      gl::data::TensorDataset(d.train.data(), d.train.targets()),
      gl::data::DataLoaderOptions(64).shuffle(true).drop_last(true).seed(0));
  model->train();
  for (int epoch = 0; epoch < 10; ++epoch)
    for (gl::data::Batch& bt : loader) {
      opt.zero_grad();
      criterion(model(bt.data), bt.target).backward();
      opt.step();
    }
  return model;
}

}  // namespace

TEST(Lesson08Answers, Exercise1NoisyStatisticsVersusDropout) {
  const auto& d = digits();
  nn::Sequential model = trained();
  const gl::StateDict saved = model->state_dict();  // train-mode passes overwrite running stats
  auto measure = [&](bool bn_train, bool drop_train, int64_t batch, int reps) {
    double mean = 0;
    for (int k = 0; k < reps; ++k) {
      model->load_state_dict(saved);
      model->ptr(1)->train(bn_train);
      model->ptr(3)->train(drop_train);
      mean += accuracy(model, d.test.data(), d.test.targets(), batch) / reps;
    }
    model->load_state_dict(saved);
    return mean;
  };
  const double eval = measure(false, false, 16, 1);
  const double both16 = measure(true, true, 16, 20), both360 = measure(true, true, 360, 20);
  const double bn16 = measure(true, false, 16, 1), bn360 = measure(true, false, 360, 1);
  const double drop = measure(false, true, 16, 20);
  std::cout << "eval " << eval << "; train 16 " << both16 << ", train 360 " << both360
            << "; BN train only: 16 " << bn16 << ", 360 " << bn360 << "; Dropout only " << drop
            << "\n";
  EXPECT_DOUBLE_EQ(eval, 0.975);
  EXPECT_LT(both16, eval - 0.015);   // the lesson's bug: about 2.8 points lower
  EXPECT_GT(bn16, both16);           // Dropout off: part of the drop is gone...
  EXPECT_LT(bn16, eval - 0.005);     // ...noisy batch-16 statistics still cost ~1 point
  EXPECT_GE(bn360, eval);            // batch statistics of 360 cost nothing
  EXPECT_LT(drop, eval - 0.003);     // Dropout alone costs ~0.8 points
  EXPECT_LT(both360, eval - 0.003);  // at 360 the drop left is Dropout's
  EXPECT_GT(both360, both16);
}

TEST(Lesson08Answers, Exercise2CumulativeRunningStats) {
  const auto& d = digits();
  for (std::optional<double> mom : {std::optional<double>(0.1), std::optional<double>()}) {
    nn::Sequential model = trained(mom);
    auto& bn = model->at<nn::BatchNorm1dImpl>(1);
    gl::NoGradGuard no_grad;
    const gl::Tensor h = model->at<nn::LinearImpl>(0).forward(d.train.data());  // BN's input
    const gl::Tensor mean = gl::mean(h, {0}), var = h.var({0});
    const double dm = gl::amax(gl::abs(bn.running_mean - mean)).item<double>();
    const double dv = gl::amax(gl::abs(bn.running_var - var)).item<double>();
    const double rv = gl::amax(gl::abs(bn.running_var - var) / var).item<double>();
    const double sm = gl::mean(gl::abs(bn.running_mean - mean) / gl::sqrt(var)).item<double>();
    std::cout << (mom ? "momentum 0.1" : "cumulative") << ": max |mean diff| " << dm
              << ", mean |mean diff|/std " << sm << ", max |var diff| " << dv
              << ", max rel var diff " << rv << ", var range " << var.min().item<double>() << ".."
              << var.max().item<double>() << "\n";
  }
}

namespace {

gl::Tensor apply_layer(nn::Sequential& m, size_t k, const gl::Tensor& x) {
  const auto p = m->ptr(k);
  if (auto l = std::dynamic_pointer_cast<nn::LinearImpl>(p)) return l->forward(x);
  if (auto b = std::dynamic_pointer_cast<nn::BatchNorm1dImpl>(p)) return b->forward(x);
  if (auto r = std::dynamic_pointer_cast<nn::ReLUImpl>(p)) return r->forward(x);
  if (auto dr = std::dynamic_pointer_cast<nn::DropoutImpl>(p)) return dr->forward(x);
  ADD_FAILURE() << "unexpected layer " << p->name();
  return x;
}

// Memory held while the output of layers 0..k-1 is alive (only that output is kept).
std::size_t held_after(nn::Sequential& m, size_t k, const gl::Tensor& input, bool grad) {
  gl::AutoGradMode mode(grad);
  const std::size_t base = gl::memory::allocated();
  gl::Tensor x = input;
  for (size_t i = 0; i < k; ++i) x = apply_layer(m, i, x);
  return gl::memory::allocated() - base;
}

// What the graph keeps because of each layer: held(grad) - held(no grad), layer by layer.
std::vector<double> saved_per_layer_kib(nn::Sequential& m, const gl::Tensor& input) {
  std::vector<double> r;
  double prev = 0;
  for (size_t k = 1; k <= m->size(); ++k) {
    const double g = static_cast<double>(held_after(m, k, input, true)) -
                     static_cast<double>(held_after(m, k, input, false));
    r.push_back((g - prev) / 1024);
    prev = g;
  }
  return r;
}

}  // namespace

TEST(Lesson08Answers, Exercise3MemoryPerLayer) {
  const auto& d = digits();
  const gl::Tensor x = d.test.data();
  const gl::Tensor big = gl::cat({x, x, x, x, x, x, x, x});  // 2880 rows, as in section 4
  for (bool with_bn : {true, false}) {
    nn::Sequential model = trained(0.1, with_bn);
    model->eval();
    const auto saved = saved_per_layer_kib(model, big);
    std::cout << (with_bn ? "with BN:" : "without BN:");
    for (size_t k = 0; k < saved.size(); ++k)
      std::cout << " " << model->ptr(k)->name() << " " << saved[k];
    std::cout << " | held grad " << held_after(model, model->size(), big, true) / 1024.0
              << " KiB, nograd " << held_after(model, model->size(), big, false) / 1024.0 << "\n";
    const double act = 2880.0 * 128 * 4 / 1024;  // one hidden activation: 1440 KiB
    const size_t last = model->size() - 1;
    EXPECT_NEAR(saved[last], act, 1.0);  // the last Linear keeps its input
    EXPECT_NEAR(saved[0], 0.0, 1.0);     // the first Linear's input is alive anyway
    if (with_bn) {
      EXPECT_NEAR(saved[1], act, 2.0);  // BatchNorm keeps another activation
    }
    for (size_t k = 0; k < last; ++k) EXPECT_LE(saved[k], saved[last] + 1.0);
    EXPECT_NEAR(static_cast<double>(held_after(model, model->size(), big, true)) / 1024,
                (with_bn ? 2 : 1) * act + 112.5, 2.0);
  }
}

TEST(Lesson08Answers, Exercise4EvalWithoutNoGrad) {
  const auto& d = digits();
  nn::Sequential model = trained();
  model->eval();
  const gl::Tensor x = d.test.data();
  const gl::Tensor big = gl::cat({x, x, x, x, x, x, x, x});
  gl::Tensor with_grad, without;
  {
    without = [&] {
      gl::NoGradGuard g;
      return model(big);
    }();
  }
  with_grad = model(big);
  std::cout << "equal " << gl::equal(with_grad, without) << ", grad_fn "
            << (with_grad.grad_fn() != nullptr) << "\n";
  const std::size_t hg = held_after(model, model->size(), big, true),
                    hn = held_after(model, model->size(), big, false);
  std::cout << "held " << hg / 1024.0 << " vs " << hn / 1024.0 << " KiB\n";
  EXPECT_TRUE(gl::equal(with_grad, without));  // the same output, bit for bit
  EXPECT_TRUE(with_grad.grad_fn() != nullptr && without.grad_fn() == nullptr);
  EXPECT_GT(hg, 20 * hn);  // 2993 KiB against 112.5 KiB
}
