// Movement ops: reshape/view, transpose/permute, slice/narrow/select, expand, squeeze/unsqueeze,
// flatten, cat, stack.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::ivals;
using checks::vals;
using ::testing::ElementsAre;

// m = [[0, 1, 2], [3, 4, 5]]
Tensor m() { return arange(6).reshape({2, 3}); }

TEST(Shape, ReshapeViewFlatten) {
  EXPECT_EQ(m().reshape({3, 2}).sizes(), (Shape{3, 2}));
  EXPECT_THAT(ivals(m().reshape({3, -1})), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(m().reshape({-1}).sizes(), (Shape{6}));
  EXPECT_EQ(m().view({1, 6, 1}).sizes(), (Shape{1, 6, 1}));
  EXPECT_EQ(arange(24).reshape({2, 3, 4}).flatten(1).sizes(), (Shape{2, 12}));
  EXPECT_EQ(arange(24).reshape({2, 3, 4}).flatten(0, 1).sizes(), (Shape{6, 4}));
  EXPECT_EQ(arange(24).reshape({2, 3, 4}).flatten().sizes(), (Shape{24}));
  EXPECT_EQ(tensor(1.0).reshape({1, 1}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(zeros({0, 4}).reshape({-1, 2}).sizes(), (Shape{0, 2}));
}

TEST(Shape, TransposePermute) {
  Tensor t = m().t();
  EXPECT_EQ(t.sizes(), (Shape{3, 2}));
  EXPECT_THAT(ivals(t), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(ivals(m().transpose(-1, 0)), ElementsAre(0, 3, 1, 4, 2, 5));
  Tensor x = arange(24).reshape({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{4, 2, 3}));
  EXPECT_EQ(p[3][1][2].item<int64_t>(), x[1][2][3].item<int64_t>());
  EXPECT_EQ(permute(x, {-1, -3, -2}).sizes(), (Shape{4, 2, 3}));
  EXPECT_EQ(tensor({1.0, 2.0}).t().sizes(), (Shape{2}));  // t() of a vector is itself
}

TEST(Shape, SliceNarrowSelect) {
  Tensor x = m();
  EXPECT_THAT(ivals(x.slice(1, 1, 3)), ElementsAre(1, 2, 4, 5));
  EXPECT_THAT(ivals(slice(x, 1, 0, 3, 2)), ElementsAre(0, 2, 3, 5));
  EXPECT_THAT(ivals(x.narrow(1, 1, 1)), ElementsAre(1, 4));
  EXPECT_THAT(ivals(narrow(x, 0, -1, 1)), ElementsAre(3, 4, 5));
  EXPECT_THAT(ivals(x.select(1, -1)), ElementsAre(2, 5));
  EXPECT_EQ(x.select(0, 1).sizes(), (Shape{3}));
  EXPECT_EQ(x[1][2].item<int64_t>(), 5);
}

TEST(Shape, ExpandSqueezeUnsqueeze) {
  Tensor c = tensor({1.0, 2.0}).unsqueeze(1);  // [2, 1]
  EXPECT_EQ(c.sizes(), (Shape{2, 1}));
  Tensor e = c.expand({3, 2, 4});
  EXPECT_EQ(e.sizes(), (Shape{3, 2, 4}));
  EXPECT_EQ(e[2][1][3].item<double>(), 2);
  EXPECT_EQ(c.expand({-1, 5}).sizes(), (Shape{2, 5}));
  EXPECT_EQ(c.expand_as(zeros({2, 7})).sizes(), (Shape{2, 7}));
  Tensor z = zeros({1, 3, 1, 2});
  EXPECT_EQ(z.squeeze().sizes(), (Shape{3, 2}));
  EXPECT_EQ(z.squeeze(2).sizes(), (Shape{1, 3, 2}));
  EXPECT_EQ(z.squeeze(1).sizes(), (Shape{1, 3, 1, 2}));  // not size 1: unchanged
  EXPECT_EQ(z.unsqueeze(-1).sizes(), (Shape{1, 3, 1, 2, 1}));
  EXPECT_EQ(z.unsqueeze(0).sizes(), (Shape{1, 1, 3, 1, 2}));
  EXPECT_EQ(tensor(3.0).unsqueeze(0).sizes(), (Shape{1}));
}

TEST(Shape, SumToInvertsBroadcasting) {
  Tensor g = ones({2, 3, 4});
  EXPECT_THAT(vals(sum_to(g, {3, 1})), ElementsAre(8, 8, 8));
  EXPECT_EQ(sum_to(g, {3, 1}).sizes(), (Shape{3, 1}));
  EXPECT_EQ(sum_to(g, {}).item<double>(), 24);
}

TEST(Shape, CatAndStack) {
  Tensor a = m(), b = arange(6, 9).reshape({1, 3});
  Tensor c0 = cat({a, b}, 0);
  EXPECT_EQ(c0.sizes(), (Shape{3, 3}));
  EXPECT_THAT(ivals(c0), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  Tensor c1 = cat({a, a.slice(1, 0, 1)}, -1);
  EXPECT_EQ(c1.sizes(), (Shape{2, 4}));
  EXPECT_THAT(ivals(c1), ElementsAre(0, 1, 2, 0, 3, 4, 5, 3));
  EXPECT_EQ(cat({tensor({1.0}), f64({2.0})}).dtype(), kFloat64);  // promotes
  EXPECT_THAT(vals(cat({zeros({0}), tensor({1.0, 2.0})})), ElementsAre(1, 2));  // 1-D empty skipped
  Tensor s = stack({tensor({1, 2}), tensor({3, 4}), tensor({5, 6})});
  EXPECT_EQ(s.sizes(), (Shape{3, 2}));
  EXPECT_THAT(ivals(s), ElementsAre(1, 2, 3, 4, 5, 6));
  Tensor s1 = stack({tensor({1, 2}), tensor({3, 4})}, 1);
  EXPECT_EQ(s1.sizes(), (Shape{2, 2}));
  EXPECT_THAT(ivals(s1), ElementsAre(1, 3, 2, 4));
  EXPECT_EQ(stack({tensor({1, 2}), tensor({3, 4})}, -1).sizes(), (Shape{2, 2}));
}

}  // namespace
}  // namespace gradlab
