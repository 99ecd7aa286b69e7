// load_digits_split: the one seeded, standardized digits split that the benches, checks and
// lessons share. Each test writes out by hand the formula a caller used before the helper existed
// and requires the helper's tensors to be bit-identical to it (so their results did not change).

#include <gtest/gtest.h>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/data/data.hpp"
#include "gradlab/ops/ops.hpp"

namespace gl = gradlab;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;

namespace {

std::pair<data::TensorDataset, data::TensorDataset> raw_split(bool flatten) {
  data::DigitsOptions o;
  o.flatten = flatten;
  return data::train_test_split(data::load_digits(o), 360, /*seed=*/0);
}

TEST(DigitsSplit, DefaultIsTheBenchWorkloadsStandardization) {
  // bench/train_workload.hpp, lessons 07 and 08, checks/cuda/train_smoke_test.cpp had:
  //   mu = mean(train, {0}, keepdim); sd = std(train, {0}, correction 0, keepdim) + 1e-6
  auto [train, test] = raw_split(/*flatten=*/true);
  const gl::Tensor mu = gl::mean(train.data(), {0}, true);
  const gl::Tensor sd = gl::std(train.data(), {0}, 0, true) + 1e-6;
  const data::DigitsSplit s = data::load_digits_split();
  EXPECT_EQ(s.train.data().sizes(), (gl::Shape{1437, 64}));
  EXPECT_EQ(s.test.data().sizes(), (gl::Shape{360, 64}));
  EXPECT_EQ(s.mean.sizes(), (gl::Shape{64}));
  EXPECT_EQ(s.std.sizes(), (gl::Shape{64}));
  EXPECT_TRUE(gl::equal(s.train.data(), (train.data() - mu) / sd));
  EXPECT_TRUE(gl::equal(s.test.data(), (test.data() - mu) / sd));
  EXPECT_TRUE(gl::equal(s.train.targets(), train.targets()));
  EXPECT_TRUE(gl::equal(s.test.targets(), test.targets()));
  EXPECT_TRUE(gl::equal(s.mean, mu.reshape({64})));
  EXPECT_FALSE(s.train.data().requires_grad());

  // the statistics are the training rows': standardized training pixels have mean 0, and the
  // pixels that vary have std 1 (the test rows, not used for them, do not)
  EXPECT_LT(gl::amax(gl::abs(gl::mean(s.train.data(), {0}))).item<double>(), 1e-5);
  EXPECT_GT(gl::amax(gl::abs(gl::mean(s.test.data(), {0}))).item<double>(), 1e-2);
  const gl::Tensor varies = gl::std(train.data(), {0}, 0) > 0;
  // (1 - std/(std + 1e-6) is up to 1e-3 for the rarest pixels)
  const gl::Tensor unit = gl::abs(gl::std(s.train.data(), {0}, 0) - 1.0) < 1e-3;
  EXPECT_TRUE(gl::equal(unit, varies)) << "std 1 where a pixel varies, 0 elsewhere";
  EXPECT_GT(gl::sum(gl::logical_not(varies)).item<int64_t>(), 0) << "digits has constant pixels";
  EXPECT_TRUE(gl::equal(s.std == 1.0, gl::logical_not(varies))) << "std 0 is replaced by 1";
}

TEST(DigitsSplit, SampleStdWithoutEpsIsLesson09s) {
  // lesson 09 had: mean(train, {0}); std(train, {0}) (correction 1); where(std == 0, 1, std)
  auto [train, test] = raw_split(/*flatten=*/true);
  const gl::Tensor mean = train.data().mean({0});
  gl::Tensor stddev = train.data().std({0});
  stddev = gl::where(stddev == 0, 1.0, stddev);
  data::DigitsSplitOptions o;
  o.correction = 1;
  o.eps = 0;
  const data::DigitsSplit s = data::load_digits_split(o);
  EXPECT_TRUE(gl::equal(s.std, stddev));
  EXPECT_TRUE(gl::equal(s.train.data(), (train.data() - mean) / stddev));
  EXPECT_TRUE(gl::equal(s.test.data(), (test.data() - mean) / stddev));
}

TEST(DigitsSplit, RawImagesWithStatisticsForNormalizeAreLesson10s) {
  // lesson 10 and checks/io/resume_helper.cpp had: the [N, 1, 8, 8] split, and
  // transforms::normalize(mean(train, {0}), std(train, {0})) in front of the augmentations
  auto [train, test] = raw_split(/*flatten=*/false);
  data::DigitsSplitOptions o;
  o.flatten = false;
  o.standardize = false;
  o.correction = 1;
  o.eps = 0;
  const data::DigitsSplit s = data::load_digits_split(o);
  EXPECT_TRUE(gl::equal(s.train.data(), train.data()));
  EXPECT_TRUE(gl::equal(s.test.data(), test.data()));
  EXPECT_EQ(s.mean.sizes(), (gl::Shape{1, 8, 8})) << "one image's shape, as normalize needs";
  auto old_ds = data::map(std::make_shared<data::TensorDataset>(train),
                          tf::normalize(train.data().mean({0}), train.data().std({0})));
  auto new_ds =
      data::map(std::make_shared<data::TensorDataset>(s.train), tf::normalize(s.mean, s.std));
  for (size_t i : {size_t{0}, size_t{7}, size_t{1436}})
    EXPECT_TRUE(gl::equal(new_ds->get(i).data, old_ds->get(i).data)) << "image " << i;
}

TEST(DigitsSplit, OptionsAreChecked) {
  data::DigitsSplitOptions o;
  o.correction = -1;
  EXPECT_THROW(data::load_digits_split(o), gl::ValueError);
  o = {};
  o.eps = -1e-6;
  EXPECT_THROW(data::load_digits_split(o), gl::ValueError);
  o = {};
  o.test_size = 100;
  o.seed = 7;
  const data::DigitsSplit s = data::load_digits_split(o);
  EXPECT_EQ(s.train.size(), 1697u);
  EXPECT_EQ(s.test.size(), 100u);
}

}  // namespace
