// Graph dumps (Graphviz DOT, one-line summaries) and anomaly mode.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(GraphDump, DotNamesNodesShapesAndLeaves) {
  Tensor w = zeros({2, 3}, requires_grad());
  Tensor x = ones({4, 2});
  Tensor loss = matmul(x, w).relu().sum();
  const std::string dot = autograd::to_dot(loss, "tiny");
  EXPECT_THAT(dot, HasSubstr("digraph \"tiny\""));
  EXPECT_THAT(dot, HasSubstr("SumBackward0"));
  EXPECT_THAT(dot, HasSubstr("ReluBackward0"));
  EXPECT_THAT(dot, HasSubstr("MmBackward0"));  // a 2-D matmul, as PyTorch names it
  EXPECT_THAT(dot, HasSubstr("leaf [2, 3] float32\\nrequires_grad"));  // the parameter
  EXPECT_THAT(dot, HasSubstr("[4, 3]"));                                // an edge's shape
  EXPECT_THAT(dot, HasSubstr("output [] float32"));
  EXPECT_THAT(dot, HasSubstr("checks/autograd/graph_test.cpp"));        // creation sites
  EXPECT_THAT(dot, HasSubstr("->"));
  EXPECT_THAT(dot, Not(HasSubstr("leaf [4, 2]")));  // x does not require grad: not in the graph
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_THAT(autograd::to_dot(x), HasSubstr("no graph"));
}

TEST(GraphDump, SummaryAndNodeCount) {
  Tensor a = f64({1.0, 2.0}, true), b = f64({3.0, 4.0}, true);
  Tensor y = (a * b + a).sum();
  EXPECT_EQ(autograd::count_nodes(y), 5u);  // Sum, Add, Mul, AccumulateGrad(a), AccumulateGrad(b)
  const std::string s = autograd::graph_summary(y);
  EXPECT_THAT(s, HasSubstr("SumBackward0 <- AddBackward0"));
  EXPECT_THAT(s, HasSubstr("AddBackward0 <- MulBackward0, AccumulateGrad[2]"));
  EXPECT_EQ(autograd::count_nodes(f64({1.0})), 0u);
}

TEST(Anomaly, ForwardNamesTheOpAndTheCallSite) {
  Tensor x = f64({-1.0, 4.0}, true);
  EXPECT_TRUE(log(x).defined());  // NaN is allowed when anomaly mode is off
  autograd::DetectAnomalyGuard guard;
  EXPECT_TRUE(autograd::is_anomaly_enabled());
  const int line = __LINE__ + 1;
  EXPECT_THROW_MSG(log(x), autograd::AnomalyError, "anomaly detected in forward: Log",
                   "graph_test.cpp:" + std::to_string(line), "nan 1", "from finite inputs");
}

TEST(Anomaly, ForwardNamesTheOpWithoutAnyBackwardNSuffix) {
  // Pow(Tensor, Tensor) is PowBackward1 and sum over dims is SumBackward1: both print as the op.
  Tensor x = f64({0.0, 2.0}, true);
  Tensor big = tensor({3e38f, 3e38f}, requires_grad());
  autograd::DetectAnomalyGuard guard;
  EXPECT_THROW_MSG(pow(x, f64({-1.0, 1.0})), autograd::AnomalyError, "anomaly detected in forward: Pow (called at");
  EXPECT_THROW_MSG(sum(big, {0}), autograd::AnomalyError, "anomaly detected in forward: Sum (called at",
                   "+inf 1");
}

TEST(Anomaly, BackwardNamesTheNodeThatMadeTheNonFiniteGradient) {
  Tensor x = f64({0.0, 4.0}, true);
  Tensor y = sqrt(x).sum();  // d√x/dx = 1 / (2√x) is inf at 0
  autograd::DetectAnomalyGuard guard;
  EXPECT_THROW_MSG(y.backward(), autograd::AnomalyError, "anomaly detected in backward: SqrtBackward0",
                   "+inf 1", "graph_test.cpp");
}

TEST(Anomaly, GuardRestoresThePreviousMode) {
  EXPECT_FALSE(autograd::is_anomaly_enabled());
  {
    autograd::DetectAnomalyGuard g;
    EXPECT_TRUE(autograd::is_anomaly_enabled());
  }
  EXPECT_FALSE(autograd::is_anomaly_enabled());
}

}  // namespace
}  // namespace gradlab
