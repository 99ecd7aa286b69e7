// Gradient accumulation: summing the gradients of k micro-batches (each loss scaled by 1/k)
// gives the same gradient, and so the same update, as one step on the whole batch.

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

nn::Sequential make_model(uint64_t seed) {
  manual_seed(seed);
  nn::Sequential m(nn::Linear(6, 8), nn::Tanh(), nn::Linear(8, 3));
  m->to(kFloat64);
  return m;
}

TEST(GradientAccumulation, MicroBatchesEqualOneBigBatch) {
  Generator g(3);
  Tensor x = randn({12, 6}, dtype(kFloat64), &g);
  Tensor y = randint(0, 3, {12}, {}, &g);
  nn::CrossEntropyLoss ce;
  for (int k : {2, 3, 4}) {
    nn::Sequential big = make_model(7), acc = make_model(7);
    optim::SGD ob(big->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    optim::SGD oa(acc->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (int step = 0; step < 3; ++step) {
      ob.zero_grad();
      ce(big(x), y).backward();
      ob.step();

      oa.zero_grad();
      const int64_t n = 12 / k;
      for (int i = 0; i < k; ++i) {
        // Each micro-batch loss is a mean over n samples: scale by 1/k to get the mean over 12.
        Tensor loss =
            ce(acc(x.narrow(0, i * n, n)), y.narrow(0, i * n, n)) / static_cast<double>(k);
        loss.backward();  // gradients add up in .grad
      }
      oa.step();
    }
    const auto pb = big->parameters(), pa = acc->parameters();
    for (size_t i = 0; i < pb.size(); ++i)
      EXPECT_TRUE(allclose(pa[i], pb[i], 1e-12, 1e-13)) << "k=" << k << " parameter " << i;
  }
}

TEST(GradientAccumulation, ForgettingZeroGradAccumulatesAcrossSteps) {
  nn::Sequential m = make_model(1);
  Tensor x = ones({2, 6}, dtype(kFloat64));
  Tensor y = zeros({2}, dtype(kInt64));
  nn::CrossEntropyLoss ce;
  ce(m(x), y).backward();
  const Tensor g1 = m->parameters()[0].grad().clone();
  ce(m(x), y).backward();  // no zero_grad: the same gradient is added again
  EXPECT_TRUE(allclose(m->parameters()[0].grad(), 2 * g1, 1e-12, 1e-14));
}

}  // namespace
}  // namespace gradlab
