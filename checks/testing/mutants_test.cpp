// testing::BackwardOverride (testing/mutants.hpp): which nodes it reaches, nesting, and that
// gradcheck catches the wrong formula it installs. Uses the library's own op structs only (this
// executable's op-coverage test would count a new struct as one without a table row).

#include "gradlab/testing/mutants.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gradlab/gradlab.hpp"
#include "gradlab/testing/gradcheck.hpp"
#include "gradlab/ops/internal/elementwise.hpp"

namespace gradlab {
namespace {

using autograd::GradList;
using testing::BackwardOverride;

Tensor leaf() {
  return tensor({0.5, -1.0, 2.0}, TensorOptions().dtype(kFloat64)).requires_grad_(true);
}
std::vector<double> grad_of(const Tensor& y, const Tensor& x) {
  return autograd::grad({sum(y)}, {x})[0].to_vector<double>();
}
std::vector<double> exp_of(const Tensor& x) {
  std::vector<double> r;
  for (double v : x.to_vector<double>()) r.push_back(std::exp(v));
  return r;
}

// MUTANT: dx = 2 dy * y (a factor 2 too many)
GradList doubled(ops_detail::Exp& op, const GradList& g) { return {2.0 * g[0] * op.y_.unpack()}; }

TEST(BackwardOverride, ReachesTheNodesRecordedWhileItLives) {
  Tensor x = leaf();
  const std::vector<double> e = exp_of(x);
  Tensor before = exp(x);
  Tensor during;
  {
    BackwardOverride<ops_detail::Exp> m(doubled);
    during = exp(x);  // the public function, through its real forward and kernel
  }
  Tensor after = exp(x);
  const std::vector<double> g_before = grad_of(before, x), g_during = grad_of(during, x),
                            g_after = grad_of(after, x);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_DOUBLE_EQ(g_before[i], e[i]);
    EXPECT_DOUBLE_EQ(g_during[i], 2 * e[i]) << "the node keeps its override after the guard ends";
    EXPECT_DOUBLE_EQ(g_after[i], e[i]);
  }
}

TEST(BackwardOverride, ReachesOnlyItsOwnOpStruct) {
  Tensor x = leaf();
  BackwardOverride<ops_detail::Exp> m(doubled);
  const std::vector<double> g = grad_of(sin(x), x);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(g[i], std::cos(x.to_vector<double>()[i]));
}

TEST(BackwardOverride, TheLatestWinsAndTheOuterComesBack) {
  Tensor x = leaf();
  const std::vector<double> e = exp_of(x);
  BackwardOverride<ops_detail::Exp> outer(doubled);
  std::vector<double> inner_g;
  {
    // MUTANT: dx = -dy * y
    BackwardOverride<ops_detail::Exp> inner(
        [](ops_detail::Exp& op, const GradList& g) { return GradList{-g[0] * op.y_.unpack()}; });
    inner_g = grad_of(exp(x), x);
  }
  const std::vector<double> outer_g = grad_of(exp(x), x);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_DOUBLE_EQ(inner_g[i], -e[i]);
    EXPECT_DOUBLE_EQ(outer_g[i], 2 * e[i]);
  }
}

TEST(BackwardOverride, GradcheckCatchesTheMutantAndPassesTheRealBackwardCalledThroughIt) {
  const testing::TensorFn f = [](const TensorList& in) { return TensorList{exp(in[0])}; };
  const auto o = testing::GradcheckOptions().raise_exception(false);
  {
    BackwardOverride<ops_detail::Exp> m(doubled);
    const testing::GradcheckReport r = testing::gradcheck(f, {leaf()}, o);
    EXPECT_FALSE(r.ok) << r.text();
  }
  {
    // Not a mutant: the override hands the node to its own backward (the dispatch is transparent).
    BackwardOverride<ops_detail::Exp> same(
        [](ops_detail::Exp& op, const GradList& g) { return op.backward(g); });
    const testing::GradcheckReport r = testing::gradcheck(f, {leaf()}, o);
    EXPECT_TRUE(r.ok) << r.text();
  }
}

TEST(BackwardOverride, UnderCreateGraphTheMutantFormulaIsRecorded) {
  // dx = 2 y is recorded; the saved y leads back to this very node (an output saved by its op),
  // whose backward is still the mutant: d(2 y)/dx = 2 (2 y) = 4 exp(x).
  Tensor x = leaf();
  Tensor y;
  {
    BackwardOverride<ops_detail::Exp> m(doubled);
    y = exp(x);
  }
  Tensor dx = autograd::grad({sum(y)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  const std::vector<double> d2 = autograd::grad({sum(dx)}, {x})[0].to_vector<double>();
  const std::vector<double> e = exp_of(x);
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(d2[i], 4 * e[i], 1e-12);
}

}  // namespace
}  // namespace gradlab
