// The fused derivative of every formula, read from the op traits: for each formula of the X-macro
// (backend/math/elementwise.hpp) the op struct that fuses it is found by its kFormula trait, its
// derivative template is run on registers (jit's symbolic backward) and the fused backward program
// is compared, in float64, with central differences of the fused forward program.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include <gradlab/backend/fused.hpp>
#include <gradlab/gradlab.hpp>
#include <gradlab/jit/plan.hpp>
#include <gradlab/ops/op.hpp>

using namespace gradlab;

namespace {

using autograd::Formula;
using autograd::Fusion;
using autograd::OpInfo;
using kern::FusedProgram;
using kern::FusedStep;

// The registered op struct that fuses formula f, or null.
const OpInfo* fusing_op(Formula f) {
  static const std::vector<OpInfo> infos = autograd::registered_op_infos();
  for (const auto& i : infos)
    if (i.formula == f && i.fusion == Fusion::Elementwise) return &i;
  return nullptr;
}

// A region of one step over n inputs: y = f(x) or f(a, b), with parameters p = 0.5, q = 2.
jit::Region one_step(Formula f, const OpInfo* op) {
  jit::Region r;
  r.program.shape = {7};
  r.program.dtype = kFloat64;
  const int n = f.kind == Formula::Kind::Binary ? 2 : 1;
  for (int i = 0; i < n; ++i) {
    FusedStep in;
    in.kind = FusedStep::Kind::Input, in.index = i;
    r.program.steps.push_back(in);
    r.step_ops.push_back(nullptr);
  }
  FusedStep s;
  s.kind = n == 2 ? FusedStep::Kind::Binary : FusedStep::Kind::Unary;
  s.op = f.op, s.a = 0, s.b = n == 2 ? 1 : -1, s.p = 0.5, s.q = 2;
  r.program.steps.push_back(s);
  r.step_ops.push_back(op);
  r.program.outputs = {{n, kern::FusedOutput::Reduce::None, 1}};
  return r;
}

// d(sum(w * f(inputs)))/d(input i) by the fused backward vs by central differences. Inputs lie in
// [0.6, 1.4], away from every kink (relu at 0, clamp at 0.5 and 2, ties of maximum / minimum).
void expect_derivative_matches(const std::string& name, Formula f) {
  SCOPED_TRACE(name);
  const OpInfo* op = fusing_op(f);
  ASSERT_NE(op, nullptr);
  const jit::Region r = one_step(f, op);
  const size_t n = f.kind == Formula::Kind::Binary ? 2 : 1;
  std::vector<Tensor> in = {tensor({0.61, 0.7, 0.83, 0.95, 1.08, 1.2, 1.37}, dtype(kFloat64)),
                            tensor({1.33, 0.66, 1.17, 0.74, 1.26, 0.9, 0.64}, dtype(kFloat64))};
  in.resize(n);
  const Tensor w = tensor({0.3, -1.1, 0.8, 1.9, -0.4, 0.6, -1.3}, dtype(kFloat64));
  std::vector<size_t> wanted;
  for (size_t i = 0; i < n; ++i) wanted.push_back(i);
  std::vector<Tensor> bin = in;
  bin.push_back(w);
  const std::vector<Tensor> grads = kern::run_fused(jit::backward_program(r, n, wanted), bin);
  ASSERT_EQ(grads.size(), n);
  const double h = 1e-6;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<double> x = in[i].to_vector<double>(), g = grads[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) {
      auto at = [&](double v) {
        std::vector<double> moved = x;
        moved[k] = v;
        std::vector<Tensor> args = in;
        args[i] = from_vector(moved, {static_cast<int64_t>(moved.size())}, dtype(kFloat64));
        return (kern::run_fused(r.program, args)[0] * w).sum().item<double>();
      };
      const double numeric = (at(x[k] + h) - at(x[k] - h)) / (2 * h);
      EXPECT_NEAR(g[k], numeric, 1e-6 * (1 + std::abs(numeric))) << "input " << i << ", element " << k;
    }
  }
}

// Formulas no differentiable op fuses (with why): every other formula must have a fusing op.
const std::set<std::string> kNoFusingOp = {
    "Sign",  // sign(x) has no gradient; no op struct records it
    "Pow",   // Pow's kFusion is None (see its struct)
};

TEST(FusedDerivative, EveryFormulaOfTheXMacroMatchesCentralDifferences) {
  int checked = 0;
  auto check = [&](const char* name, Formula f) {
    if (kNoFusingOp.count(name)) {
      EXPECT_EQ(fusing_op(f), nullptr) << name << " fuses now: remove it from kNoFusingOp";
      return;
    }
    EXPECT_NE(fusing_op(f), nullptr) << name << ": no op struct with this kFormula fuses it";
    if (fusing_op(f)) expect_derivative_matches(name, f), ++checked;
  };
#define GRADLAB_UNARY_CHECK_(name, kind, formula) check(#name, math::Unary::name);
#define GRADLAB_BINARY_CHECK_(name, kind, formula) check(#name, math::Binary::name);
  GRADLAB_UNARY_OPS(GRADLAB_UNARY_CHECK_)
  GRADLAB_BINARY_OPS(GRADLAB_BINARY_CHECK_)
#undef GRADLAB_UNARY_CHECK_
#undef GRADLAB_BINARY_CHECK_
  EXPECT_GE(checked, 20);
}

// The check can fail: a derivative that is off (here, the fused backward of a region whose step is
// exp but whose op is log's: dx = dy / x instead of dy * y) is caught.
TEST(FusedDerivative, AWrongDerivativeIsCaught) {
  const OpInfo* log_op = fusing_op(math::Unary::Log);
  ASSERT_NE(log_op, nullptr);
  jit::Region r = one_step(math::Unary::Exp, log_op);
  std::vector<Tensor> in = {tensor({0.7, 1.3}, dtype(kFloat64))};
  r.program.shape = {2};
  const Tensor w = ones({2}, dtype(kFloat64));
  const Tensor g = kern::run_fused(jit::backward_program(r, 1, {0}), {in[0], w})[0];
  EXPECT_FALSE(allclose(g, exp(in[0]), 1e-6, 1e-8)) << "a wrong derivative went unnoticed";
  EXPECT_TRUE(allclose(g, 1 / in[0], 1e-12, 1e-12));
}

}  // namespace
