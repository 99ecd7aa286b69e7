// In-place ops and autograd: the leaf rule, saved tensors modified before backward (with the
// call site of the write), x = x + 1 versus x += 1, and history rebased onto in-place results.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::vals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(InPlaceLeaf, ModifyingALeafThatRequiresGradIsAnError) {
  Tensor x = f64({1.0, 2.0}, true);
  const char* wording = "a leaf Variable that requires grad is being used in an in-place operation";
  EXPECT_THROW_MSG(x.add_(1), AutogradError, "add_:", wording, "[2] float64", "NoGradGuard");
  EXPECT_THROW_MSG(x += 1, AutogradError, "add_:", wording);
  EXPECT_THROW_MSG(x -= 1, AutogradError, "sub_:", wording);
  EXPECT_THROW_MSG(x *= 2, AutogradError, "mul_:", wording);
  EXPECT_THROW_MSG(x /= 2, AutogradError, "div_:", wording);
  EXPECT_THROW_MSG(x.fill_(0), AutogradError, "fill_:", wording);
  EXPECT_THROW_MSG(x.zero_(), AutogradError, "fill_:", wording);
  EXPECT_THROW_MSG(x.copy_(f64({0.0, 0.0})), AutogradError, "copy_:", wording);
  EXPECT_THROW_MSG(x.clamp_(0.0, 1.0), AutogradError, "clamp_:", wording);
  EXPECT_THROW_MSG(x.masked_fill_(x > 1, 0.0), AutogradError, "masked_fill_:", wording);
  EXPECT_THROW_MSG(x.index_put_(tensor({0}), 5.0), AutogradError, "index_put_:", wording);
  EXPECT_THROW_MSG(x[0].fill_(0), AutogradError, "fill_:", "a view of a leaf Variable that requires grad");
  EXPECT_THAT(vals(x), ElementsAre(1, 2));  // nothing was written
  EXPECT_EQ(x.version(), 0u);
}

TEST(InPlaceLeaf, AllowedUnderNoGradGuard) {
  Tensor x = f64({1.0, 2.0}, true);
  {
    NoGradGuard ng;
    x.mul_(2);
    x[0].fill_(-1);
  }
  EXPECT_THAT(vals(x), ElementsAre(-1, 4));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_EQ(x.version(), 2u);
}

TEST(SavedTensorModified, BackwardFailsWithVersionsAndTheWriteSite) {
  Tensor a = f64({1.0, 2.0});  // does not require grad, so writing to it is allowed
  Tensor w = f64({3.0, 4.0}, true);
  Tensor y = (a * w).sum();    // MulBackward0 saves a (at version 0) to compute dw
  const int line = __LINE__ + 1;
  a.add_(1);                   // a is now at version 1
  EXPECT_THROW_MSG(y.backward(), AutogradError,
                   "one of the variables needed for gradient computation has been modified by an inplace "
                   "operation: [float64 tensor [2]]",
                   "is at version 1; expected version 0 instead",
                   "It was modified at checks/autograd/inplace_test.cpp:" + std::to_string(line),
                   "needed by MulBackward0", "clone()");
}

TEST(SavedTensorModified, AnOperatorWriteIsNamedAtTheUsersLine) {
  Tensor a = f64({1.0, 2.0});
  Tensor w = f64({3.0, 4.0}, true);
  Tensor y = (w * a).sum();
  const int line = __LINE__ + 1;
  a *= 3;  // the site comes from the operand's implicit conversion, at this line
  EXPECT_THROW_MSG(y.backward(), AutogradError, "is at version 1; expected version 0",
                   "inplace_test.cpp:" + std::to_string(line));
}

TEST(SavedTensorModified, ThroughAViewAndOnASavedOutput) {
  Tensor a = f64({1.0, 2.0});
  Tensor w = f64({3.0, 4.0}, true);
  Tensor y = (a * w).sum();
  a[1].mul_(2);  // a view shares the version counter
  a[0].mul_(2);
  EXPECT_THROW_MSG(y.backward(), AutogradError, "is at version 2; expected version 0");

  Tensor x = f64({0.0, 1.0}, true);
  Tensor e = x.exp();  // ExpBackward0 saves its output e
  const int line = __LINE__ + 1;
  e.add_(1);
  EXPECT_THROW_MSG(e.sum().backward(), AutogradError, "which is output 0 of ExpBackward0",
                   "is at version 1; expected version 0",
                   "inplace_test.cpp:" + std::to_string(line));
}

TEST(SavedTensorModified, UnsavedTensorsMayBeModified) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor h = x * 2;  // MulBackward0 with a number saves nothing that h's write could touch
  Tensor y = (h + 1).sum();
  h.add_(5);  // fine: AddBackward0 saves nothing
  y.backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 2));
}

TEST(PlusEquals, XEqualsXPlusOneMakesANewTensor) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor h = x * 2;
  Tensor old = h;  // a second handle to the same tensor
  h = h + 1;
  EXPECT_FALSE(h.is_same_storage(old));
  EXPECT_EQ(old.version(), 0u);
  EXPECT_EQ(old.grad_fn()->name(), "MulBackward0");
  EXPECT_EQ(h.grad_fn()->name(), "AddBackward0");
  EXPECT_THAT(vals(old), ElementsAre(2, 4));
  EXPECT_THAT(vals(h), ElementsAre(3, 5));
}

TEST(PlusEquals, XPlusEqualsOneWritesInPlaceAndRebasesTheGraph) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor h = x * 2;
  Tensor old = h;
  h += 1;
  EXPECT_TRUE(h.is_same_storage(old));
  EXPECT_EQ(old.version(), 1u);  // every handle sees the write
  EXPECT_THAT(vals(old), ElementsAre(3, 5));
  EXPECT_EQ(old.grad_fn()->name(), "AddBackward0");  // the history moved to the in-place result
  EXPECT_FALSE(h.is_leaf());
  (h * h).sum().backward();  // d/dx (2x + 1)² = 4 (2x + 1)
  EXPECT_THAT(vals(x.grad()), ElementsAre(12, 20));
}

TEST(Rebase, InPlaceOnNonLeavesGivesCorrectGradients) {
  auto grad_of = [](const std::function<Tensor(const Tensor&)>& f, std::initializer_list<double> v) {
    Tensor x = f64(v, true);
    f(x).sum().backward();
    return vals(x.grad());
  };
  // y = x²; y *= 3  ->  6x
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * x; y.mul_(3); return y; }, {1.0, -2.0}),
              ElementsAre(6, -12));
  // y = 2x; y += x  ->  3
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.add_(x); return y; }, {1.0, 5.0}),
              ElementsAre(3, 3));
  // y = 2x; y -= x * 0.5 (alpha 2)  ->  1
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.sub_(x * 0.5, 2); return y; }, {1.0}),
              ElementsAre(1));
  // y = x + 1; y /= x  ->  d/dx (1 + 1/x) = -1/x²
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x + 1; y.div_(x); return y; }, {2.0}),
              ElementsAre(-0.25));
  // y = 3x; y.copy_(x²)  ->  2x (the old value no longer matters)
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 3; y.copy_(x * x); return y; }, {1.5}),
              ElementsAre(3));
  // y = 2x; y.clamp_(-1, 1)  ->  2 inside, 0 outside
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.clamp_(-1.0, 1.0); return y; }, {0.25, 3.0}),
              ElementsAre(2, 0));
  // y = 2x; y.masked_fill_(y > 3, 0)  ->  0 where filled
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.masked_fill_(y > 3, 0.0); return y; }, {1.0, 2.0}),
              ElementsAre(2, 0));
  // y = 2x; y.zero_()  ->  0 (the result still depends on x, with gradient 0, as in PyTorch)
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.zero_(); return y; }, {1.0, 2.0}),
              ElementsAre(0, 0));
  // y = 2x; y.fill_(7) then y * x  ->  7
  EXPECT_THAT(grad_of([](const Tensor& x) { Tensor y = x * 2; y.fill_(7.0); return y * x; }, {1.0}),
              ElementsAre(7));
}

TEST(Rebase, OverwritingAnInfiniteValueGivesExactlyTheNewValue) {
  Tensor x = f64({0.0, 1.0}, true);
  Tensor y = x.log();  // [-inf, 0]
  y.copy_(f64({5.0, 6.0}));
  EXPECT_THAT(vals(y), ElementsAre(5, 6));  // not NaN (-inf * 0 would be)
  Tensor z = x.log();
  z.fill_(3.0);
  EXPECT_THAT(vals(z), ElementsAre(3, 3));
  EXPECT_EQ(z.grad_fn()->name(), "WhereBackward0");
}

TEST(Rebase, InPlaceWithAGradRequiringOperandOnAPlainTensor) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor z = zeros({2}, kFloat64);
  z.add_(x * x);  // z joins the graph
  EXPECT_TRUE(z.requires_grad());
  EXPECT_FALSE(z.is_leaf());
  EXPECT_EQ(z.grad_fn()->name(), "AddBackward0");
  Tensor v = f64({10.0, 20.0}, true);
  Tensor m = zeros({2}, kFloat64);
  m.index_put_(tensor({false, true}), v);  // m[1] = v[1]
  EXPECT_THAT(vals(m), ElementsAre(0, 20));
  (z + m).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 4));
  EXPECT_THAT(vals(v.grad()), ElementsAre(0, 1));
}

TEST(Rebase, IndexPutRowsWithGradient) {
  Tensor v = f64({{1.0, 2.0}}, true);
  Tensor m = zeros({3, 2}, kFloat64);
  m.index_put_(tensor({2}), v);
  EXPECT_THAT(vals(m), ElementsAre(0, 0, 0, 0, 1, 2));
  (m * f64({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})).sum().backward();
  EXPECT_THAT(vals(v.grad()), ElementsAre(5, 6));
}

}  // namespace
}  // namespace gradlab
