// The backward engine: order, accumulation, leaves, retain_grad, grad modes, detach,
// retain_graph, autograd::grad, zero_grad, and the misuse errors.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::vals;
using ::testing::ElementsAre;

TEST(Engine, FanOutAddsBothPaths) {
  Tensor x = f64({3.0}, true);
  Tensor y = x + x;
  y.backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2));
  Tensor z = f64({3.0}, true);
  (z * z + z).backward();  // 2z + 1
  EXPECT_THAT(vals(z.grad()), ElementsAre(7));
}

TEST(Engine, DiamondRunsEachNodeOnceAfterAllItsInputs) {
  // a = 2x; b = 3a; c = 4a; d = b + c  ->  dd/da = 7 arrives in ONE call, dd/dx = 14
  Tensor x = f64({1.0, -2.0}, true);
  Tensor a = x * 2;
  a.retain_grad();
  std::vector<std::vector<double>> seen;
  a.register_hook([&](const Tensor& g) { seen.push_back(vals(g)); });
  Tensor d = a * 3 + a * 4;
  d.sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_THAT(seen[0], ElementsAre(7, 7));
  EXPECT_THAT(vals(a.grad()), ElementsAre(7, 7));
  EXPECT_THAT(vals(x.grad()), ElementsAre(14, 14));
}

TEST(Engine, LongChainAndSharedSubgraph) {
  Tensor x = f64({0.5}, true);
  Tensor h = x;
  for (int i = 0; i < 50; ++i) h = h * 1.01 + x * 0.0;
  h.backward();
  EXPECT_NEAR(x.grad().item<double>(), std::pow(1.01, 50), 1e-12);
}

TEST(Engine, AGraphIsFreedWithItsLastHandle) {
  // No reference cycles: ops that save their own output (exp, sigmoid, tanh, sqrt, relu, amax)
  // must not keep the graph alive once nobody holds its tensors (no backward was run).
  std::vector<std::weak_ptr<TensorImpl>> outs;
  std::weak_ptr<autograd::Node> node;
  Tensor x = f64({1.0, 2.0}, true);
  {
    Tensor y = x.exp().sigmoid().tanh().sqrt().relu();
    Tensor m = amax(y);
    outs = {y.impl_ptr(), m.impl_ptr()};
    node = m.grad_fn();
  }
  for (const auto& w : outs) EXPECT_TRUE(w.expired());
  EXPECT_TRUE(node.expired());
}

TEST(Engine, GradientsAccumulateIntoLeavesAcrossBackwardCalls) {
  Tensor x = f64({1.0, 2.0}, true);
  (x * x).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 4));
  (x * 3).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(5, 7));
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(9, 15));
}

TEST(Engine, ExplicitGradientForNonScalar) {
  Tensor x = f64({1.0, 2.0, 3.0}, true);
  Tensor y = x * x;
  y.backward(f64({1.0, 0.5, -1.0}));
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 2, -6));
  Tensor a = f64({1.0}, true), b = f64({2.0}, true);
  autograd::backward({a * 3, b * b}, {f64({1.0}), f64({10.0})});
  EXPECT_THAT(vals(a.grad()), ElementsAre(3));
  EXPECT_THAT(vals(b.grad()), ElementsAre(40));
}

TEST(Engine, SeveralRootsWhereOneFeedsTheOther) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor y = x * x;
  Tensor z = y * 3;  // z depends on the root y: y's node must wait for z's contribution
  autograd::backward({y, z}, {f64({1.0, 1.0}), f64({1.0, 1.0})});
  EXPECT_THAT(vals(x.grad()), ElementsAre(8, 16));  // (1 + 3) * 2x
}

TEST(Engine, AutogradGradWithSeveralRootsWhereOneFeedsTheOther) {
  // d(y + z)/dx with y = 2x, z = y²: 2 + 2y * 2. The path through z is needed although z is
  // the later root and y, its input, a root too.
  Tensor x = f64({1.5}, true);
  Tensor y = x * 2;
  Tensor z = y * y;
  EXPECT_THAT(vals(autograd::grad({y, z}, {x}, {}, /*retain_graph=*/true)[0]), ElementsAre(14));
  EXPECT_THAT(vals(autograd::grad({z, y}, {x})[0]), ElementsAre(14));
}

TEST(Engine, LeavesAndRetainGrad) {
  Tensor x = f64({1.0, 2.0}, true), c = f64({5.0, 5.0});
  Tensor h = x * c;
  Tensor r = h * 2;
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(c.is_leaf());  // not requiring grad: a leaf too
  EXPECT_FALSE(h.is_leaf());
  EXPECT_TRUE(h.requires_grad());
  EXPECT_FALSE(c.requires_grad());
  EXPECT_TRUE(x.grad_fn() == nullptr);
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  r.sum().backward();
  EXPECT_THAT(vals(h.grad()), ElementsAre(2, 2));
  EXPECT_FALSE(r.grad().defined());  // non-leaf without retain_grad: no .grad
  EXPECT_FALSE(c.grad().defined());
  EXPECT_THAT(vals(x.grad()), ElementsAre(10, 10));
}

TEST(Engine, GradFnNamesMirrorPyTorch) {
  Tensor x = f64({1.0, 2.0}, true), m = f64({{1.0, 2.0}, {3.0, 4.0}}, true);
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"AddBackward0", x + x},          {"AddBackward0", x + 1},
      {"SubBackward0", x - x},          {"SubBackward0", 1 - x},
      {"MulBackward0", x * 2},          {"DivBackward0", x / x},
      {"NegBackward0", -x},             {"PowBackward0", x.pow(2)},
      {"PowBackward1", x.pow(x)},       {"ExpBackward0", x.exp()},
      {"LogBackward0", x.log()},        {"SqrtBackward0", x.sqrt()},
      {"TanhBackward0", x.tanh()},      {"SigmoidBackward0", x.sigmoid()},
      {"ReluBackward0", x.relu()},      {"AbsBackward0", x.abs()},
      {"SinBackward0", x.sin()},        {"CosBackward0", x.cos()},
      {"SumBackward0", x.sum()},        {"SumBackward1", x.sum({0})},
      {"CloneBackward0", x.clone()},    {"SelectBackward0", m[0]},
      {"SliceBackward0", x.slice(0, 1, 2)}, {"ExpandBackward0", x.expand({3, 2})},
      {"ViewBackward0", m.view({4})},   {"PermuteBackward0", m.permute({1, 0})},
      {"CatBackward0", cat({x, x})},    {"IndexSelectBackward0", x.index_select(0, tensor({1}))},
      {"GatherBackward0", x.gather(0, tensor({1}))},
      {"BmmBackward0", bmm(m.unsqueeze(0), m.unsqueeze(0))},
      {"AmaxBackward0", amax(x)},       {"AminBackward0", amin(x)},
      {"MaxBackward0", std::get<0>(m.max(1))}, {"MinBackward0", std::get<0>(m.min(1))},
      {"ToCopyBackward0", x.to(kFloat32)},  {"ClampBackward1", x.clamp(0.0, 1.0)},
      {"MaximumBackward0", maximum(x, x)},  {"WhereBackward0", where(x > 1, x, x)},
  };
  for (const auto& [name, t] : cases) {
    ASSERT_TRUE(t.grad_fn() != nullptr) << name;
    EXPECT_EQ(t.grad_fn()->name(), name);
  }
}

TEST(Engine, IntegerAndBoolResultsGetNoGraph) {
  Tensor x = f64({1.5, -2.0}, true);
  EXPECT_FALSE(x.to(kInt64).requires_grad());
  EXPECT_FALSE((x > 0).requires_grad());
  EXPECT_FALSE(argmax(x).requires_grad());
  auto [v, i] = x.max(0);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(i.requires_grad());
  EXPECT_TRUE(i.is_leaf());
}

TEST(GradMode, NoGradGuardRecordsNothing) {
  Tensor x = f64({1.0, 2.0}, true);
  EXPECT_TRUE(GradMode::is_enabled());
  {
    NoGradGuard ng;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.grad_fn() == nullptr);
    x.add_(1);  // a leaf may be updated in place under no_grad (as optimizers do)
    {
      EnableGradGuard eg;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_THAT(vals(x), ElementsAre(2, 3));
  EXPECT_TRUE((x * 2).requires_grad());
  EXPECT_FALSE((f64({1.0}) * 2).requires_grad());  // no input requires grad: no graph either
}

TEST(GradMode, DetachCutsTheGraphButSharesData) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_TRUE(d.is_same_storage(x));
  (d * x).sum().backward();  // d is a constant: the gradient is d, not 2x
  EXPECT_THAT(vals(x.grad()), ElementsAre(1, 2));
  Tensor h = x * 3;
  h.detach_();
  EXPECT_FALSE(h.requires_grad());
  EXPECT_TRUE(h.is_leaf());
}

TEST(Engine, RetainGraphAllowsASecondBackward) {
  Tensor x = f64({2.0}, true);
  Tensor y = x.exp() * x;  // saves tensors
  y.backward({}, true);
  y.backward();
  EXPECT_NEAR(x.grad().item<double>(), 2 * 3 * std::exp(2.0), 1e-12);  // (x + 1) e^x, twice
}

TEST(Engine, AutogradGradReturnsWithoutTouchingDotGrad) {
  Tensor x = f64({1.0, 2.0}, true), w = f64({3.0, 4.0}, true), unused = f64({1.0}, true);
  Tensor y = (x * w).sum();
  TensorList g = autograd::grad({y}, {x, w}, {}, true);
  EXPECT_THAT(vals(g[0]), ElementsAre(3, 4));
  EXPECT_THAT(vals(g[1]), ElementsAre(1, 2));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // only x: the w branch is not needed
  EXPECT_THAT(vals(autograd::grad({y}, {x}, {}, true)[0]), ElementsAre(3, 4));
  // a non-leaf input
  Tensor h = x * 2;
  Tensor z = (h * h).sum();
  EXPECT_THAT(vals(autograd::grad({z}, {h}, {}, true)[0]), ElementsAre(4, 8));
  EXPECT_THROW_MSG(autograd::grad({y}, {x, unused}, {}, true), AutogradError,
                   "autograd::grad: input 1 was not used to compute the outputs", "allow_unused");
  TensorList u = autograd::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(u[0].defined());
  EXPECT_FALSE(u[1].defined());
  EXPECT_THAT(vals(autograd::grad({x * x}, {x}, {f64({1.0, -1.0})})[0]), ElementsAre(2, -4));
}

TEST(Engine, AutogradGradRunsOnlyThePathsToItsInputs) {
  // d = exp(a) + 3a + a with a = x²: the captures sit at several depths of one diamond.
  Tensor x = f64({0.5, 1.0}, true), w = f64({2.0}, true);
  Tensor a = x * x;
  Tensor d = (a.exp() + a * 3 + a).sum();
  int side_hook_calls = 0;
  Tensor side = w * w;  // requires grad, but no path from it to a or x
  side.register_hook([&](const Tensor&) { ++side_hook_calls; });
  Tensor root = d + side.sum();
  TensorList g = autograd::grad({root}, {a, x}, {}, true);
  const std::vector<double> av = vals(a);
  EXPECT_THAT(vals(g[0]), checks::Near({std::exp(av[0]) + 4, std::exp(av[1]) + 4}));
  EXPECT_THAT(vals(g[1]), checks::Near({(std::exp(av[0]) + 4) * 2 * 0.5, (std::exp(av[1]) + 4) * 2 * 1.0}));
  EXPECT_EQ(side_hook_calls, 0);  // the side branch never ran
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  root.backward();  // backward() runs everything
  EXPECT_EQ(side_hook_calls, 1);
  EXPECT_THAT(vals(w.grad()), ElementsAre(4));
}

TEST(Engine, ZeroGrad) {
  Tensor x = f64({1.0, 2.0}, true);
  (x * 2).sum().backward();
  Tensor g = x.grad();
  x.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(x.grad().defined());
  EXPECT_THAT(vals(x.grad()), ElementsAre(0, 0));
  EXPECT_THAT(vals(g), ElementsAre(0, 0));  // zeroed in place
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  (x * 2).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2, 2));  // fresh, not accumulated onto the old
  x.mutable_grad() = Tensor();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Engine, GradientOfFloat32LeafIsFloat32) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  (x.to(kFloat64) * f64({1.0, 1.0})).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  Tensor b = tensor({1.0}, requires_grad());
  (b + zeros({3, 1})).sum().backward();  // broadcast: the gradient is summed back to [1]
  EXPECT_EQ(b.grad().sizes(), (Shape{1}));
  EXPECT_THAT(vals(b.grad()), ElementsAre(3));
}

// ---- misuse errors --------------------------------------------------------------------------

TEST(EngineErrors, BackwardOnNonScalarNeedsAGradient) {
  Tensor x = f64({1.0, 2.0, 3.0}, true);
  EXPECT_THROW_MSG((x * 2).backward(), AutogradError,
                   "backward: grad can be implicitly created only for scalar outputs",
                   "a tensor of shape [3]", "hint:");
  EXPECT_THROW_MSG((x * 2).backward(f64({1.0, 1.0})), ShapeError, "backward: gradient 0 has the wrong shape",
                   "expected [3], got [2]");
}

TEST(EngineErrors, BackwardOnATensorThatDoesNotRequireGrad) {
  EXPECT_THROW_MSG(f64({1.0}).backward(), AutogradError,
                   "element 0 of tensors does not require grad and does not have a grad_fn",
                   "requires_grad_()");
  Tensor x = f64({1.0}, true);
  Tensor y;
  {
    NoGradGuard ng;
    y = x * 2;
  }
  EXPECT_THROW_MSG(y.backward(), AutogradError, "does not require grad", "NoGradGuard");
  EXPECT_THROW_MSG(autograd::grad({x * 2}, {f64({1.0})}), AutogradError,
                   "autograd::grad: input 0 does not require grad");
}

TEST(EngineErrors, SecondBackwardThroughAFreedGraphSaysRetainGraph) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_THROW_MSG(y.backward(), AutogradError, "Trying to backward through the graph a second time",
                   "retain_graph=true", "MulBackward0");
  Tensor z = x.exp().sum();
  autograd::grad({z}, {x});
  EXPECT_THROW_MSG(autograd::grad({z}, {x}), AutogradError, "second time", "ExpBackward0");
}

TEST(EngineErrors, AnErrorFromBackwardNamesTheCallersLine) {
  const std::string here = "checks/autograd/engine_test.cpp:";
  Tensor x = f64({1.0, 2.0}, true);
  int line = __LINE__ + 1;
  EXPECT_THROW_MSG((x * 2).backward(), AutogradError, "backward called at " + here + std::to_string(line));
  Tensor y = (x * x).sum();
  y.backward();
  line = __LINE__ + 1;
  EXPECT_THROW_MSG(y.backward(), AutogradError, "second time", "backward called at " + here + std::to_string(line));
  line = __LINE__ + 1;
  EXPECT_THROW_MSG(autograd::backward({x * 2}, {f64({1.0})}), ShapeError,
                   "backward: gradient 0 has the wrong shape", "backward called at " + here + std::to_string(line));
  line = __LINE__ + 1;
  EXPECT_THROW_MSG(autograd::grad({x.sum()}, {f64({1.0})}), AutogradError,
                   "autograd::grad called at " + here + std::to_string(line));
  // an error in a user's hook keeps its kind and gains the backward call
  Tensor e = x.exp();
  e.register_hook([](const Tensor& g) { return g.reshape({5}); });
  Tensor z = e.sum();
  line = __LINE__ + 1;
  EXPECT_THROW_MSG(z.backward(), ShapeError, "reshape", "backward called at " + here + std::to_string(line));
}

TEST(EngineErrors, RequiresGradOnlyForFloatLeaves) {
  EXPECT_THROW_MSG(zeros({2}, kInt64).requires_grad_(), AutogradError,
                   "requires_grad_: only floating point tensors can require gradients",
                   "expected float32 or float64, got int64");
  EXPECT_THROW_MSG(zeros({2}, kBool).requires_grad_(), AutogradError, "got bool");
  EXPECT_THROW_MSG(zeros({2}, dtype(kInt64).requires_grad(true)), AutogradError, "zeros:",
                   "only floating point tensors can require gradients", "int64");
  EXPECT_THROW_MSG(arange(3, TensorOptions().requires_grad(true)), AutogradError, "arange:", "int64");
  Tensor x = f64({1.0}, true);
  EXPECT_THROW_MSG((x * 2).requires_grad_(false), AutogradError,
                   "requires_grad_: you can only change requires_grad flags of leaf variables", "MulBackward0");
  EXPECT_THROW_MSG(f64({1.0}).retain_grad(), AutogradError, "retain_grad", "requires_grad=false");
  EXPECT_THROW_MSG(f64({1.0}).register_hook([](const Tensor&) {}), AutogradError, "register_hook");
}

}  // namespace
}  // namespace gradlab
