// jit::trace: the graph of a small function, its printout and DOT, replay on other inputs, the
// warning on host reads, and the re-trace check that catches a branch on data.

#include <gtest/gtest.h>

#include <gradlab/gradlab.hpp>
#include <gradlab/jit/trace.hpp>

using namespace gradlab;

namespace {

Tensor relu_affine(const Tensor& x) { return relu(x * 2 + 1); }

TEST(Trace, RecordsOpsShapesAndConstants) {
  Tensor x = randn({4, 3});
  jit::Graph g = jit::trace(relu_affine, x);
  // x * 2: the 2 is a 0-d constant expanded to x's shape; then + 1 likewise; then relu.
  EXPECT_EQ(g.kinds(), (std::vector<std::string>{"Expand", "Mul", "Expand", "Add", "Relu"}));
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.values[g.outputs[0]].shape, (Shape{4, 3}));
  EXPECT_EQ(g.values[g.outputs[0]].dtype, kFloat32);
  const std::string s = g.str();
  EXPECT_NE(s.find("constant(2.000000)"), std::string::npos) << s;
  EXPECT_NE(s.find("= Relu(%"), std::string::npos) << s;
  EXPECT_NE(s.find("Expand(%"), std::string::npos) << s;
  EXPECT_NE(s.find("[4, 3]"), std::string::npos) << s;
  const std::string d = g.dot();
  EXPECT_EQ(d.rfind("digraph", 0), 0u);
  EXPECT_NE(d.find("label=\"Relu\""), std::string::npos) << d;
  EXPECT_TRUE(g.warnings.empty());
}

TEST(Trace, ReplayMatchesEagerOnOtherInputs) {
  Tensor x = randn({5, 2}), y = randn({5, 2});
  jit::Graph g = jit::trace(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{tanh(in[0]) * in[1] - exp(in[1]).sum({1}, true), in[0] + 1};
      },
      {x, y});
  Tensor a = randn({5, 2}), b = randn({5, 2});
  std::vector<Tensor> r = g.replay({a, b});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(allclose(r[0], tanh(a) * b - exp(b).sum({1}, true)));
  EXPECT_TRUE(allclose(r[1], a + 1));
  EXPECT_FALSE(allclose(r[0], tanh(x) * y - exp(y).sum({1}, true)));  // not the example's result
}

TEST(Trace, ReplayRecordsAutograd) {
  nn::Linear fc(3, 2);
  jit::Graph g = jit::trace([&](const Tensor& x) { return sigmoid(fc->forward(x)); }, randn({4, 3}));
  // The parameters are constants held by handle: the replay sees updates and gets gradients.
  Tensor x = randn({4, 3});
  g.replay(x).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  Tensor gw = fc->weight.grad().clone();
  fc->weight.zero_grad();
  sigmoid(fc->forward(x)).sum().backward();
  EXPECT_TRUE(allclose(gw, fc->weight.grad()));
}

TEST(Trace, ReplayRejectsOtherShapes) {
  jit::Graph g = jit::trace(relu_affine, randn({4, 3}));
  try {
    g.replay(randn({2, 3}));
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected float32[4, 3], got float32[2, 3]"), std::string::npos)
        << e.what();
  }
}

// A branch on data: torch.jit.trace's classic trap.
Tensor branchy(const Tensor& x) {
  if (x.sum().item<float>() > 0) return x * 2;
  return -x;
}

TEST(Trace, WarnsOnHostReadsAndCheckInputsCatchTheBranch) {
  Tensor pos = ones({3}), neg = -ones({3});
  jit::TraceOptions quiet;
  quiet.print_warnings = false;
  jit::Graph g = jit::trace(branchy, pos, quiet);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("TracerWarning"), std::string::npos);
  // The frozen path is wrong on a negative input...
  EXPECT_FALSE(allclose(g.replay(neg), branchy(neg)));
  // ... and check_inputs says so.
  jit::TraceOptions check = quiet;
  check.check_inputs = {{neg}};
  try {
    jit::trace(branchy, pos, check);
    FAIL() << "no TracingCheckError";
  } catch (const jit::TracingCheckError& e) {
    EXPECT_NE(std::string(e.what()).find("graphs differed"), std::string::npos) << e.what();
  }
  // A branch-free function passes the same check.
  jit::TraceOptions ok = quiet;
  ok.check_inputs = {{neg}, {randn({3})}};
  EXPECT_NO_THROW(jit::trace(relu_affine, pos, ok));
}

TEST(Trace, CheckCatchesAFrozenValueWithTheSameOps) {
  // Same ops on both inputs, but a value read on the host is baked in as a constant.
  auto scaled = [](const Tensor& x) { return x * x.max().item<float>(); };
  jit::TraceOptions check;
  check.print_warnings = false;
  check.check_inputs = {{Tensor(full({3}, 5.0))}};
  try {
    jit::trace(scaled, ones({3}), check);
    FAIL() << "no TracingCheckError";
  } catch (const jit::TracingCheckError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
}

TEST(Trace, WarnsOnRandomDraws) {
  nn::Dropout drop(0.5);  // training mode: a new mask per call
  jit::TraceOptions quiet;
  quiet.print_warnings = false;
  jit::Graph g = jit::trace([&](const Tensor& x) { return drop(x); }, ones({100}), quiet);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("random numbers"), std::string::npos) << g.warnings[0];
  drop->eval();
  EXPECT_TRUE(jit::trace([&](const Tensor& x) { return drop(x); }, ones({100}), quiet).warnings.empty());
}

TEST(Trace, NoTraceNoHook) {
  // Outside a trace nothing is recorded: a second trace starts empty.
  relu_affine(randn({2}));
  jit::Graph g = jit::trace([](const Tensor& x) { return exp(x); }, randn({2}));
  EXPECT_EQ(g.kinds(), (std::vector<std::string>{"Exp"}));
}

}  // namespace
