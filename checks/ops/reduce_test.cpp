// Reductions: full and per-dim, keepdim, ties, dtypes.

#include <cmath>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::ivals;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// x = [[1, 5, 3],
//      [4, 2, 6]]
Tensor x23() { return f64({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}}); }

TEST(Reduce, SumFullAndPerDim) {
  Tensor x = x23();
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_EQ(sum(x).item<double>(), 21);
  EXPECT_THAT(vals(sum(x, {0})), ElementsAre(5, 7, 9));
  EXPECT_THAT(vals(x.sum({1})), ElementsAre(9, 12));
  EXPECT_THAT(vals(sum(x, {-1})), ElementsAre(9, 12));
  EXPECT_EQ(sum(x, {1}, /*keepdim=*/true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(sum(x, {0, 1}).item<double>(), 21);
  EXPECT_EQ(sum(x, {0, 1}, true).sizes(), (Shape{1, 1}));
  EXPECT_THAT(vals(sum(x.t(), {1})), ElementsAre(5, 7, 9));  // non-contiguous input
  Tensor x3 = arange(24, kFloat64).reshape({2, 3, 4});
  // x3[i][j][k] = 12 i + 4 j + k; summing over i and k gives 48 + 32 j + 12 = 60 + 32 j
  EXPECT_THAT(vals(sum(x3, {0, 2})), ElementsAre(60, 92, 124));
  EXPECT_EQ(sum(tensor({1, 2, 3})).dtype(), kInt64);
  EXPECT_EQ(sum(tensor({true, true, false})).item<int64_t>(), 2);  // summing a mask counts it
  EXPECT_EQ(sum(zeros({0})).item<double>(), 0);
}

TEST(Reduce, Mean) {
  Tensor x = x23();
  EXPECT_EQ(mean(x).item<double>(), 3.5);
  EXPECT_THAT(vals(mean(x, {0})), ElementsAre(2.5, 3.5, 4.5));
  EXPECT_THAT(vals(x.mean({1}, true)), ElementsAre(3, 4));
  EXPECT_EQ(x.mean({1}, true).sizes(), (Shape{2, 1}));
}

TEST(Reduce, MaxMinFullAndWithDim) {
  Tensor x = x23();
  EXPECT_EQ(max(x).item<double>(), 6);
  EXPECT_EQ(min(x).item<double>(), 1);
  EXPECT_EQ(x.max().dim(), 0);
  auto [mv, mi] = max(x, 1);
  EXPECT_THAT(vals(mv), ElementsAre(5, 6));
  EXPECT_THAT(ivals(mi), ElementsAre(1, 2));
  EXPECT_EQ(mi.dtype(), kInt64);
  auto [nv, ni] = x.min(0, /*keepdim=*/true);
  EXPECT_EQ(nv.sizes(), (Shape{1, 3}));
  EXPECT_THAT(vals(nv), ElementsAre(1, 2, 3));
  EXPECT_THAT(ivals(ni), ElementsAre(0, 1, 0));
  // ties: the first index wins
  auto [tv, ti] = max(tensor({3.0, 7.0, 7.0, 1.0}), 0);
  EXPECT_EQ(tv.item<double>(), 7);
  EXPECT_EQ(ti.item<int64_t>(), 1);
}

TEST(Reduce, AmaxAminOverSeveralDims) {
  Tensor x3 = arange(24, kFloat64).reshape({2, 3, 4});
  EXPECT_THAT(vals(amax(x3, {0, 2})), ElementsAre(15, 19, 23));
  EXPECT_THAT(vals(amin(x3, {1, 2}, true)), ElementsAre(0, 12));
  EXPECT_EQ(amin(x3, {1, 2}, true).sizes(), (Shape{2, 1, 1}));
  EXPECT_EQ(amax(x3).item<double>(), 23);
}

TEST(Reduce, ArgmaxArgmin) {
  Tensor x = x23();
  EXPECT_EQ(argmax(x).item<int64_t>(), 5);  // flattened
  EXPECT_EQ(argmin(x).item<int64_t>(), 0);
  EXPECT_THAT(ivals(argmax(x, 1)), ElementsAre(1, 2));
  EXPECT_THAT(ivals(x.argmax(0)), ElementsAre(1, 0, 1));
  EXPECT_EQ(argmax(x, 1, true).sizes(), (Shape{2, 1}));
  EXPECT_THAT(ivals(argmin(x, -1)), ElementsAre(0, 1));
  EXPECT_EQ(argmax(x).dtype(), kInt64);
}

TEST(Reduce, VarStdWithCorrection) {
  // [1, 2, 3, 4]: mean 2.5, Σ(x - mean)² = 5
  Tensor v = f64({1.0, 2.0, 3.0, 4.0});
  EXPECT_DOUBLE_EQ(var(v).item<double>(), 5.0 / 3);
  EXPECT_DOUBLE_EQ(var(v, {}, /*correction=*/0).item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(std(v).item<double>(), std::sqrt(5.0 / 3));
  EXPECT_DOUBLE_EQ(v.std({}, 0).item<double>(), std::sqrt(1.25));
  Tensor x = x23();
  // rows: [1,5,3] mean 3, Σd² = 8 -> 4; [4,2,6] mean 4, Σd² = 8 -> 4
  EXPECT_THAT(vals(var(x, {1})), ElementsAre(4, 4));
  // columns: [1,4] -> 4.5, [5,2] -> 4.5, [3,6] -> 4.5
  EXPECT_THAT(vals(x.var({0}, 1, true)), ElementsAre(4.5, 4.5, 4.5));
  EXPECT_EQ(x.var({0}, 1, true).sizes(), (Shape{1, 3}));
  EXPECT_EQ(var(tensor({1, 2, 3})).dtype(), kFloat32);  // integer input -> float
  EXPECT_FLOAT_EQ(var(tensor({1, 2, 3})).item<float>(), 1.0f);
}

TEST(Reduce, LogsumexpIsStable) {
  Tensor x = f64({{0.0, std::log(3.0)}, {1000.0, 1000.0}});
  // row 0: log(1 + 3) = log 4; row 1: 1000 + log 2 (a naive exp would overflow)
  EXPECT_THAT(vals(logsumexp(x, {1})), Near({std::log(4.0), 1000 + std::log(2.0)}, 1e-12));
  EXPECT_EQ(logsumexp(x, {1}, true).sizes(), (Shape{2, 1}));
  EXPECT_NEAR(x.logsumexp({0, 1}).item<double>(), 1000 + std::log(2.0), 1e-12);
  Tensor ninf = f64({-INFINITY, -INFINITY});
  EXPECT_EQ(logsumexp(ninf, {0}).item<double>(), -INFINITY);  // not NaN
}

TEST(Reduce, Norm) {
  EXPECT_DOUBLE_EQ(norm(f64({3.0, -4.0})).item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(norm(f64({3.0, -4.0}), 1).item<double>(), 7.0);
  EXPECT_DOUBLE_EQ(norm(f64({3.0, -4.0}), INFINITY).item<double>(), 4.0);
}

}  // namespace
}  // namespace gradlab
