// LibTorch parity of semantics (issue 16): in-place writes through views under autograd
// (CopySlices), stale views, writes into expanded tensors, std of a constant, matrix products of
// mixed dtypes, index_put_ with repeated rows, node names, and the LibTorch-style overloads.
// Gradients by gradcheck / gradgradcheck in float64; values against LibTorch are in the corpus.

#include <gradlab/testing/gradcheck.hpp>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::vals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const TensorOptions kF64 = TensorOptions().dtype(kFloat64);

Tensor leaf(const Shape& s, uint64_t seed) {
  Generator g(seed);
  return randn(s, kF64, &g).requires_grad_(true);
}

void expect_gradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& in) {
  testing::GradcheckReport r = testing::gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.text();
  testing::GradcheckReport rr = testing::gradgradcheck(fn, in);
  EXPECT_TRUE(rr.ok) << rr.text();
}

// ---- in place through a view -------------------------------------------------------------------

TEST(InPlaceOnView, BaseIsRebasedThroughCopySlices) {
  Tensor x = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, true);
  Tensor y = x * 1;
  Tensor v = y.narrow(0, 0, 1);
  v.mul_(2);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward0");
  EXPECT_EQ(y.version(), 1u);  // one storage, one version counter
  EXPECT_EQ(v.version(), 1u);
  EXPECT_THAT(vals(y), ElementsAre(2, 4, 6, 4, 5, 6));
  (y * y).sum().backward();  // d/dx Σ y² = 2 y dy/dx: 8x on row 0, 2x on row 1
  EXPECT_THAT(vals(x.grad()), ElementsAre(8, 16, 24, 8, 10, 12));
}

TEST(InPlaceOnView, GradcheckAndGradgradcheck) {
  // a write through a narrow, a strided select, a view of a view, and one from another input
  expect_gradcheck(
      [](const TensorList& in) {
        Tensor y = in[0] * 1;
        y.narrow(0, 1, 2).mul_(in[1]);
        return y.sin();
      },
      {leaf({3, 2}, 1), leaf({2, 2}, 2)});
  expect_gradcheck(
      [](const TensorList& in) {
        Tensor y = in[0].exp() * 1;
        Tensor col = y.select(1, 1);  // strided
        col.add_(in[1] * in[1]);
        return y * col.unsqueeze(1);  // the view itself, after the write
      },
      {leaf({3, 2}, 3), leaf({3}, 4)});
  expect_gradcheck(
      [](const TensorList& in) {
        Tensor y = in[0] * 2;
        y.transpose(0, 1).narrow(0, 0, 1).select(0, 0).copy_(in[1].cos());  // view of a view
        return y;
      },
      {leaf({2, 3}, 5), leaf({2}, 6)});
  expect_gradcheck(
      [](const TensorList& in) {
        Tensor y = zeros({2, 3}, kF64);  // needs no grad itself
        y.select(0, 1).copy_(in[0]);
        y.narrow(1, 0, 1).mul_(3);
        return y * in[0];
      },
      {leaf({3}, 7)});
}

TEST(InPlaceOnView, ASavedBaseWrittenThroughAViewFailsBackward) {
  Tensor x = f64({0.5, 1.0}, true);
  Tensor y = x.exp();  // ExpBackward0 saves y
  y.narrow(0, 0, 1).mul_(2);
  EXPECT_THROW_MSG(y.sum().backward(), AutogradError, "output 0 of ExpBackward0",
                   "is at version 1; expected version 0");
}

TEST(InPlaceOnView, AViewTakenBeforeTheWriteIsRefused) {
  // PyTorch regenerates such a view's grad_fn; gradlab refuses instead of a silently wrong grad.
  Tensor x = f64({1.0, 2.0}, true);
  Tensor y = x * 1;
  Tensor before = y.select(0, 0);
  y.mul_(2);
  EXPECT_THROW_MSG(before * 1, AutogradError, "a view was used after an in-place operation on its base",
                   "hint: take the view again after the in-place write");
  Tensor after = y.select(0, 0);  // fine: taken after the write
  (after * 1).backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 0));
  // and through a sibling view
  Tensor z = x * 1;
  Tensor a = z.select(0, 0), b = z.select(0, 1);
  b.mul_(3);
  EXPECT_THROW_MSG(a * 1, AutogradError, "a view was used after an in-place operation");
  Tensor ok = b * 1;  // the written view itself is current
  EXPECT_EQ(ok.grad_fn()->name(), "MulBackward0");
}

TEST(InPlaceOnView, ViewOfALeafThatRequiresGradIsStillRefused) {
  Tensor x = f64({1.0, 2.0}, true);
  EXPECT_THROW_MSG(x.select(0, 0).mul_(2), AutogradError, "a view of a leaf Variable that requires grad");
}

TEST(InPlaceExpanded, WritesIntoExpandedTensorsAreRefused) {
  // already refused by ops/inplace.cpp (PyTorch's has_internal_overlap): checked here for parity
  Tensor e = zeros({1, 3}, kF64).expand({2, 3});
  EXPECT_THROW_MSG(e.add_(1), Error, "add_:", "more than one element of the written-to tensor refers to a single memory location");
  EXPECT_THROW_MSG(e.fill_(1), Error, "fill_:", "single memory location");
  EXPECT_THAT(vals(e), ElementsAre(0, 0, 0, 0, 0, 0));
}

// ---- std, var, mean as ops ----------------------------------------------------------------------

TEST(Reductions, NodeNamesMatchPyTorch) {
  Tensor x = leaf({2, 3}, 8);
  EXPECT_EQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(x.mean(1).grad_fn()->name(), "MeanBackward1");
  EXPECT_EQ(x.var().grad_fn()->name(), "VarBackward0");
  EXPECT_EQ(x.std(0, true, true).grad_fn()->name(), "StdBackward0");
  EXPECT_EQ(x.sum(1).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(matmul(x, x.t()).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(x.mm(x.t()).grad_fn()->name(), "MmBackward0");
}

TEST(Reductions, StdOfAConstantHasGradientZero) {
  Tensor x = f64({3.0, 3.0, 3.0}, true);
  Tensor s = x.std();
  s.backward();
  EXPECT_EQ(s.item<double>(), 0.0);
  EXPECT_THAT(vals(x.grad()), ElementsAre(0, 0, 0));  // PyTorch: 0 (the chain rule alone: NaN)
  Tensor y = f64({{1.0, 1.0}, {2.0, 5.0}}, true);
  y.std(1).sum().backward();  // one constant row, one not
  EXPECT_THAT(vals(y.grad()), ElementsAre(0, 0, -std::sqrt(0.5), std::sqrt(0.5)));
}

TEST(Reductions, GradcheckOfMeanVarStdOverloads) {
  expect_gradcheck([](const TensorList& in) { return in[0].mean(-1, true); }, {leaf({2, 3}, 9)});
  expect_gradcheck([](const TensorList& in) { return in[0].mean(); }, {leaf({2, 3}, 10)});
  expect_gradcheck([](const TensorList& in) { return in[0].var(1, true, true); }, {leaf({2, 3}, 11)});
  expect_gradcheck([](const TensorList& in) { return in[0].var(false); }, {leaf({2, 3}, 12)});
  expect_gradcheck([](const TensorList& in) { return in[0].std(0, false, true); }, {leaf({3, 2}, 13)});
  expect_gradcheck([](const TensorList& in) { return gradlab::std(in[0], Dims{0, 1}, 1, false); }, {leaf({2, 3}, 14)});
  expect_gradcheck([](const TensorList& in) { return in[0].norm(2, 1); }, {leaf({2, 3}, 15)});
  expect_gradcheck([](const TensorList& in) { return logsumexp(in[0], 1, true); }, {leaf({2, 3}, 16)});
  expect_gradcheck([](const TensorList& in) { return in[0].mm(in[1]); }, {leaf({2, 3}, 17), leaf({3, 4}, 18)});
}

TEST(Reductions, DimListAndCorrectionOverloadsStayUnambiguous) {
  Tensor x = f64({{1.0, 2.0}, {3.0, 5.0}});
  // var(x, {0}, correction) is the dim-list form, var(x, 0, unbiased) the LibTorch one
  EXPECT_THAT(vals(var(x, {0}, 0)), ElementsAre(1, 2.25));
  EXPECT_THAT(vals(var(x, 0, false)), ElementsAre(1, 2.25));
  EXPECT_THAT(vals(x.var(1, true, true)), ElementsAre(0.5, 2));
  EXPECT_EQ(x.var(1, true, true).sizes(), (Shape{2, 1}));
  EXPECT_DOUBLE_EQ(x.var(false).item<double>(), x.var(Dims{}, 0).item<double>());  // not "dim 0"
  EXPECT_THAT(vals(var(x, {1})), ElementsAre(0.5, 2));  // {1} is a dim list, not unbiased = true
  EXPECT_THAT(vals(x.std({1})), ElementsAre(std::sqrt(0.5), std::sqrt(2.0)));
  EXPECT_EQ(x.sum(ScalarType::Float64).dtype(), kFloat64);
  EXPECT_EQ(x.sum(1).sizes(), (Shape{2}));
}

// ---- matrix products, index_put_, item, all / any -------------------------------------------

TEST(MatrixProducts, MixedDtypesThrowLikeLibTorch) {
  Tensor a = ones({2, 3}, kF64), b = ones({3, 2});
  EXPECT_THROW_MSG(matmul(a, b), DTypeError, "matmul:", "expected both operands to have the same dtype",
                   "float64 and float32");
  EXPECT_THROW_MSG(mm(a, b), DTypeError, "mm:");
  EXPECT_THROW_MSG(bmm(a.unsqueeze(0), b.unsqueeze(0)), DTypeError, "bmm:");
  EXPECT_THROW_MSG(matmul(a.unsqueeze(0), b), DTypeError, "matmul:");
  EXPECT_NO_THROW(matmul(a, b.to(kFloat64)));
}

TEST(IndexPut, RepeatedRowsLastWriteWinsAndLosersGetNoGradient) {
  Tensor v = f64({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, true);
  Tensor y = zeros({3, 2}, kF64);
  y.index_put_(tensor({0, 0, 2}), v);
  EXPECT_THAT(vals(y), ElementsAre(3, 4, 0, 0, 5, 6));  // row 0: the last of its two writes
  y.sum().backward();
  // the true derivative (PyTorch gives the overwritten write gradient 1 as well)
  EXPECT_THAT(vals(v.grad()), ElementsAre(0, 0, 1, 1, 1, 1));
  testing::GradcheckReport r = testing::gradcheck(
      [](const TensorList& in) {
        Tensor z = in[1] * 1;
        z.index_put_(tensor({1, 1, 0}), in[0]);
        return z;
      },
      {leaf({3, 2}, 19), leaf({2, 2}, 20)});
  EXPECT_TRUE(r.ok) << r.text();
}

TEST(IndexPut, AccumulateAddsEveryWrite) {
  Tensor y = zeros({3}, kF64);
  y.index_put_(tensor({0, 0, 2}), f64({1.0, 2.0, 5.0}), /*accumulate=*/true);
  EXPECT_THAT(vals(y), ElementsAre(3, 0, 5));
  Tensor m = ones({3}, kF64);
  m.index_put_(tensor({true, false, true}), f64({1.0, 2.0, 3.0}), true);
  EXPECT_THAT(vals(m), ElementsAre(2, 1, 4));
}

TEST(Overloads, ItemScalarAllAnyFactoriesLosses) {
  Tensor x = f64({{1.0, -2.0}, {0.0, 4.0}});
  EXPECT_DOUBLE_EQ(x.sum().item().toDouble(), 3.0);
  EXPECT_EQ(x.sum().to(kInt64).item().toLong(), 3);
  EXPECT_TRUE(x.sum().item().isFloatingPoint());
  EXPECT_TRUE((x > -5).all().item<bool>());
  EXPECT_FALSE(x.all().item<bool>());  // a zero
  EXPECT_TRUE(x.any().item<bool>());
  EXPECT_THAT(checks::ivals(x.all(1)), ElementsAre(1, 0));
  EXPECT_THAT(checks::ivals(x.eq(1.0)), ElementsAre(1, 0, 0, 0));
  EXPECT_EQ(arange(0, 6, kF64).dtype(), kFloat64);
  EXPECT_EQ(eye(3, kF64).sizes(), (Shape{3, 3}));
  EXPECT_EQ(randn(3, kF64).sizes(), (Shape{3}));
  EXPECT_EQ(zeros({}).dim(), 0);  // a braced {} is still the 0-d shape, not [0]
  EXPECT_EQ(tensor(std::vector<double>{1, 2}).dtype(), kFloat32);
  EXPECT_EQ(tensor(std::vector<double>{1, 2}, kF64).dtype(), kFloat64);
  Tensor a = f64({1.0, 3.0}), b = f64({0.0, 0.0});
  EXPECT_DOUBLE_EQ(mse_loss(a, b).item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(mse_loss(a, b, 2).item<double>(), 10.0);
  EXPECT_DOUBLE_EQ(smooth_l1_loss(a, b).item<double>(), (0.5 + 2.5) / 2);
  EXPECT_THROW_MSG(mse_loss(a, b, 3), ValueError, "mse_loss:", "unknown reduction");
  // weight multiplies each element's loss: a = [1, 3], targets 0, so loss_i = w_i softplus(a_i).
  EXPECT_NEAR(binary_cross_entropy_with_logits(a, b, a).item<double>(),
              (1 * std::log1p(std::exp(1.0)) + 3 * std::log1p(std::exp(3.0))) / 2, 1e-12);
  EXPECT_THROW_MSG(binary_cross_entropy_with_logits(a, b, f64({1.0, 2.0, 3.0})), ShapeError,
                   "binary_cross_entropy_with_logits:", "weight must broadcast");
}

struct SquareInPlace : autograd::Function<SquareInPlace> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
    ctx->saved_data["old"] = x.clone();
    x.mul_(x);
    ctx->mark_dirty({x});
    return x;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    return {g[0] * 2 * ctx->saved_data["old"].toTensor()};
  }
};

TEST(CustomFunction, MarkDirtyRebasesTheInput) {
  Tensor x = f64({1.0, 3.0}, true);
  Tensor y = x * 1;
  Tensor z = SquareInPlace::apply(y);
  EXPECT_TRUE(z.impl() == y.impl());  // the same tensor, as in LibTorch
  EXPECT_EQ(y.grad_fn()->name(), "SquareInPlaceBackward");
  EXPECT_EQ(y.version(), 1u);
  y.sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 6));
  testing::GradcheckReport r = testing::gradcheck(
      [](const TensorList& in) {
        Tensor t = in[0] * 1;
        return SquareInPlace::apply(t) * in[0];
      },
      {leaf({3}, 21)});
  EXPECT_TRUE(r.ok) << r.text();
}

TEST(CustomFunction, MarkDirtyRefusesALeafThatRequiresGradAndAView) {
  Tensor x = f64({1.0, 3.0}, true);
  EXPECT_THROW_MSG(SquareInPlace::apply(x), AutogradError, "mark_dirty:", "a leaf Variable that requires grad");
  Tensor y = x * 1;
  Tensor v = y.narrow(0, 0, 1);
  EXPECT_THROW_MSG(SquareInPlace::apply(v), AutogradError, "mark_dirty:", "on a view is not supported");
}

}  // namespace
}  // namespace gradlab
