// At least one finite-difference check per op family, in float64 (the full property-based
// gradcheck lives in src/gradlab/testing; this is the unit-level safety net).

#include "common/check_helpers.hpp"
#include "common/finite_diff.hpp"

namespace gradlab {
namespace {

namespace F = nn::functional;
using checks::grads_match_finite_diff;
using checks::i64;

// A float64 leaf with values uniform in [lo, hi), from its own seeded stream.
Tensor leaf(const Shape& shape, double lo = -1, double hi = 1, uint64_t seed = 1) {
  Generator g(seed);
  Tensor t = rand(shape, kFloat64, &g) * (hi - lo) + lo;
  return t.detach().requires_grad_();
}

// Values at least 0.1 away from 0 (kinks of abs, relu, leaky_relu, sign).
Tensor away_from_zero(const Shape& shape, uint64_t seed = 2) {
  Tensor t = leaf(shape, 0.1, 1.0, seed).detach();
  Tensor s = where(leaf(shape, -1, 1, seed + 100).detach() > 0, ones(shape, kFloat64), -1.0);
  return (t * s).detach().requires_grad_();
}

#define EXPECT_GRAD(f, ...) EXPECT_TRUE(grads_match_finite_diff(f, {__VA_ARGS__}))

TEST(FiniteDiff, ElementwiseUnary) {
  Tensor x = leaf({2, 3}), p = leaf({2, 3}, 0.5, 2.0), z = away_from_zero({2, 3});
  EXPECT_GRAD([](const TensorList& v) { return exp(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return log(v[0]); }, p);
  EXPECT_GRAD([](const TensorList& v) { return sqrt(v[0]); }, p);
  EXPECT_GRAD([](const TensorList& v) { return sin(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return cos(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return tanh(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return sigmoid(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return erf(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return gelu(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return -v[0]; }, x);
  EXPECT_GRAD([](const TensorList& v) { return abs(v[0]); }, z);
  EXPECT_GRAD([](const TensorList& v) { return relu(v[0]); }, z);
  EXPECT_GRAD([](const TensorList& v) { return leaky_relu(v[0], 0.2); }, z);
  EXPECT_GRAD([](const TensorList& v) { return clamp(v[0], -0.05, 0.05); }, z);  // all outside: grad 0
  EXPECT_GRAD([](const TensorList& v) { return clamp(v[0], -2.0, 2.0); }, x);    // all inside: grad 1
  EXPECT_GRAD([](const TensorList& v) { return pow(v[0], 3); }, x);
  EXPECT_GRAD([](const TensorList& v) { return pow(v[0], 2); }, x);
  EXPECT_GRAD([](const TensorList& v) { return pow(v[0], 0.5); }, p);
  EXPECT_GRAD([](const TensorList& v) { return pow(v[0], -1.5); }, p);
  EXPECT_GRAD([](const TensorList& v) { return 2 * v[0] - 1.0; }, x);
  EXPECT_GRAD([](const TensorList& v) { return 1.0 / v[0]; }, p);
}

TEST(FiniteDiff, BinaryWithBroadcasting) {
  Tensor a = leaf({2, 3}), b = leaf({3}, -1, 1, 7), c = leaf({2, 1}, 0.5, 2.0, 8), pa = leaf({2, 3}, 0.5, 2.0, 9);
  EXPECT_GRAD([](const TensorList& v) { return v[0] + v[1]; }, a, b);
  EXPECT_GRAD([](const TensorList& v) { return v[0] - v[1]; }, b, a);
  EXPECT_GRAD([](const TensorList& v) { return v[0] * v[1]; }, a, c);
  EXPECT_GRAD([](const TensorList& v) { return v[0] / v[1]; }, a, c);
  EXPECT_GRAD([](const TensorList& v) { return v[1] / v[0]; }, c, b);
  EXPECT_GRAD([](const TensorList& v) { return pow(v[0], v[1]); }, pa, b);  // d/dbase and d/dexponent
  EXPECT_GRAD([](const TensorList& v) { return maximum(v[0], v[1]); }, a, b);
  EXPECT_GRAD([](const TensorList& v) { return minimum(v[0], v[1]); }, a, b);
  Tensor mask = tensor({true, false, true});
  EXPECT_GRAD([&](const TensorList& v) { return where(mask, v[0], v[1]); }, a, c);
  EXPECT_GRAD([&](const TensorList& v) { return masked_fill(v[0], mask, 3.0); }, a);
  EXPECT_GRAD([](const TensorList& v) { return v[0] * v[0] * v[1]; }, b, b);  // one leaf used 3 times
}

TEST(FiniteDiff, Reductions) {
  Tensor x = leaf({3, 4}), x3 = leaf({2, 3, 4}, -1, 1, 11);
  EXPECT_GRAD([](const TensorList& v) { return sum(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return sum(v[0], {0, 2}, true); }, x3);
  EXPECT_GRAD([](const TensorList& v) { return mean(v[0], {1}); }, x3);
  EXPECT_GRAD([](const TensorList& v) { return mean(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return max(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return amin(v[0], {0, 2}); }, x3);
  EXPECT_GRAD([](const TensorList& v) { return std::get<0>(max(v[0], 1)); }, x);
  EXPECT_GRAD([](const TensorList& v) { return std::get<0>(min(v[0], 0, true)); }, x);
  EXPECT_GRAD([](const TensorList& v) { return var(v[0], {1}); }, x);
  EXPECT_GRAD([](const TensorList& v) { return std(v[0], {0}, 0, true); }, x);
  EXPECT_GRAD([](const TensorList& v) { return logsumexp(v[0], {1}); }, x);
  EXPECT_GRAD([](const TensorList& v) { return norm(v[0]); }, x);
  EXPECT_GRAD([](const TensorList& v) { return norm(v[0], 3.0); }, x);
}

TEST(FiniteDiff, MaxTiesShareTheGradient) {
  // max of [1, 3, 3]: PyTorch's amax gives each tied element half of the gradient.
  Tensor x = checks::f64({1.0, 3.0, 3.0}, true);
  max(x).backward();
  EXPECT_THAT(checks::vals(x.grad()), ::testing::ElementsAre(0, 0.5, 0.5));
  // max along a dim routes the gradient to the (first) arg index only
  Tensor y = checks::f64({{1.0, 3.0, 3.0}}, true);
  std::get<0>(max(y, 1)).sum().backward();
  EXPECT_THAT(checks::vals(y.grad()), ::testing::ElementsAre(0, 1, 0));
}

TEST(FiniteDiff, Matmul) {
  Tensor a = leaf({2, 3}), b = leaf({3, 4}, -1, 1, 3), v = leaf({3}, -1, 1, 4);
  Tensor ba = leaf({2, 2, 3}, -1, 1, 5), bb = leaf({3, 1, 3, 2}, -1, 1, 6);
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[0], t[1]); }, a, b);
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[0], t[1]); }, v, v);     // dot
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[0], t[1]); }, a, v);     // matrix @ vector
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[1], t[0]); }, b, v);     // vector @ matrix
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[0], t[1]); }, ba, bb);   // broadcast batch
  EXPECT_GRAD([](const TensorList& t) { return matmul(t[0], t[1].t()); }, a, a);  // transposed operand
  EXPECT_GRAD([](const TensorList& t) { return bmm(t[0], t[0].transpose(1, 2)); }, ba);
}

TEST(FiniteDiff, ViewsAndMovement) {
  Tensor x = leaf({2, 3, 4}), y = leaf({2, 3}, -1, 1, 12), r = leaf({3}, -1, 1, 13);
  EXPECT_GRAD([](const TensorList& v) { return v[0].reshape({4, 6}) * 2; }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].transpose(0, 2).reshape({-1}); }, x);  // reshape copies
  EXPECT_GRAD([](const TensorList& v) { return v[0].permute({1, 2, 0}); }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].slice(2, 0, 4, 3); }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].select(1, 2) * v[0].select(1, 0); }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].narrow(0, 1, 1); }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].unsqueeze(1).expand({3, 5}) * v[0].unsqueeze(1); }, r);
  EXPECT_GRAD([](const TensorList& v) { return v[0].unsqueeze(0).squeeze(); }, y);
  EXPECT_GRAD([](const TensorList& v) { return v[0].flatten(); }, x);
  EXPECT_GRAD([](const TensorList& v) { return cat({v[0], v[1] * 3, v[0]}, 1); }, y, y);
  EXPECT_GRAD([](const TensorList& v) { return stack({v[0], v[1]}, -1); }, y, y);
  EXPECT_GRAD([](const TensorList& v) { return v[0].t().contiguous().clone(); }, y);
  EXPECT_GRAD([](const TensorList& v) { return v[0].to(kFloat32).to(kFloat64) * 0 + v[0]; }, y);
}

TEST(FiniteDiff, NonContiguousInputs) {
  // kernels see transposed, sliced and expanded operands (strides other than row-major)
  Tensor x = leaf({4, 3}), w = leaf({4, 5}, -1, 1, 41), r = leaf({3}, -1, 1, 42);
  EXPECT_GRAD([](const TensorList& v) { return exp(v[0].t()) * v[0].t(); }, x);
  EXPECT_GRAD([](const TensorList& v) { return matmul(v[0].t(), v[1]); }, x, w);               // Aᵀ B
  EXPECT_GRAD([](const TensorList& v) { return matmul(v[1].t(), v[0].slice(1, 0, 3, 2)); }, x, w);  // strided cols
  EXPECT_GRAD([](const TensorList& v) { return matmul(v[0].slice(0, 0, 4, 2), v[1].t().slice(0, 0, 3)); }, x, w);
  EXPECT_GRAD([](const TensorList& v) { return matmul(v[1].expand({4, 3}), v[0].t()); }, x, r);  // stride-0 rows
  EXPECT_GRAD([](const TensorList& v) { return sum(v[0].t(), {1}) + amax(v[0].t(), {0}).sum(); }, x);
  EXPECT_GRAD([](const TensorList& v) { return softmax(v[0].t(), 1); }, x);
  EXPECT_GRAD([](const TensorList& v) { return gather(v[0].t(), 1, tensor({{3, 0}, {1, 1}, {0, 2}})); }, x);
  EXPECT_GRAD([](const TensorList& v) { return index_select(v[0].t(), 0, i64({2, 2})); }, x);
  EXPECT_GRAD([](const TensorList& v) { return cat({v[0].t(), v[0].slice(0, 1, 4).t()}, 1); }, x);
  EXPECT_GRAD([](const TensorList& v) { return v[0].t().reshape({2, 6}); }, x);
}

TEST(FiniteDiff, Indexing) {
  Tensor x = leaf({3, 4}), src = leaf({3, 2}, -1, 1, 21), w = leaf({5, 2}, -1, 1, 22);
  Tensor src4 = leaf({3, 4}, -1, 1, 23);
  Tensor idx = i64({2, 0, 2});
  Tensor gidx = tensor({{3, 0}, {1, 1}, {0, 2}});
  EXPECT_GRAD([&](const TensorList& v) { return index_select(v[0], 1, idx); }, x);
  EXPECT_GRAD([&](const TensorList& v) { return index_select(v[0], 0, idx); }, x);
  EXPECT_GRAD([&](const TensorList& v) { return gather(v[0], 1, gidx); }, x);
  EXPECT_GRAD([&](const TensorList& v) { return scatter_add(v[0], 1, gidx, v[1]); }, x, src);
  EXPECT_GRAD([&](const TensorList& v) { return index_add(v[0], 0, idx, v[1]); }, x, src4);
  EXPECT_GRAD([&](const TensorList& v) { return embedding(v[0], tensor({{4, 0}, {4, 4}})); }, w);
}

TEST(FiniteDiff, SoftmaxAndLosses) {
  Tensor x = leaf({3, 4}, -2, 2), t = leaf({3, 4}, -1, 1, 31), prob = leaf({3, 4}, 0.1, 0.9, 32);
  Tensor y = i64({3, 0, 1});
  EXPECT_GRAD([](const TensorList& v) { return softmax(v[0], 1); }, x);
  EXPECT_GRAD([](const TensorList& v) { return softmax(v[0], 0); }, x);
  EXPECT_GRAD([](const TensorList& v) { return log_softmax(v[0], -1); }, x);
  EXPECT_GRAD([&](const TensorList& v) { return F::cross_entropy(v[0], y); }, x);
  EXPECT_GRAD([&](const TensorList& v) {
    return F::cross_entropy(v[0], i64({3, -100, 1}), F::CrossEntropyFuncOptions().label_smoothing(0.1));
  }, x);
  EXPECT_GRAD([&](const TensorList& v) {
    return F::cross_entropy(v[0], y, F::CrossEntropyFuncOptions().reduction(F::kNone));
  }, x);
  EXPECT_GRAD([&](const TensorList& v) { return F::nll_loss(log_softmax(v[0], 1), y); }, x);
  EXPECT_GRAD([](const TensorList& v) { return F::mse_loss(v[0], v[1]); }, x, t);
  EXPECT_GRAD([](const TensorList& v) { return F::l1_loss(v[0], v[1], F::kSum); }, x, t);
  EXPECT_GRAD([&](const TensorList& v) { return F::binary_cross_entropy_with_logits(v[0], v[1]); }, x, prob);
}

}  // namespace
}  // namespace gradlab
