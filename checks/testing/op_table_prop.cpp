// Properties over the whole op table, one test per row: gradcheck in float64 (full Jacobian,
// random upstream gradient, Taylor order, linearity, determinism, inputs untouched), forward
// against the row's reference, and second derivatives. The quick run (~100 cases per row) is part
// of the normal suite; the *Slow suites run ten times more (ctest label `slow`).
// Every failure prints the shrunk case, the report and the line that reruns it with the seed.

#include "prop_support.hpp"

namespace {

using namespace proptest;

std::vector<std::string> rows_where(const std::function<bool(const OpSpec&)>& keep) {
  std::vector<std::string> r;
  for (const auto& s : op_table())
    if (keep(s)) r.push_back(s.name);
  return r;
}
std::vector<std::string> all_rows() {
  return rows_where([](const OpSpec&) { return true; });
}
std::vector<std::string> rows_with_reference() {
  return rows_where([](const OpSpec& s) { return static_cast<bool>(s.reference); });
}
std::vector<std::string> second_order_rows() {
  return rows_where([](const OpSpec& s) { return s.second_order; });
}

class Gradcheck : public ::testing::TestWithParam<std::string> {};
TEST_P(Gradcheck, Float64) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { gradcheck_property(spec); }, 100);
}
INSTANTIATE_TEST_SUITE_P(OpTable, Gradcheck, ::testing::ValuesIn(all_rows()), row_param_name);

class Reference : public ::testing::TestWithParam<std::string> {};
TEST_P(Reference, SmallCases) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { reference_property(spec); }, 100);
}
INSTANTIATE_TEST_SUITE_P(OpTable, Reference, ::testing::ValuesIn(rows_with_reference()),
                         row_param_name);

class Gradgrad : public ::testing::TestWithParam<std::string> {};
TEST_P(Gradgrad, SecondOrder) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { gradgrad_property(spec); }, 20);
}
INSTANTIATE_TEST_SUITE_P(OpTable, Gradgrad, ::testing::ValuesIn(second_order_rows()),
                         row_param_name);

// ---- deep runs (label slow) ------------------------------------------------------------------
class GradcheckSlow : public ::testing::TestWithParam<std::string> {};
TEST_P(GradcheckSlow, Float64) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { gradcheck_property(spec); }, 1000);
}
INSTANTIATE_TEST_SUITE_P(OpTable, GradcheckSlow, ::testing::ValuesIn(all_rows()), row_param_name);

class GradgradSlow : public ::testing::TestWithParam<std::string> {};
TEST_P(GradgradSlow, SecondOrder) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { gradgrad_property(spec); }, 200);
}
INSTANTIATE_TEST_SUITE_P(OpTable, GradgradSlow, ::testing::ValuesIn(second_order_rows()),
                         row_param_name);

// A recorded flaky run, replayed: RC_PARAMS="seed=10628504319778601157" made
// slow.OpTable/GradgradSlow.SecondOrder/tanh fail on [[1.0011, 0.0417], [2.4729, -1.4951]]
// ("shrinks at order 1.42 ... expected 2": the Taylor fit read rounding noise).
TEST(OpTableReplay, TanhSecondOrderSeed10628504319778601157) {
  const OpSpec& spec = op_spec("tanh");
  check_property([&] { gradgrad_property(spec); }, 200, 10628504319778601157ULL);
}

}  // namespace
