// Algebraic laws of the table's ops (values and gradients), and random graphs of table ops whose
// gradient is checked as a whole and, on failure, op by op to name the first wrong one.

#include "prop_support.hpp"

namespace {

using namespace proptest;

RC_GTEST_PROP(Laws, ReshapeRoundTrip, ()) { law_reshape_roundtrip(table_ops()); }
RC_GTEST_PROP(Laws, PermuteInverse, ()) { law_permute_inverse(table_ops()); }
RC_GTEST_PROP(Laws, SoftmaxShiftInvariance, ()) { law_softmax_shift(table_ops()); }
RC_GTEST_PROP(Laws, XPlusXGivesTwo, ()) { law_add_self(table_ops()); }
RC_GTEST_PROP(Laws, SumOfExpandScales, ()) { law_sum_expand(table_ops()); }
RC_GTEST_PROP(ComposedGraph, GradientOfRandomGraphs, ()) { composed_property(table_ops()); }

TEST(ComposedGraphSlow, GradientOfRandomGraphs) {
  check_property([] { composed_property(table_ops()); }, 1000);
}

// The fan-out pseudo-row (x used twice) also passes gradcheck: the engine adds both gradients.
RC_GTEST_PROP(Laws, FanOutGradcheck, ()) { gradcheck_property(fan_out_spec()); }

}  // namespace
