// matmul in all of torch.matmul's cases, mm, bmm.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::vals;
using ::testing::ElementsAre;

// A = [[1, 2, 3], [4, 5, 6]] (2x3), B = [[1, 0], [0, 1], [1, 1]] (3x2): A @ B = [[4, 5], [10, 11]]
Tensor A() { return tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}); }
Tensor B() { return tensor({{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}); }

TEST(Matmul, TwoD) {
  Tensor c = matmul(A(), B());
  EXPECT_EQ(c.sizes(), (Shape{2, 2}));
  EXPECT_THAT(vals(c), ElementsAre(4, 5, 10, 11));
  EXPECT_THAT(vals(mm(A(), B())), ElementsAre(4, 5, 10, 11));
  EXPECT_THAT(vals(A().matmul(B())), ElementsAre(4, 5, 10, 11));
  // transposed operands go to BLAS as views: Bᵀ @ Aᵀ = (A B)ᵀ
  EXPECT_THAT(vals(matmul(B().t(), A().t())), ElementsAre(4, 10, 5, 11));
  EXPECT_EQ(matmul(f64({1.0}).reshape({1, 1}), f64({2.0}).reshape({1, 1})).dtype(), kFloat64);
  // mixed dtypes throw, as in LibTorch (semantics_test.cpp: MatrixProducts)
  EXPECT_THROW(matmul(A(), B().to(kFloat64)), DTypeError);
  EXPECT_EQ(matmul(A().to(kFloat64), B().to(kFloat64)).dtype(), kFloat64);
}

TEST(Matmul, OneD) {
  Tensor v = tensor({1.0, 2.0, 3.0});
  Tensor dot = matmul(v, v);  // 1 + 4 + 9
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item<double>(), 14);
  Tensor mv = matmul(A(), v);  // [14, 32]
  EXPECT_EQ(mv.sizes(), (Shape{2}));
  EXPECT_THAT(vals(mv), ElementsAre(14, 32));
  Tensor vm = matmul(tensor({1.0, 1.0}), A());  // column sums [5, 7, 9]
  EXPECT_EQ(vm.sizes(), (Shape{3}));
  EXPECT_THAT(vals(vm), ElementsAre(5, 7, 9));
}

TEST(Matmul, BatchedAndBroadcast) {
  Tensor a = stack({A(), A() * 2});  // [2, 2, 3]
  Tensor c = matmul(a, B());         // [2, 2, 2]: B broadcast over the batch
  EXPECT_EQ(c.sizes(), (Shape{2, 2, 2}));
  EXPECT_THAT(vals(c), ElementsAre(4, 5, 10, 11, 8, 10, 20, 22));
  Tensor b2 = stack({B(), B() * -1});  // [2, 3, 2]
  EXPECT_THAT(vals(bmm(a, b2)), ElementsAre(4, 5, 10, 11, -8, -10, -20, -22));
  EXPECT_THAT(vals(matmul(a, b2)), ElementsAre(4, 5, 10, 11, -8, -10, -20, -22));
  // [3, 1, 2, 3] @ [2, 3, 2] -> [3, 2, 2, 2]
  Tensor big = a.unsqueeze(0).expand({3, 2, 2, 3}).narrow(1, 0, 1);  // [3, 1, 2, 3]
  Tensor r = matmul(big, b2);
  EXPECT_EQ(r.sizes(), (Shape{3, 2, 2, 2}));
  EXPECT_THAT(vals(r[2][1]), ElementsAre(-4, -5, -10, -11));
  // batched @ 1-D
  Tensor bv = matmul(a, tensor({1.0, 0.0, 0.0}));
  EXPECT_EQ(bv.sizes(), (Shape{2, 2}));
  EXPECT_THAT(vals(bv), ElementsAre(1, 4, 2, 8));
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  Tensor c = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  EXPECT_THAT(vals(c), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(Matmul, LargerProductAgainstNaiveLoop) {
  manual_seed(5);
  Tensor a = randn({7, 33}, kFloat64), b = randn({33, 5}, kFloat64);
  Tensor c = matmul(a, b);
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 33; ++k) s += a[i][k].item<double>() * b[k][j].item<double>();
      EXPECT_NEAR(c[i][j].item<double>(), s, 1e-12);
    }
}

}  // namespace
}  // namespace gradlab
