// Views share storage and the version counter with their base; every in-place op bumps it.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::ivals;
using checks::vals;
using ::testing::ElementsAre;

TEST(Views, EveryViewOpSharesStorage) {
  Tensor x = arange(24, kFloat32).reshape({2, 3, 4});
  const std::vector<std::pair<const char*, Tensor>> views = {
      {"view", x.view({6, 4})},
      {"reshape", x.reshape({4, 6})},
      {"flatten", x.flatten()},
      {"transpose", x.transpose(0, 2)},
      {"permute", x.permute({2, 0, 1})},
      {"slice", x.slice(2, 1, 3)},
      {"narrow", x.narrow(1, 1, 2)},
      {"select", x.select(1, 2)},
      {"operator[]", x[1]},
      {"expand", x[0][0].unsqueeze(0).expand({5, 4})},
      {"squeeze", x.unsqueeze(0).squeeze()},
      {"unsqueeze", x.unsqueeze(1)},
      {"detach", x.detach()},
  };
  for (const auto& [name, v] : views) {
    EXPECT_TRUE(v.is_same_storage(x)) << name;
    EXPECT_EQ(v.version(), x.version()) << name;
  }
}

TEST(Views, WriteThroughAViewIsSeenByTheBaseAndBumpsTheSharedVersion) {
  Tensor x = zeros({2, 3});
  Tensor row = x[1];
  Tensor col = x.select(1, 2);
  const uint32_t v0 = x.version();
  row.fill_(5);
  EXPECT_THAT(vals(x), ElementsAre(0, 0, 0, 5, 5, 5));
  EXPECT_EQ(x.version(), v0 + 1);
  EXPECT_EQ(col.version(), v0 + 1);  // a sibling view sees the same counter
  col.add_(1);
  EXPECT_THAT(vals(x), ElementsAre(0, 0, 1, 5, 5, 6));
  Tensor t = x.t();
  t.select(0, 0).mul_(10);  // column 0 of x
  EXPECT_THAT(vals(x), ElementsAre(0, 0, 1, 50, 5, 6));
  EXPECT_EQ(x.version(), v0 + 3);
}

TEST(Views, SliceWithStepAndOffsets) {
  Tensor x = arange(10);
  Tensor s = x.slice(0, 1, 8, 3);  // 1, 4, 7
  EXPECT_THAT(ivals(s), ElementsAre(1, 4, 7));
  EXPECT_EQ(s.stride(0), 3);
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_THAT(ivals(x.slice(0, -3, 100)), ElementsAre(7, 8, 9));  // bounds clamp, negatives wrap
  EXPECT_EQ(x.slice(0, 5, 2).numel(), 0);
  s.fill_(-1);
  EXPECT_THAT(ivals(x), ElementsAre(0, -1, 2, 3, -1, 5, 6, -1, 8, 9));
}

TEST(Views, ExpandHasStrideZeroAndReshapeOfNonContiguousCopies) {
  Tensor x = tensor({1.0, 2.0, 3.0});
  Tensor e = x.expand({2, 3});
  EXPECT_EQ(e.strides(), (Strides{0, 1}));
  EXPECT_THAT(vals(e), ElementsAre(1, 2, 3, 1, 2, 3));
  Tensor m = arange(6, kFloat32).reshape({2, 3}).t();  // non-contiguous
  Tensor r = m.reshape({6});
  EXPECT_FALSE(r.is_same_storage(m));  // a copy: no strides can express it
  EXPECT_THAT(vals(r), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_TRUE(m.reshape({3, 2}).is_same_storage(m));  // same shape: the tensor itself
}

TEST(Views, ViewOfATransposeThatSplitsADimStaysAView) {
  // [4, 6] transposed is [6, 4] with strides [1, 6]; splitting dim 0 into [2, 3] is expressible.
  Tensor x = arange(24, kFloat32).reshape({4, 6});
  Tensor v = x.t().view({2, 3, 4});
  EXPECT_TRUE(v.is_same_storage(x));
  EXPECT_EQ(v.strides(), (Strides{3, 1, 6}));
  EXPECT_DOUBLE_EQ(v[1][2][3].item<double>(), x[3][5].item<double>());
}

TEST(VersionCounter, EveryInPlaceOpBumpsIt) {
  Tensor x = zeros({2, 2});
  Tensor mask = tensor({{true, false}, {false, true}});
  struct Case {
    const char* name;
    std::function<void(Tensor&)> op;
  };
  const std::vector<Case> cases = {
      {"add_", [](Tensor& t) { t.add_(ones({2, 2})); }},
      {"add_ scalar", [](Tensor& t) { t.add_(1.0); }},
      {"sub_", [](Tensor& t) { t.sub_(ones({2}), 2.0); }},
      {"mul_", [](Tensor& t) { t.mul_(3.0); }},
      {"div_", [](Tensor& t) { t.div_(2.0); }},
      {"fill_", [](Tensor& t) { t.fill_(4.0); }},
      {"zero_", [](Tensor& t) { t.zero_(); }},
      {"copy_", [](Tensor& t) { t.copy_(ones({2, 2}, kFloat64)); }},
      {"clamp_", [](Tensor& t) { t.clamp_(0.0, 0.5); }},
      {"masked_fill_", [&](Tensor& t) { t.masked_fill_(mask, 7.0); }},
      {"index_put_ mask", [&](Tensor& t) { t.index_put_(mask, 2.0); }},
      {"index_put_ rows", [](Tensor& t) { t.index_put_(tensor({1}), tensor({8.0, 9.0})); }},
      {"operator+=", [](Tensor& t) { t += 1; }},
      {"operator-=", [](Tensor& t) { t -= 1; }},
      {"operator*=", [](Tensor& t) { t *= 2; }},
      {"operator/=", [](Tensor& t) { t /= 2; }},
  };
  uint32_t v = x.version();
  for (const auto& c : cases) {
    Tensor view = x.view({4});
    Tensor alias = x;
    c.op(alias);
    EXPECT_EQ(x.version(), v + 1) << c.name;
    EXPECT_EQ(view.version(), v + 1) << c.name;
    v = x.version();
  }
}

TEST(VersionCounter, InPlaceOpsComputeTheRightValues) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0});
  x.add_(tensor({1.0, 1.0, 1.0, 1.0}), 2.0);  // x += 2 * 1
  EXPECT_THAT(vals(x), ElementsAre(3, 4, 5, 6));
  x.sub_(1.0);
  EXPECT_THAT(vals(x), ElementsAre(2, 3, 4, 5));
  x.mul_(tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_THAT(vals(x), ElementsAre(2, 6, 12, 20));
  x.div_(2.0);
  EXPECT_THAT(vals(x), ElementsAre(1, 3, 6, 10));
  x.clamp_(2.0, 8.0);
  EXPECT_THAT(vals(x), ElementsAre(2, 3, 6, 8));
  x.masked_fill_(x > 5.0, 0.0);
  EXPECT_THAT(vals(x), ElementsAre(2, 3, 0, 0));
  x.index_put_(tensor({3, 0}), 9.0);
  EXPECT_THAT(vals(x), ElementsAre(9, 3, 0, 9));
  x.index_put_(x < 5.0, tensor({-1.0}));
  EXPECT_THAT(vals(x), ElementsAre(9, -1, -1, 9));
  Tensor m = zeros({2, 3});
  m.index_put_(tensor({1}), tensor({1.0, 2.0, 3.0}));
  EXPECT_THAT(vals(m), ElementsAre(0, 0, 0, 1, 2, 3));
  m.copy_(tensor({7.0, 8.0, 9.0}));  // broadcast source
  EXPECT_THAT(vals(m), ElementsAre(7, 8, 9, 7, 8, 9));
  Tensor sq = arange(4, kFloat32).reshape({2, 2});
  sq.copy_(sq.t());  // overlapping source and destination
  EXPECT_THAT(vals(sq), ElementsAre(0, 2, 1, 3));
}

TEST(VersionCounter, OutOfPlaceOpsAndCopiesDoNotBumpIt) {
  Tensor x = ones({3});
  const uint32_t v = x.version();
  Tensor y = x + 1;
  Tensor c = x.clone();
  c.add_(1);
  Tensor d = x.to(kFloat64);
  d.add_(1);
  EXPECT_EQ(x.version(), v);
  EXPECT_THAT(vals(x), ElementsAre(1, 1, 1));
}

}  // namespace
}  // namespace gradlab
