// binary_cross_entropy (ops/ops.hpp), F::binary_cross_entropy and nn::BCELoss: values against a
// float64 loop (each reduction, with and without a broadcast weight), PyTorch's clamp at -100,
// the int64 reduction argument from kSum / Reduction::Sum, gradients, errors.

#include <cmath>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

namespace F = nn::functional;
using checks::d64;
using checks::grad_ok;
using checks::gradgrad_ok;
using checks::Near;
using checks::vals;

// -w (y log x + (1 - y) log(1 - x)) per element; w indexed by the trailing dim (or 1).
std::vector<double> bce_ref(const std::vector<double>& x, const std::vector<double>& y,
                            const std::vector<double>& w) {
  std::vector<double> l;
  for (size_t i = 0; i < x.size(); ++i) {
    const double wi = w.empty() ? 1.0 : w[i % w.size()];
    l.push_back(-wi * (y[i] * std::log(x[i]) + (1 - y[i]) * std::log(1 - x[i])));
  }
  return l;
}
double total(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}

const std::vector<double> kX = {0.1, 0.7, 0.45, 0.99, 0.3, 0.6};
const std::vector<double> kY = {0.0, 1.0, 0.5, 1.0, 0.2, 0.0};
const std::vector<double> kW = {0.5, 2.0, 1.5};

TEST(BinaryCrossEntropy, MatchesAFloat64LoopForEachReductionAndWeight) {
  Tensor x = d64(kX, {2, 3}), y = d64(kY, {2, 3}), w = d64(kW, {3});
  const std::vector<double> plain = bce_ref(kX, kY, {}), weighted = bce_ref(kX, kY, kW);
  EXPECT_THAT(vals(binary_cross_entropy(x, y, {}, 0)), Near(plain, 1e-12));
  EXPECT_NEAR(binary_cross_entropy(x, y).item<double>(), total(plain) / 6, 1e-12);
  EXPECT_NEAR(binary_cross_entropy(x, y, {}, 2).item<double>(), total(plain), 1e-12);
  // weight [3] broadcasts over the rows; the mean still divides by the element count
  EXPECT_THAT(vals(binary_cross_entropy(x, y, w, 0)), Near(weighted, 1e-12));
  EXPECT_NEAR(binary_cross_entropy(x, y, w).item<double>(), total(weighted) / 6, 1e-12);
  Tensor wfull = d64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_NEAR(binary_cross_entropy(x, y, wfull, 2).item<double>(),
              total(bce_ref(kX, kY, {1, 2, 3, 4, 5, 6})), 1e-12);
  Tensor xf = x.to(kFloat32);
  EXPECT_EQ(binary_cross_entropy(xf, y.to(kFloat32)).dtype(), kFloat32);
  EXPECT_NEAR(binary_cross_entropy(xf, y.to(kFloat32)).item<double>(), total(plain) / 6, 1e-5);
}

TEST(BinaryCrossEntropy, LogsAreClampedAtMinus100AsInPyTorch) {
  Tensor x = d64({0.0, 1.0, 0.0, 1.0}, {4}), y = d64({1.0, 0.0, 0.0, 1.0}, {4});
  EXPECT_THAT(vals(binary_cross_entropy(x, y, {}, 0)), Near({100.0, 100.0, 0.0, 0.0}, 1e-12));
}

TEST(BinaryCrossEntropy, ReductionEnumConvertsToTheInt64Argument) {
  Tensor x = d64(kX, {6}), y = d64(kY, {6});
  const double s = binary_cross_entropy(x, y, {}, 2).item<double>();
  EXPECT_EQ(binary_cross_entropy(x, y, {}, kSum).item<double>(), s);
  EXPECT_EQ(binary_cross_entropy(x, y, {}, Reduction::Sum).item<double>(), s);
  EXPECT_EQ(mse_loss(x, y, kSum).item<double>(), mse_loss(x, y, 2).item<double>());
  EXPECT_EQ(binary_cross_entropy(x, y, {}, kNone).sizes(), (Shape{6}));
  static_assert(static_cast<int64_t>(kMean) == 1 && kNone == 0 && Reduction::Sum == 2);
}

TEST(BinaryCrossEntropy, GradientsFirstAndSecondOrder) {
  Generator g(3);
  Tensor x = (rand({3, 4}, dtype(kFloat64), &g) * 0.8 + 0.1).detach().requires_grad_();
  Tensor y = rand({3, 4}, dtype(kFloat64), &g).requires_grad_();
  Tensor w = (rand({4}, dtype(kFloat64), &g) + 0.5).detach().requires_grad_();
  for (int64_t r : {0, 1, 2}) {
    auto f = [r](const TensorList& in) { return binary_cross_entropy(in[0], in[1], in[2], r); };
    EXPECT_TRUE(grad_ok(f, {x, y, w}, "binary_cross_entropy reduction " + std::to_string(r)));
    EXPECT_TRUE(gradgrad_ok(f, {x, y, w}, "binary_cross_entropy reduction " + std::to_string(r)));
  }
  // After a sigmoid, d loss / d logit = (sigmoid(z) - y) / n: the pairing DCGAN relies on.
  Tensor z = d64({-1.5, 0.0, 0.3, 2.0}, {4}, true), t = d64({0, 1, 1, 0}, {4});
  binary_cross_entropy(sigmoid(z), t).backward();
  EXPECT_THAT(vals(z.grad()), Near(vals((sigmoid(z.detach()) - t) / 4.0), 1e-12));
}

TEST(BinaryCrossEntropy, Errors) {
  Tensor y = d64({0, 1}, {2});
  const char* op = "binary_cross_entropy:";
  EXPECT_THROW_MSG(binary_cross_entropy(d64({0.5, 1.2}, {2}), y), ValueError, op,
                   "between 0 and 1", "binary_cross_entropy_with_logits");
  EXPECT_THROW_MSG(binary_cross_entropy(d64({-0.1, 0.5}, {2}), y), ValueError, op,
                   "between 0 and 1");
  EXPECT_THROW_MSG(binary_cross_entropy(d64({NAN, 0.5}, {2}), y), ValueError, op,
                   "between 0 and 1");
  EXPECT_THROW_MSG(binary_cross_entropy(d64({0.5, 0.5}, {2, 1}), y), ShapeError, op,
                   "shapes differ", "[2, 1]");
  EXPECT_THROW_MSG(binary_cross_entropy(d64({0.5, 0.5}, {2}), y, d64({1, 2, 3}, {3})),
                   ShapeError, op, "weight must broadcast", "[3]");
  EXPECT_THROW_MSG(binary_cross_entropy(d64({0.5, 0.5}, {2}), y, {}, 3), ValueError, op,
                   "unknown reduction");
}

TEST(BinaryCrossEntropy, FunctionalOptionsAndTheBCELossModule) {
  Tensor x = d64(kX, {2, 3}), y = d64(kY, {2, 3}), w = d64(kW, {3});
  const double s = total(bce_ref(kX, kY, kW));
  EXPECT_NEAR(F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().weight(w).reduction(
                                                  kSum))
                  .item<double>(),
              s, 1e-12);
  EXPECT_NEAR(F::binary_cross_entropy(x, y).item<double>(), total(bce_ref(kX, kY, {})) / 6,
              1e-12);
  nn::BCELoss loss(nn::BCELossOptions().weight(w).reduction(kSum));
  EXPECT_NEAR(loss(x, y).item<double>(), s, 1e-12);
  EXPECT_EQ(loss->named_buffers().size(), 1u);
  std::ostringstream os;
  loss->pretty_print(os);
  EXPECT_EQ(os.str(), "BCELoss(reduction=sum, weight=[3])");
  nn::BCELoss plain;
  EXPECT_NEAR(plain(x, y).item<double>(), total(bce_ref(kX, kY, {})) / 6, 1e-12);
  EXPECT_TRUE(plain->named_buffers().empty());
}

}  // namespace
}  // namespace gradlab
