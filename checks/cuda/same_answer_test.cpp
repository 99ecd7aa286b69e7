// Answers that must not depend on the device (CPU, then CUDA: the host emulator by default, a GPU
// under the `cuda` label): exact integer powers, float -> int64 of NaN / inf / out-of-range
// values, and in-place ops whose input overlaps the tensor they write.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda_env.hpp"
#include "gradlab/gradlab.hpp"

using namespace gradlab;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

const Device kCuda(kCUDA);

Tensor ints(const std::vector<int64_t>& v) { return from_vector(v, {static_cast<int64_t>(v.size())}); }
Tensor doubles(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, TensorOptions().dtype(kFloat64));
}

// x^e by repeated multiplication in unsigned arithmetic (wraps as int64 does): the oracle.
int64_t power_by_loop(int64_t x, int64_t e) {
  uint64_t r = 1;
  for (int64_t k = 0; k < e; ++k) r *= static_cast<uint64_t>(x);
  return static_cast<int64_t>(r);
}

// Every base in -20..20 with every exponent in 0..13, as two int64 tensors of the same length.
std::pair<std::vector<int64_t>, std::vector<int64_t>> bases_and_exponents() {
  std::vector<int64_t> b, e;
  for (int64_t x = -20; x <= 20; ++x)
    for (int64_t k = 0; k <= 13; ++k) {
      b.push_back(x);
      e.push_back(k);
    }
  return {b, e};
}

std::string where(const Device& d) { return d.is_cuda() ? testing_cuda::backend_name() : "CPU"; }

std::vector<Device> devices() { return {Device(kCPU), kCuda}; }

}  // namespace

TEST(SameAnswer, IntegerPowersAreExactOnEveryDevice) {
  GRADLAB_USE_CUDA_BACKEND();
  const auto [b, e] = bases_and_exponents();
  for (const Device& d : devices()) {
    Tensor base = ints(b).to(d), expo = ints(e).to(d);
    Tensor p = pow(base, expo);
    ASSERT_EQ(p.dtype(), kInt64) << "int ^ int stays int64, as in PyTorch";
    const std::vector<int64_t> got = p.cpu().to_vector<int64_t>();
    for (std::size_t i = 0; i < b.size(); ++i)
      ASSERT_EQ(got[i], power_by_loop(b[i], e[i])) << where(d) << ": " << b[i] << "^" << e[i];
    // The scalar exponent takes the same path: 3^3 is 27, never 26 (CUDA's pow is within 2 ulp).
    for (int64_t k = 0; k <= 13; ++k) {
      const std::vector<int64_t> row = pow(base, k).cpu().to_vector<int64_t>();
      for (std::size_t i = 0; i < b.size(); ++i)
        ASSERT_EQ(row[i], power_by_loop(b[i], k)) << where(d) << ": " << b[i] << "^" << k;
    }
  }
}

TEST(SameAnswer, NegativeIntegerExponentsFollowPyTorch) {
  GRADLAB_USE_CUDA_BACKEND();
  for (const Device& d : devices()) {
    Tensor base = ints({1, -1, -1, 2, -3, 0}).to(d);
    Tensor expo = ints({-5, -2, -3, -1, -2, -1}).to(d);
    // 1^-k = 1, (-1)^-k = ±1, anything else truncates to 0 (0^-1 included: no division).
    EXPECT_THAT(pow(base, expo).cpu().to_vector<int64_t>(), ElementsAre(1, 1, -1, 0, 0, 0)) << where(d);
    try {
      (void)pow(base, -1);
      ADD_FAILURE() << "a negative integer scalar exponent must be refused";
    } catch (const Error& err) {
      EXPECT_THAT(err.what(), HasSubstr("pow: integers to negative integer powers are not allowed"));
      EXPECT_THAT(err.what(), HasSubstr("x.pow(-1.0)"));
    }
    EXPECT_THAT(pow(base, -1.0).cpu().to_vector<double>(), ElementsAre(1, -1, -1, 0.5, static_cast<double>(-1.0f / 3.0f), INFINITY));
  }
}

TEST(SameAnswer, FloatToInt64SaturatesAndNaNGivesZeroOnEveryDevice) {
  GRADLAB_USE_CUDA_BACKEND();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> in{nan, inf, -inf, 1e19, -1e19, 9223372036854775808.0, -9223372036854775808.0,
                               2.9, -2.9, 0.0, -0.0, 1e18};
  const std::vector<int64_t> want{0, kMax, kMin, kMax, kMin, kMax, kMin, 2, -2, 0, 0, 1000000000000000000};
  for (const Device& d : devices()) {
    for (ScalarType from : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
      Tensor x = doubles(in).to(from).to(d);
      const std::vector<double> back = x.cpu().to(kFloat64).to_vector<double>();  // what `from` kept
      const std::vector<int64_t> got = x.to(kInt64).cpu().to_vector<int64_t>();
      for (std::size_t i = 0; i < in.size(); ++i) {
        const double v = back[i];
        const int64_t expect = std::isnan(v) ? 0 : v >= 9223372036854775808.0 ? kMax
                               : v <= -9223372036854775808.0                 ? kMin
                                                                             : static_cast<int64_t>(v);
        EXPECT_EQ(got[i], expect) << where(d) << ", " << to_string(from) << " " << v;
        if (from == kFloat64) {
          EXPECT_EQ(got[i], want[i]) << where(d) << ": " << in[i];
        }
      }
    }
  }
  // Scalars convert the same way.
  EXPECT_EQ(Scalar(nan).to_long(), 0);
  EXPECT_EQ(Scalar(inf).to_long(), kMax);
  EXPECT_EQ(Scalar(-1e30).to_long(), kMin);
  EXPECT_EQ(Scalar(-2.5).to_long(), -2);
}

TEST(SameAnswer, InPlaceOpsRefuseAnInputThatPartlyOverlapsTheirOutput) {
  GRADLAB_USE_CUDA_BACKEND();
  for (const Device& d : devices()) {
    const auto opts = TensorOptions().dtype(kFloat64).device(d);
    Tensor x = arange(0, 8, 1, opts);
    // The example of the review: a shifted view of the same memory (a race on a GPU).
    try {
      x.narrow(0, 1, 7).add_(x.narrow(0, 0, 7));
      ADD_FAILURE() << where(d) << ": a partial overlap must be refused";
    } catch (const Error& err) {
      EXPECT_THAT(err.what(), HasSubstr("add_: unsupported operation: some elements of the input tensor and the "
                                        "written-to tensor refer to a single memory location"));
      EXPECT_THAT(err.what(), HasSubstr("clone() the input"));
    }
    EXPECT_THAT(x.cpu().to_vector<double>(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7)) << "nothing was written";
    Tensor m = arange(0, 4, 1, opts).reshape({2, 2});
    EXPECT_THROW(m.mul_(m.t()), Error) << where(d) << ": same memory, other strides";
    EXPECT_THROW(m.sub_(m[0]), Error) << where(d) << ": a row of itself, broadcast";
    // Allowed: the input is the output itself, or shares no memory with it.
    x.add_(x);
    EXPECT_THAT(x.cpu().to_vector<double>(), ElementsAre(0, 2, 4, 6, 8, 10, 12, 14));
    x.narrow(0, 0, 4).sub_(x.narrow(0, 4, 4));
    EXPECT_THAT(x.cpu().to_vector<double>(), ElementsAre(-8, -8, -8, -8, 8, 10, 12, 14));
    // Interleaved views share a range but no element: computed as if the input were a copy.
    Tensor y = arange(0, 8, 1, opts);
    y.slice(0, 0, 8, 2).add_(y.slice(0, 1, 8, 2));
    EXPECT_THAT(y.cpu().to_vector<double>(), ElementsAre(1, 1, 5, 3, 9, 5, 13, 7)) << where(d);
    // The clone() the message suggests works.
    Tensor z = arange(0, 8, 1, opts);
    z.narrow(0, 1, 7).add_(z.narrow(0, 0, 7).clone());
    EXPECT_THAT(z.cpu().to_vector<double>(), ElementsAre(0, 1, 3, 5, 7, 9, 11, 13)) << where(d);
  }
}

TEST(SameAnswer, InPlaceWritesIntoAnExpandedTensorAreRefused) {
  GRADLAB_USE_CUDA_BACKEND();
  for (const Device& d : devices()) {
    Tensor e = zeros({1}, TensorOptions().dtype(kFloat64).device(d)).expand({3});
    try {
      e.add_(ones({3}, TensorOptions().dtype(kFloat64).device(d)));
      ADD_FAILURE() << where(d) << ": elements that share memory cannot be written one by one";
    } catch (const Error& err) {
      EXPECT_THAT(err.what(), HasSubstr("add_: unsupported operation: more than one element of the written-to "
                                        "tensor refers to a single memory location"));
      EXPECT_THAT(err.what(), HasSubstr("clone() the tensor"));
    }
    EXPECT_THROW(e.fill_(2), Error);
    EXPECT_THROW(e.mul_(2), Error);
    EXPECT_THROW(e.copy_(ones({3}, TensorOptions().dtype(kFloat64).device(d))), Error);
    EXPECT_EQ(e.cpu().to_vector<double>(), std::vector<double>(3, 0.0)) << "nothing was written";
    Tensor c = e.clone();
    c.add_(1);
    EXPECT_THAT(c.cpu().to_vector<double>(), ElementsAre(1, 1, 1));
  }
}
