// nn ops (ops/nn_ops.hpp): forward values against PyTorch, gradients by gradcheck (first and
// second order), error messages.

#include "nn/nn_helpers.hpp"
#include "nn/pytorch_ref_nn.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
using checks::gradgrad_ok;
using checks::Near;
using checks::rnd64;
using checks::vals;

TEST(Conv2d, MatchesPyTorchStridePaddingDilation) {
  Tensor x = d64(ref::conv_x, {2, 2, 5, 5}), w = d64(ref::conv_w, {3, 2, 3, 3}),
         b = d64(ref::conv_b, {3});
  Tensor y = conv2d(x, w, b, 2, 1);
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 3, 3}));
  EXPECT_THAT(vals(y), Near(ref::conv_s2_p1, 1e-12));
  Tensor yd = conv2d(x, w, {}, 1, 0, 2);
  EXPECT_EQ(yd.sizes(), (Shape{2, 3, 1, 1}));
  EXPECT_THAT(vals(yd), Near(ref::conv_d2, 1e-12));
  EXPECT_THAT(vals(conv2d(x, w, b)), Near(ref::conv_plain, 1e-12));
  Tensor w2 = d64(ref::conv_w_rect, {2, 2, 2, 3});
  Tensor yr = conv2d(x, w2, {}, IntPair(1, 2), IntPair(1, 0));
  EXPECT_EQ(yr.sizes(), (Shape{2, 2, 6, 2}));
  EXPECT_THAT(vals(yr), Near(ref::conv_rect_p, 1e-12));
}

TEST(Conv2d, UnbatchedInputAndFloat32) {
  Tensor x = d64(ref::conv_x, {2, 2, 5, 5}), w = d64(ref::conv_w, {3, 2, 3, 3});
  Tensor y = conv2d(x[1], w);
  EXPECT_EQ(y.sizes(), (Shape{3, 3, 3}));
  EXPECT_THAT(vals(y), Near(vals(conv2d(x, w)[1]), 1e-12));
  Tensor yf = conv2d(x.to(kFloat32), w.to(kFloat32));
  EXPECT_EQ(yf.dtype(), kFloat32);
  EXPECT_THAT(vals(yf), Near(vals(conv2d(x, w)), 1e-4));
}

TEST(Conv2d, GradcheckInputWeightBias) {
  Tensor x = rnd64({2, 2, 4, 5}, 1), w = rnd64({3, 2, 2, 3}, 2), b = rnd64({3}, 3);
  EXPECT_TRUE(
      grad_ok([](const TensorList& in) { return conv2d(in[0], in[1], in[2], IntPair(2, 1), 1); },
              {x, w, b}, "conv2d stride (2,1) padding 1"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return conv2d(in[0], in[1], {}, 1, 0, 2); },
                      {rnd64({1, 2, 5, 5}, 4), rnd64({2, 2, 2, 2}, 5)}, "conv2d dilation 2"));
}

TEST(Conv2d, SecondDerivatives) {
  Tensor x = rnd64({1, 1, 4, 4}, 6), w = rnd64({2, 1, 2, 2}, 7);
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return conv2d(in[0], in[1], {}, 1, 1); },
                          {x, w}, "conv2d"));
}

TEST(Conv2d, Errors) {
  Tensor w = zeros({8, 1, 3, 3});
  EXPECT_THROW_MSG(conv2d(zeros({2, 3, 8, 8}), w), ShapeError, "conv2d:", "input with 1 channels",
                   "[2, 3, 8, 8]");
  EXPECT_THROW_MSG(conv2d(zeros({2, 64}), w), ShapeError, "conv2d:", "[N, C, H, W]", "[2, 64]");
  EXPECT_THROW_MSG(conv2d(zeros({1, 1, 2, 2}), w), ShapeError, "conv2d:", "too small");
  EXPECT_THROW_MSG(conv2d(zeros({1, 1, 8, 8}), w, zeros({3})), ShapeError, "bias", "[8]", "[3]");
  EXPECT_THROW_MSG(conv2d(zeros({1, 1, 8, 8}), w, {}, 0), ValueError, "stride must be positive");
  EXPECT_THROW_MSG(conv2d(zeros({1, 1, 8, 8}), zeros({8, 3, 3})), ShapeError, "weight must be 4-D");
}

TEST(UnfoldFold, MatchPyTorchAndAreAdjoint) {
  Tensor x = d64(ref::conv_x, {2, 2, 5, 5});
  Tensor cols = unfold(x, 2, 1, 1, 2);
  EXPECT_EQ(cols.sizes(), (Shape{2, 8, 9}));
  EXPECT_THAT(vals(cols), Near(ref::unfold_k2_p1_s2, 0));
  EXPECT_THAT(vals(fold(unfold(x, 3, 1, 1), {5, 5}, 3, 1, 1)), Near(ref::fold_back, 1e-12));
  // <unfold(x), c> == <x, fold(c)>: fold is unfold's adjoint.
  Tensor c = rnd64({2, 8, 9}, 9).detach();
  const double lhs = sum(unfold(x, 2, 1, 1, 2) * c).item<double>();
  const double rhs = sum(x * fold(c, {5, 5}, 2, 1, 1, 2)).item<double>();
  EXPECT_NEAR(lhs, rhs, 1e-10);
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) { return unfold(in[0], IntPair(2, 3), 1, IntPair(0, 1), 1); },
      {rnd64({1, 2, 3, 4}, 10)}, "unfold"));
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) {
        return fold(in[0], {4, 4}, 2, 1, 0, 2);
      },
      {rnd64({1, 4, 4}, 11)}, "fold"));
  EXPECT_THROW_MSG(fold(zeros({1, 4, 5}), {4, 4}, 2, 1, 0, 2), ShapeError, "fold:", "blocks");
}

TEST(MaxPool2d, MatchesPyTorchValuesAndGradient) {
  Tensor x = d64(ref::pool_x, {1, 2, 5, 5});
  EXPECT_THAT(vals(max_pool2d(x, 2)), Near(ref::pool_k2, 0));
  EXPECT_EQ(max_pool2d(x, 2).sizes(), (Shape{1, 2, 2, 2}));
  Tensor xg = x.detach().requires_grad_();
  Tensor y = max_pool2d(xg, 3, IntPair(2), 1);
  EXPECT_THAT(vals(y), Near(ref::pool_k3_s2_p1, 0));
  Tensor coef = arange(1, 19, 1, dtype(kFloat64)).reshape({1, 2, 3, 3});
  sum(y * coef).backward();
  EXPECT_THAT(vals(xg.grad()), Near(ref::pool_k3_s2_p1_grad, 0));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return max_pool2d(in[0], 2, IntPair(1)); },
                      {rnd64({2, 1, 4, 4}, 12)}, "max_pool2d"));
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return max_pool2d(in[0], 2); },
                          {rnd64({1, 1, 4, 4}, 13)}, "max_pool2d"));
}

TEST(MaxPool2d, IndicesUnbatchedAndErrors) {
  Tensor x = tensor({{1.0, 5.0, 2.0, 0.0}, {3.0, 4.0, 9.0, 8.0}}).reshape({1, 2, 4});
  auto [y, i] = max_pool2d_with_indices(x, 2);
  EXPECT_THAT(vals(y), ::testing::ElementsAre(5, 9));
  EXPECT_THAT(checks::ivals(i), ::testing::ElementsAre(1, 6));
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 2}));
  EXPECT_THROW_MSG(max_pool2d(zeros({1, 1, 4, 4}), 2, std::nullopt, 2), ValueError,
                   "pad should be at most half");
  EXPECT_THROW_MSG(max_pool2d(zeros({4, 4}), 2), ShapeError, "max_pool2d:", "[4, 4]");
}

TEST(Dropout, SeededMaskScaleAndEval) {
  Tensor x = ones({1000}, dtype(kFloat64));
  Generator g1(7), g2(7);
  Tensor a = dropout(x, 0.3, true, &g1), b = dropout(x, 0.3, true, &g2);
  EXPECT_TRUE(equal(a, b)) << "the same seed gives the same mask";
  int64_t zeros_n = 0;
  for (double v : vals(a)) {
    if (v == 0)
      ++zeros_n;
    else
      EXPECT_DOUBLE_EQ(v, 1.0 / 0.7);
  }
  EXPECT_GT(zeros_n, 240);
  EXPECT_LT(zeros_n, 360);
  EXPECT_TRUE(dropout(x, 0.3, false).is_same_storage(x)) << "eval mode returns the input";
  EXPECT_EQ(sum(dropout(x, 1.0, true)).item<double>(), 0.0);
  EXPECT_THROW_MSG(dropout(x, 1.5, true), ValueError, "dropout:", "between 0 and 1");
  // The gradient is the mask (times 1/(1-p)).
  Tensor xr = rnd64({20}, 3);
  Generator g3(11);
  Tensor y = dropout(xr, 0.5, true, &g3);
  sum(y).backward();
  EXPECT_THAT(vals(xr.grad()), Near(vals(y.detach() / xr.detach()), 1e-12));
}

TEST(BatchNormFunctional, TrainingUpdatesRunningStatsLikePyTorch) {
  Tensor rm = zeros({3}, dtype(kFloat64)), rv = ones({3}, dtype(kFloat64));
  Tensor w = d64({1.5, 0.5, -1.0}, {3}), b = d64({0.1, -0.2, 0.3}, {3});
  Tensor y1 = batch_norm(d64(ref::bn_x1, {4, 3}), rm, rv, w, b, true, 0.1, 1e-5);
  Tensor y2 = batch_norm(d64(ref::bn_x2, {4, 3}), rm, rv, w, b, true, 0.1, 1e-5);
  EXPECT_THAT(vals(y1), Near(ref::bn_y1, 1e-12));
  EXPECT_THAT(vals(y2), Near(ref::bn_y2, 1e-12));
  EXPECT_THAT(vals(rm), Near(ref::bn_running_mean, 1e-14));
  EXPECT_THAT(vals(rv), Near(ref::bn_running_var, 1e-14));
  Tensor y3 = batch_norm(d64(ref::bn_x3, {2, 3}), rm, rv, w, b, false, 0.1, 1e-5);
  EXPECT_THAT(vals(y3), Near(ref::bn_eval_y3, 1e-12));
}

TEST(BatchNormFunctional, GradcheckTrainingAndEval) {
  Tensor x = rnd64({5, 3}, 21), w = rnd64({3}, 22), b = rnd64({3}, 23);
  EXPECT_TRUE(
      grad_ok([](const TensorList& in) { return batch_norm(in[0], {}, {}, in[1], in[2], true); },
              {x, w, b}, "batch_norm training"));
  Tensor rm = d64({0.1, -0.2, 0.3}, {3}), rv = d64({1.5, 0.7, 2.0}, {3});
  EXPECT_TRUE(
      grad_ok([&](const TensorList& in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
              {x, w, b}, "batch_norm eval"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return batch_norm(in[0], {}, {}, {}, {}, true); },
                      {rnd64({2, 3, 4}, 24)}, "batch_norm 3-D"));
  EXPECT_TRUE(
      gradgrad_ok([](const TensorList& in) { return batch_norm(in[0], {}, {}, {}, {}, true); },
                  {rnd64({4, 2}, 25)}, "batch_norm"));
}

TEST(BatchNormFunctional, Errors) {
  EXPECT_THROW_MSG(batch_norm(zeros({1, 4}), {}, {}, {}, {}, true), ValueError,
                   "expected more than 1 value per channel when training", "[1, 4]");
  EXPECT_THROW_MSG(batch_norm(zeros({2, 4}), zeros({3}), ones({3}), {}, {}, false), ShapeError,
                   "running_mean", "[4]", "[3]");
  EXPECT_THROW_MSG(batch_norm(zeros({2, 4}), {}, {}, {}, {}, false), ValueError,
                   "running_mean and running_var");
}

TEST(LayerNormFunctional, MatchesPyTorchAndGradchecks) {
  Tensor x = d64(ref::ln_x, {2, 2, 3});
  EXPECT_THAT(vals(layer_norm(x, {3}, d64(ref::ln_w, {3}), d64(ref::ln_b, {3}))),
              Near(ref::ln_y_last, 1e-12));
  EXPECT_THAT(vals(layer_norm(x, {2, 3})), Near(ref::ln_y_two, 1e-12));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return layer_norm(in[0], {4}, in[1], in[2]); },
                      {rnd64({3, 4}, 31), rnd64({4}, 32), rnd64({4}, 33)}, "layer_norm"));
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return layer_norm(in[0], {3}); },
                          {rnd64({2, 3}, 34)}, "layer_norm"));
  EXPECT_THROW_MSG(layer_norm(zeros({2, 3}), {4}), ShapeError, "layer_norm:", "[*, 4]", "[2, 3]");
}

TEST(ThresholdBackward, IsReluBackwardAndTwiceDifferentiable) {
  Tensor y = d64({-1.0, 0.0, 2.0, 3.0}, {4}), g = d64({1.0, 2.0, 3.0, 4.0}, {4});
  EXPECT_THAT(vals(threshold_backward(g, y)), ::testing::ElementsAre(0, 0, 3, 4));
  Tensor x = d64({-1.0, 0.5, 2.0}, {3}, true);
  Tensor r = relu(x);
  EXPECT_EQ(r.grad_fn()->name(), "ReluBackward0");
  // relu(x) * x: its second derivative goes through threshold_backward under create_graph.
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return relu(in[0]) * in[0]; },
                          {d64({-1.3, 0.7, 2.1, -0.2}, {4}, true)}, "relu * x"));
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return threshold_backward(in[0], y); },
                      {d64({0.3, -0.1, 0.8, 1.5}, {4}, true)}, "threshold_backward"));
  EXPECT_THROW_MSG(threshold_backward(zeros({3}), zeros({4})), ShapeError, "same shape");
}

TEST(LinearFunctional, ValuesGradAndBatchedInput) {
  Tensor x = d64({1, 2, 3, 4, 5, 6}, {2, 3}), w = d64({1, 0, -1, 2, 1, 0}, {2, 3}),
         b = d64({0.5, -0.5}, {2});
  EXPECT_THAT(vals(linear(x, w, b)), ::testing::ElementsAre(-1.5, 3.5, -1.5, 12.5));
  EXPECT_EQ(linear(zeros({4, 5, 3}), w.to(kFloat32)).sizes(), (Shape{4, 5, 2}));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return linear(in[0], in[1], in[2]); },
                      {rnd64({3, 4}, 41), rnd64({2, 4}, 42), rnd64({2}, 43)}, "linear"));
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return linear(in[0], in[1]); },
                      {rnd64({2, 3, 4}, 44), rnd64({2, 4}, 45)}, "linear 3-D input, no bias"));
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return linear(in[0], in[1], in[2]); },
                          {rnd64({3, 4}, 46), rnd64({2, 4}, 47), rnd64({2}, 48)}, "linear"));
  // One node, named as PyTorch names it; the same values as the composite x @ Wᵀ + b.
  Tensor xr = rnd64({3, 4}, 49), wr = rnd64({2, 4}, 50), br = rnd64({2}, 51);
  EXPECT_EQ(linear(xr, wr, br).grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(linear(xr, wr).grad_fn()->name(), "MmBackward0");
  EXPECT_THAT(vals(linear(xr, wr, br)), Near(vals(matmul(xr, wr.t()) + br), 1e-14));
  EXPECT_EQ(linear(d64({1, 2, 3, 4}, {4}), wr).sizes(), (Shape{2}));
  EXPECT_THROW_MSG(linear(zeros({2, 4}), zeros({3, 4}), zeros({2})), ShapeError, "bias", "[3]",
                   "[2]");
  EXPECT_THROW_MSG(linear(zeros({2, 5}), zeros({3, 4})), ShapeError, "input with last dimension 4",
                   "[2, 5]");
}

}  // namespace
}  // namespace gradlab
