// Lesson 15 exercise answers: each TEST asserts the claim its answer in
// lessons/15_debugging_order/README.md makes. The script's pipeline is rebuilt here as the
// lesson writes it (raw digits -> bugs -> model 64-128-128-C).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;

namespace {

struct Bugs {
  bool labels_shifted = true, transposed = true, unnormalized = true, layer_left_out = true;
  bool softmax = false;
  double lr = 10.0;
};

gl::Tensor normalize(const gl::Tensor& x) { return (x - raw_digits().mean) / raw_digits().std; }

struct NetImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  nn::Softmax softmax{nullptr};
  bool skip, use_softmax;
  NetImpl(int64_t classes, bool skip_fc2, bool with_softmax) : skip(skip_fc2), use_softmax(with_softmax) {
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 128));
    fc3 = register_module("fc3", nn::Linear(128, classes));
    if (use_softmax) softmax = register_module("softmax", nn::Softmax(1));
  }
  gl::Tensor forward(const gl::Tensor& x) {
    gl::Tensor h = gl::relu(fc1(x));
    if (!skip) h = gl::relu(fc2(h));
    h = fc3(h);
    return use_softmax ? softmax(h) : h;
  }
};
GRADLAB_MODULE(Net);

struct Script {
  gl::Tensor x, y;
  Net net{nullptr};
};
Script script(const Bugs& b) {
  Script s;
  s.x = raw_digits().train.data();
  s.y = raw_digits().train.targets();
  if (b.labels_shifted) s.y = s.y + 1;
  if (b.transposed) s.x = transpose_images(s.x);
  if (!b.unnormalized) s.x = normalize(s.x);
  gl::manual_seed(1);
  s.net = Net(gl::amax(s.y).item<int64_t>() + 1, b.layer_left_out, b.softmax);
  return s;
}

dg::Report doctor(const Bugs& b, int64_t num_classes) {
  Script s = script(b);
  gl::optim::SGD opt(s.net->parameters(), gl::optim::SGDOptions(b.lr));
  dg::DoctorOptions o;
  o.num_classes = num_classes;
  o.input_stats = digits_stats();
  return dg::doctor(s.net, nn::CrossEntropyLoss(), opt, {s.x, s.y}, o);
}

double test_accuracy(const Bugs& b) {
  Script s = script(b);
  gl::optim::SGD opt(s.net->parameters(), gl::optim::SGDOptions(b.lr));
  nn::CrossEntropyLoss criterion;
  gl::data::DataLoader loader(gl::data::TensorDataset(s.x, s.y), gl::data::DataLoaderOptions(64).shuffle(true).seed(7));
  for (int epoch = 0; epoch < 10; ++epoch)
    for (gl::data::Batch& batch : loader) {
      opt.zero_grad();
      criterion(s.net(batch.data), batch.target).backward();
      opt.step();
    }
  gl::NoGradGuard no_grad;
  const gl::Tensor logits = s.net(normalize(raw_digits().test.data()));
  return gl::mean((gl::argmax(logits, 1) == raw_digits().test.targets()).to(gl::kFloat64)).item<double>();
}

bool failed(const dg::Report& r, const char* check) {
  const dg::Finding* f = r.find(check);
  return f && f->failed();
}

}  // namespace

TEST(Lesson15Answers, Exercise1TheLRAloneChangesNothing) {
  Bugs b;
  b.lr = 0.1;
  const dg::Report r = doctor(b, 10);
  ASSERT_TRUE(r.stopped_at.has_value());
  EXPECT_EQ(*r.stopped_at, dg::Stage::Data);
  EXPECT_TRUE(failed(r, "label_range") && failed(r, "input_stats")) << r;
  EXPECT_EQ(r.failures().size(), 2u) << r;
  EXPECT_LT(test_accuracy(b), 0.5);
}

TEST(Lesson15Answers, Exercise2InferredClassesHideTheShift) {
  const dg::Report r = doctor(Bugs{}, 0);
  const dg::Finding* range = r.find("label_range");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->verdict, dg::Verdict::Ok) << *range;
  const dg::Finding* balance = r.find("label_balance");
  ASSERT_NE(balance, nullptr);
  EXPECT_EQ(balance->verdict, dg::Verdict::Warn);
  EXPECT_THAT(balance->evidence, HasSubstr("never seen: class 0"));
  ASSERT_TRUE(r.stopped_at.has_value());
  EXPECT_EQ(*r.stopped_at, dg::Stage::Data) << "input_stats still fails";
  EXPECT_TRUE(failed(r, "input_stats"));
}

TEST(Lesson15Answers, Exercise3SoftmaxBeforeCrossEntropy) {
  Bugs b{false, false, false, false, /*softmax=*/true, 0.1};
  const dg::Report r = doctor(b, 10);
  ASSERT_TRUE(r.stopped_at.has_value());
  EXPECT_EQ(*r.stopped_at, dg::Stage::Model);
  ASSERT_TRUE(failed(r, "loss_pairing")) << r;
  const std::string& e = r.find("loss_pairing")->evidence;
  // The op's own line is inside gradlab's Softmax; the finding names the user's call of the module.
  EXPECT_THAT(e, HasSubstr("softmax (DivBackward0, inside a module called at "));
  EXPECT_THAT(e, HasSubstr("answers_15_test.cpp:"));
  EXPECT_THAT(e, HasSubstr("NetImpl::forward)), the output of module"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("src/gradlab/")));
  EXPECT_THAT(e, HasSubstr("the output of module 'softmax' (Softmax) is fed to cross_entropy"));
  EXPECT_THAT(e, HasSubstr("which applies log_softmax itself"));
}
