// The custom-function API (LibTorch's torch::autograd::Function<T>).

#include "common/check_helpers.hpp"
#include "common/finite_diff.hpp"

#include <gradlab/core/storage.hpp>  // memory::allocated

namespace gradlab {
namespace {

using autograd::AutogradContext;
using checks::f64;
using checks::vals;
using ::testing::ElementsAre;

// y = x * c (c a number)       dx = dy * c
struct MulConstant : autograd::Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};

// y = x³                        dx = dy * 3x²   (saves x)
struct Cube : autograd::Function<Cube> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

// z = a * b; records which inputs need a gradient, in forward and in backward
struct Product : autograd::Function<Product> {
  static inline std::vector<bool> forward_needs, backward_needs;
  static Tensor forward(AutogradContext* ctx, Tensor a, Tensor b) {
    forward_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    backward_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    TensorList s = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? g[0] * s[1] : Tensor(), ctx->needs_input_grad(1) ? g[0] * s[0] : Tensor()};
  }
};

// (y, sign) = (|x|, sign(x)): sign is marked non-differentiable; saves its output y.
struct AbsWithSign : autograd::Function<AbsWithSign> {
  static TensorList forward(AutogradContext* ctx, Tensor x) {
    Tensor y = abs(x), s = sign(x);
    ctx->mark_non_differentiable({s});
    ctx->save_for_backward({x, y});
    return {y, s};
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    TensorList saved = ctx->get_saved_variables();
    return {g[0] * saved[1] / saved[0]};  // |x| / x = sign(x)
  }
};

struct TooFewGrads : autograd::Function<TooFewGrads> {
  static Tensor forward(AutogradContext*, Tensor x, double c) { return x * c; }
  static TensorList backward(AutogradContext*, TensorList g) { return {g[0]}; }
};

// A defined gradient past the last argument: still the wrong number.
struct TooManyGrads : autograd::Function<TooManyGrads> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static TensorList backward(AutogradContext*, TensorList g) { return {g[0] * 2, g[0]}; }
};

// y = x * w (+ b when given), LibTorch's tutorial LinearFunction with an optional bias:
// dx = dy * w, dw = dy * x, db = dy. backward always returns three gradients, the last one
// undefined when b was not passed (then forward got two arguments: one surplus gradient).
struct ScaleOptionalShift : autograd::Function<ScaleOptionalShift> {
  static Tensor forward(AutogradContext* ctx, Tensor x, Tensor w, Tensor b = Tensor()) {
    ctx->save_for_backward({x, w, b});
    return b.defined() ? x * w + b : x * w;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    TensorList s = ctx->get_saved_variables();
    return {g[0] * s[1], g[0] * s[0], s[2].defined() ? g[0] : Tensor()};
  }
};

// x <- 2x in place, marked dirty; saves its output (the rebased input). dx = dy * 2
struct DoubleInPlace : autograd::Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    ctx->save_for_backward({x});
    return x;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    EXPECT_TRUE(ctx->get_saved_variables()[0].defined());
    return {g[0] * 2};
  }
};

struct WrongShapeGrad : autograd::Function<WrongShapeGrad> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static TensorList backward(AutogradContext*, TensorList g) { return {g[0].sum({0}, true)}; }
};

// y = c * (Σ xs) * z (xs a list)   dxs[k] = dy * c * z, dz = dy * c * Σ xs
struct ScaledSumTimes : autograd::Function<ScaledSumTimes> {
  static inline std::vector<bool> needs;
  static Tensor forward(AutogradContext* ctx, std::vector<Tensor> xs, double c, Tensor z) {
    needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2)};
    Tensor s = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) s = s + xs[k];
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({s, z});
    return s * z * c;
  }
  static TensorList backward(AutogradContext* ctx, TensorList g) {
    TensorList v = ctx->get_saved_variables();
    const double c = ctx->saved_data["c"].toDouble();
    Tensor dx = g[0] * v[1] * c;
    return {dx, dx, Tensor(), g[0] * v[0] * c};  // xs[0], xs[1], c, z
  }
};

// Returns its gradient with the batch dim of the broadcast it came from: the engine sums it back.
struct BroadcastShapedGrad : autograd::Function<BroadcastShapedGrad> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static TensorList backward(AutogradContext*, TensorList g) { return {ones({4, 1, 3}, kFloat64) * g[0] * 2}; }
};

struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static TensorList backward(AutogradContext*, TensorList g) { return {g[0]}; }
};

TEST(CustomFunction, SavedDataAndNonTensorArguments) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor y = MulConstant::apply(x, 5.5);
  EXPECT_THAT(vals(y), ElementsAre(5.5, 11));
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulConstantBackward");
  y.sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(5.5, 5.5));
}

TEST(CustomFunction, SaveForBackwardAndComposition) {
  Tensor x = f64({2.0, -1.0}, true);
  Tensor y = Cube::apply(x * 1);  // a non-leaf input
  EXPECT_THAT(vals(y), ElementsAre(8, -1));
  y.sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(12, 3));
  EXPECT_TRUE(checks::grads_match_finite_diff([](const TensorList& v) { return Cube::apply(v[0]); },
                                              {f64({0.3, -0.7, 1.1}, true)}));
}

TEST(CustomFunction, NeedsInputGradInForwardAndBackward) {
  Tensor a = f64({2.0}, true), b = f64({3.0});
  Tensor z = Product::apply(a, b);
  EXPECT_THAT(Product::forward_needs, ElementsAre(true, false));
  z.backward();
  EXPECT_THAT(Product::backward_needs, ElementsAre(true, false));
  EXPECT_THAT(vals(a.grad()), ElementsAre(3));
  EXPECT_FALSE(b.grad().defined());
  // nothing requires grad: no graph, and forward sees no input needing a gradient
  Tensor c = Product::apply(f64({1.0}), f64({1.0}));
  EXPECT_FALSE(c.requires_grad());
  EXPECT_THAT(Product::forward_needs, ElementsAre(false, false));
}

TEST(CustomFunction, MarkNonDifferentiableAndSavedOutputs) {
  Tensor x = f64({-2.0, 3.0}, true);
  TensorList out = AbsWithSign::apply(x);
  EXPECT_THAT(vals(out[0]), ElementsAre(2, 3));
  EXPECT_THAT(vals(out[1]), ElementsAre(-1, 1));
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  EXPECT_TRUE(out[1].grad_fn() == nullptr);
  (out[0] * f64({1.0, 10.0})).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(-1, 10));
  std::weak_ptr<autograd::Node> node;
  {
    TensorList again = AbsWithSign::apply(x);  // saves its output: must not be a cycle
    node = again[0].grad_fn();
  }
  EXPECT_TRUE(node.expired());
}

TEST(CustomFunction, BackwardUnderCreateGraphIsDifferentiable) {
  Tensor x = f64({2.0}, true);
  Tensor g = autograd::grad({Cube::apply(x)}, {x}, {}, std::nullopt, true)[0];  // 3x²
  EXPECT_THAT(vals(g), ElementsAre(12));
  EXPECT_THAT(vals(autograd::grad({g}, {x})[0]), ElementsAre(12));  // 6x
}

TEST(CustomFunction, AVectorArgumentIsOneInputPerElement) {
  Tensor a = f64({1.0, 2.0}, true), b = f64({3.0, 4.0}), z = f64({5.0, 6.0}, true);
  Tensor y = ScaledSumTimes::apply(std::vector<Tensor>{a, b}, 0.5, z);  // 0.5 * (a + b) * z
  EXPECT_THAT(vals(y), ElementsAre(10, 18));
  // needs_input_grad counts tensor inputs: a, b, z (the double is skipped)
  EXPECT_THAT(ScaledSumTimes::needs, ElementsAre(true, false, true));
  y.sum().backward();
  EXPECT_THAT(vals(a.grad()), ElementsAre(2.5, 3));  // 0.5 * z
  EXPECT_FALSE(b.grad().defined());
  EXPECT_THAT(vals(z.grad()), ElementsAre(2, 3));  // 0.5 * (a + b)
  EXPECT_TRUE(checks::grads_match_finite_diff(
      [](const TensorList& v) { return ScaledSumTimes::apply(TensorList{v[0], v[1]}, 1.5, v[2]); },
      {f64({0.3, -0.7}, true), f64({1.1, 0.2}, true), f64({-0.4, 0.9}, true)}));
}

TEST(CustomFunction, AGradientWithTheBroadcastShapeIsSummedToTheInput) {
  // As PyTorch's validate_outputs: a gradient whose shape the input broadcasts to is sum_to'd.
  Tensor x = f64({{1.0, 2.0, 3.0}}, true);  // [1, 3]
  BroadcastShapedGrad::apply(x).sum().backward();
  EXPECT_EQ(x.grad().sizes(), (Shape{1, 3}));
  EXPECT_THAT(vals(x.grad()), ElementsAre(8, 8, 8));  // 4 rows of 2
}

TEST(CustomFunction, OutputThatIsTheInputGetsItsOwnHandle) {
  Tensor x = f64({1.0}, true);
  Tensor y = Identity::apply(x);
  EXPECT_TRUE(x.is_leaf());  // x did not become the output of IdentityBackward
  EXPECT_FALSE(y.is_leaf());
  (y * 4).backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(4));
}

TEST(CustomFunctionErrors, WrongNumberOfGradients) {
  Tensor x = f64({1.0}, true);
  EXPECT_THROW_MSG(TooFewGrads::apply(x, 2.0).backward(), AutogradError,
                   "TooFewGradsBackward: backward returned the wrong number of gradients",
                   "expected 2 (one per forward argument", "got 1", "Tensor()");
}

TEST(CustomFunction, SurplusTrailingUndefinedGradientsAreDropped) {
  Tensor x = f64({1.0, 2.0}, true), w = f64({3.0, -1.0}, true), b = f64({0.5, 0.5}, true);
  ScaleOptionalShift::apply(x, w).sum().backward();  // no bias: backward returns 3 for 2 inputs
  EXPECT_THAT(vals(x.grad()), ElementsAre(3, -1));
  EXPECT_THAT(vals(w.grad()), ElementsAre(1, 2));
  ScaleOptionalShift::apply(x, w, b).sum().backward();  // with bias: 3 for 3
  EXPECT_THAT(vals(x.grad()), ElementsAre(6, -2));
  EXPECT_THAT(vals(b.grad()), ElementsAre(1, 1));
}

TEST(CustomFunctionErrors, ASurplusDefinedGradientIsAnError) {
  Tensor x = f64({1.0}, true);
  EXPECT_THROW_MSG(TooManyGrads::apply(x).backward(), AutogradError,
                   "TooManyGradsBackward: backward returned the wrong number of gradients", "expected 1",
                   "got 2", "surplus gradients must be undefined");
}

// mark_dirty once made a reference cycle (the dirty output -> grad_fn -> ctx -> the output), so
// every call leaked its node, the output and all it saved. Counted here without timing or RSS:
// live nodes through weak pointers, and bytes of live tensor storage (memory::allocated()).
TEST(CustomFunction, MarkDirtyLeavesNoCycleAndMemoryStaysFlat) {
  Tensor x = f64({1.0, 3.0}, true);
  {
    Tensor y = x * 1;
    Tensor z = DoubleInPlace::apply(y);
    EXPECT_TRUE(z.impl() == y.impl());
    z.sum().backward();  // x.grad is allocated now, before the count starts
    EXPECT_THAT(vals(x.grad()), ElementsAre(2, 2));
  }
  const std::size_t bytes_before = memory::allocated();
  constexpr int kCalls = 10000;
  std::vector<std::weak_ptr<autograd::Node>> nodes;
  nodes.reserve(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    Tensor y = x * 1;
    Tensor z = DoubleInPlace::apply(y);
    nodes.push_back(z.grad_fn());
    if (i % 10 == 0) (z * 3).sum().backward();  // one in ten with a backward, the rest dropped unused
  }
  std::size_t live = 0;
  for (const auto& n : nodes) live += n.expired() ? 0 : 1;
  EXPECT_EQ(live, 0u) << "of " << kCalls << " DoubleInPlaceBackward nodes";
  EXPECT_EQ(memory::allocated(), bytes_before);
  EXPECT_THAT(vals(x.grad()), ElementsAre(2 + 6 * kCalls / 10, 2 + 6 * kCalls / 10));  // d(3 * 2x)/dx = 6
}

TEST(CustomFunctionErrors, WrongGradientShapeIsCaughtByTheEngine) {
  Tensor x = f64({1.0, 2.0, 3.0}, true);
  EXPECT_THROW_MSG(WrongShapeGrad::apply(x).sum().backward(), AutogradError,
                   "WrongShapeGradBackward: backward returned a gradient of the wrong shape for input 0",
                   "expected [3], got [1]");
}

TEST(CustomFunctionErrors, SavedInputModifiedAndSecondBackward) {
  Tensor a = f64({2.0}), b = f64({3.0}, true);
  Tensor z = Product::apply(a, b);
  a.mul_(2);
  EXPECT_THROW_MSG(z.backward(), AutogradError, "is at version 1; expected version 0", "ProductBackward");
  Tensor x = f64({1.0}, true);
  Tensor y = Cube::apply(x);
  y.backward();
  EXPECT_THROW_MSG(y.backward(), AutogradError, "second time", "retain_graph=true");
}

TEST(CustomFunctionErrors, SavedValueOfTheWrongType) {
  autograd::SavedValue v(int64_t{3});
  EXPECT_EQ(v.toInt(), 3);
  EXPECT_EQ(v.toDouble(), 3.0);
  EXPECT_THROW_MSG(v.toString(), ValueError, "SavedValue", "string");
}

}  // namespace
}  // namespace gradlab
