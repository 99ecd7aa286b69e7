// Op<T> itself (ops/op.hpp): what Op::save's output index does, on a library op and on an op
// written as a user would write one; a backward override (testing/mutants.hpp) on that user op.

#include "gradlab/ops/op.hpp"

#include <cmath>

#include "common/check_helpers.hpp"
#include "gradlab/testing/gradcheck.hpp"
#include "gradlab/testing/mutants.hpp"

namespace gradlab {
namespace {

using autograd::GradList;
using autograd::Output;
using autograd::SavedTensor;
using checks::f64;
using checks::vals;
using ::testing::HasSubstr;

// (s, c) = (sin x, cos x)      dx = ds * c - dc * s      (saves both outputs: each is the other's
// derivative). CosSlot is the output index cos is saved under: 1 is right; 0 is what Op::save
// recorded before it took an index.
template <uint32_t CosSlot>
struct SinCos : autograd::Op<SinCos<CosSlot>> {
  static constexpr const char* kName = "SinCosBackward0";
  SavedTensor s_, c_;
  std::vector<Tensor> forward(const Tensor& x) {
    Tensor s = sin(x), c = cos(x);  // forward runs with grad mode off: not recorded
    this->save(s_, s, autograd::kOutput);
    this->save(c_, c, Output{CosSlot});
    return {s, c};
  }
  GradList backward(const GradList& g) { return {g[0] * c_.unpack() - g[1] * s_.unpack()}; }
};

// L = Σ (2 s + 3 c):  dL/dx = 2 cos x - 3 sin x,  d²L/dx² = -2 sin x - 3 cos x.
template <uint32_t CosSlot>
std::vector<double> second_derivative(const Tensor& x) {
  std::vector<Tensor> sc = autograd::record<SinCos<CosSlot>>(Site::current(), x);
  Tensor loss = sum(2.0 * sc[0] + 3.0 * sc[1]);
  Tensor dx =
      autograd::grad({loss}, {x}, {}, /*retain_graph=*/std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(dx.requires_grad()) << "create_graph: the backward through saved outputs is recorded";
  return vals(autograd::grad({sum(dx)}, {x})[0]);
}

TEST(OpSave, SecondOutputSavedWithItsIndexGetsTheRightSecondDerivative) {
  Tensor x = f64({0.3, 1.1, -0.7}).requires_grad_(true);
  const std::vector<double> got = second_derivative<1>(x);
  for (size_t i = 0; i < got.size(); ++i) {
    const double xi = x.to_vector<double>()[i];
    EXPECT_NEAR(got[i], -2 * std::sin(xi) - 3 * std::cos(xi), 1e-12) << "at x = " << xi;
  }
}

TEST(OpSave, SecondOutputSavedAsOutputZeroSendsItsGradientToTheFirst) {
  // What the index prevents: unpacked as output 0, cos routes the double-backward gradient it
  // receives (2, from L's 2 s term seen through dx) into sin's slot: d²L/dx² = (2 - 3) cos x.
  Tensor x = f64({0.3, 1.1, -0.7}).requires_grad_(true);
  const std::vector<double> got = second_derivative<0>(x);
  for (size_t i = 0; i < got.size(); ++i) {
    const double xi = x.to_vector<double>()[i];
    EXPECT_NEAR(got[i], (2.0 - 3.0) * std::cos(xi), 1e-12) << "at x = " << xi;
    EXPECT_GT(std::abs(got[i] - (-2 * std::sin(xi) - 3 * std::cos(xi))), 0.1);
  }
}

TEST(OpSave, IndicesOfMaxModifiedInPlaceAreNamedAsOutputOne) {
  // PyTorch: "... [torch.LongTensor [2]], which is output 1 of MaxBackward0, is at version 1 ..."
  Tensor x = f64({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}}).requires_grad_(true);
  auto [values, indices] = max(x, 1);
  indices.add_(Scalar(int64_t{0}));  // a write: bumps the version the saved indices were taken at
  try {
    values.sum().backward();
    FAIL() << "backward used indices modified in place";
  } catch (const AutogradError& e) {
    EXPECT_THAT(e.what(), HasSubstr("which is output 1 of MaxBackward0"));
    EXPECT_THAT(e.what(), HasSubstr("is at version 1; expected version 0"));
  }
}

TEST(OpOverride, AUsersOwnOpStructCanBeMutatedAndGradcheckCatchesIt) {
  const testing::TensorFn f = [](const TensorList& in) {
    return autograd::record<SinCos<1>>(Site::current(), in[0]);
  };
  const Tensor x = f64({0.3, 1.1, -0.7}).requires_grad_(true);
  const auto o = testing::GradcheckOptions().raise_exception(false);
  EXPECT_TRUE(testing::gradcheck(f, {x}, o).ok);
  // MUTANT: dx = ds * c + dc * s (the minus of d cos = -sin lost)
  testing::BackwardOverride<SinCos<1>> m([](SinCos<1>& op, const GradList& g) {
    return GradList{g[0] * op.c_.unpack() + g[1] * op.s_.unpack()};
  });
  const testing::GradcheckReport r = testing::gradcheck(f, {x}, o);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.text(), HasSubstr("output 1"))
      << "the wrong entries are those of cos: " << r.text();
}

}  // namespace
}  // namespace gradlab
