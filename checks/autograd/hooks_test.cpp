// Tensor hooks: inspect or replace a gradient, on leaves and non-leaves; remove_hook.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::vals;
using ::testing::ElementsAre;

TEST(Hooks, InspectOnALeafSeesTheIncomingGradient) {
  Tensor x = f64({1.0, 2.0}, true);
  std::vector<double> seen;
  int calls = 0;
  x.register_hook([&](const Tensor& g) {
    seen = vals(g);
    ++calls;
  });
  (x * 3).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(seen, ElementsAre(3, 3));
  EXPECT_THAT(vals(x.grad()), ElementsAre(3, 3));
}

TEST(Hooks, ReplaceOnALeafChangesWhatIsAccumulated) {
  Tensor x = f64({1.0, 2.0}, true);
  x.register_hook([](const Tensor& g) { return g * 10; });
  (x * 3).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(30, 30));
}

TEST(Hooks, ReplaceOnANonLeafChangesEverythingUpstream) {
  Tensor x = f64({1.0, 2.0}, true);
  Tensor h = x * x;  // dh/dx = 2x
  std::vector<double> seen;
  h.register_hook([&](const Tensor& g) { seen = vals(g); });
  h.register_hook(GradHook([](const Tensor& g) { return g * -1; }));
  h.retain_grad();
  (h * 5).sum().backward();
  EXPECT_THAT(seen, ElementsAre(5, 5));                 // hooks run in registration order
  EXPECT_THAT(vals(h.grad()), ElementsAre(-5, -5));     // retained grad is the hooked one
  EXPECT_THAT(vals(x.grad()), ElementsAre(-10, -20));   // -5 * 2x
}

TEST(Hooks, ReturningAnUndefinedTensorKeepsTheGradient) {
  Tensor x = f64({4.0}, true);
  x.register_hook(GradHook([](const Tensor&) { return Tensor(); }));
  (x * 2).backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2));
}

TEST(Hooks, RemoveHookStopsIt) {
  Tensor x = f64({1.0}, true);
  int calls = 0;
  unsigned id = x.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 2;
  });
  (x * 1).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(vals(x.grad()), ElementsAre(2));
  x.remove_hook(id);
  (x * 1).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(vals(x.grad()), ElementsAre(3));  // 2 + 1, unhooked
  Tensor h = x * 1;
  unsigned hid = h.register_hook([&](const Tensor&) { ++calls; });
  h.remove_hook(hid);
  h.backward();
  EXPECT_EQ(calls, 1);
}

TEST(Hooks, RunOnceWithTheSummedGradientOfAFanOut) {
  Tensor x = f64({1.0}, true);
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) { seen.push_back(g.item<double>()); });
  (x * 2 + x * 3).backward();
  EXPECT_THAT(seen, ElementsAre(5));
}

TEST(Hooks, PostAccumulateGradHookSeesTheAccumulatedGradOncePerBackward) {
  Tensor x = f64({1.0, 2.0}, true);
  std::vector<std::vector<double>> seen;
  unsigned id = x.register_post_accumulate_grad_hook([&](Tensor& leaf) { seen.push_back(vals(leaf.grad())); });
  (x * 2 + x * 3).sum().backward();  // fan-out: one call, after the sum was stored
  (x * 1).sum().backward();          // the second sees the accumulated 5 + 1
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_THAT(seen[0], ElementsAre(5, 5));
  EXPECT_THAT(seen[1], ElementsAre(6, 6));
  x.remove_hook(id);
  (x * 1).sum().backward();
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Hooks, PostAccumulateGradHookMayRewriteTheGradAndNeedsALeaf) {
  Tensor x = f64({1.0}, true);
  x.register_post_accumulate_grad_hook([](Tensor& leaf) { leaf.mutable_grad().mul_(0.5); });
  (x * 4).backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(2));
  Tensor h = x * 2;
  EXPECT_THROW(h.register_post_accumulate_grad_hook([](Tensor&) {}), AutogradError);
  Tensor n = f64({1.0}, false);
  EXPECT_THROW(n.register_post_accumulate_grad_hook([](Tensor&) {}), AutogradError);
}

}  // namespace
}  // namespace gradlab
