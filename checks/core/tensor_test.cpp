// Tensors: factories, options, metadata, element access, copies, dtype conversion, devices,
// printing like PyTorch.

#include <sstream>

#include "common/check_helpers.hpp"
#include "gradlab/core/cuda.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::ivals;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// ---- factories and options --------------------------------------------------------------------

TEST(Factories, ZerosOnesFullEmptyHaveShapeDtypeAndValues) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.dim(), 2);
  EXPECT_THAT(vals(z), ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_THAT(vals(ones({3}, kFloat64)), ElementsAre(1, 1, 1));
  EXPECT_EQ(ones({3}, kFloat64).dtype(), kFloat64);
  Tensor f = full({2, 2}, 7.5);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_THAT(vals(f), ElementsAre(7.5, 7.5, 7.5, 7.5));
  EXPECT_EQ(full({2}, int64_t{3}).dtype(), kInt64);  // an integer fill value gives int64, as PyTorch
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  Tensor e = empty({4, 0, 2});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.sizes(), (Shape{4, 0, 2}));
}

TEST(Factories, ArangeLinspaceEye) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), kInt64);  // integer arguments -> int64
  EXPECT_THAT(ivals(a), ElementsAre(0, 1, 2, 3, 4));
  Tensor b = arange(1.0, 2.0, 0.25);
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_THAT(vals(b), ElementsAre(1.0, 1.25, 1.5, 1.75));
  EXPECT_THAT(ivals(arange(10, 0, -3)), ElementsAre(10, 7, 4, 1));
  Tensor l = linspace(0, 1, 5, kFloat64);
  EXPECT_THAT(vals(l), ElementsAre(0.0, 0.25, 0.5, 0.75, 1.0));
  EXPECT_THAT(vals(linspace(-1, 1, 3)), ElementsAre(-1, 0, 1));
  EXPECT_THAT(vals(linspace(2, 5, 1)), ElementsAre(2));  // one step: the start, as PyTorch
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  Tensor i = eye(2, 3);
  EXPECT_EQ(i.sizes(), (Shape{2, 3}));
  EXPECT_THAT(vals(i), ElementsAre(1, 0, 0, 0, 1, 0));
  EXPECT_THAT(vals(eye(2)), ElementsAre(1, 0, 0, 1));
}

TEST(Factories, TensorFromBracesAndVectors) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(a.sizes(), (Shape{2, 3}));
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_THAT(vals(a), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({{1, 2}, {3, 4}}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({{true, false}, {false, true}}).dtype(), kBool);
  EXPECT_EQ(tensor({{true, false}}).sizes(), (Shape{1, 2}));
  EXPECT_EQ(tensor(2.5).dim(), 0);
  Tensor v = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2}, kFloat64);
  EXPECT_EQ(v.sizes(), (Shape{3, 2}));
  EXPECT_EQ(v.dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(v[2][1].item<double>(), 6.0);
  // int64 values above 2^53 survive exactly
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(from_vector(std::vector<int64_t>{big}, {1}).to_vector<int64_t>()[0], big);
  EXPECT_THAT(ivals(from_vector(std::vector<bool>{true, false, true}, {3})), ElementsAre(1, 0, 1));
}

TEST(Factories, OptionsAndShorthands) {
  Tensor a = zeros({2}, TensorOptions().dtype(kFloat64).device(kCPU).requires_grad(true));
  EXPECT_EQ(a.dtype(), kFloat64);
  EXPECT_TRUE(a.is_cpu());
  EXPECT_TRUE(a.requires_grad());
  EXPECT_TRUE(a.is_leaf());
  Tensor b = ones({2}, dtype(kFloat64).requires_grad(true));
  EXPECT_EQ(b.dtype(), kFloat64);
  EXPECT_TRUE(b.requires_grad());
  EXPECT_TRUE(rand({3}, requires_grad()).requires_grad());
  EXPECT_FALSE(zeros({2}).requires_grad());
}

TEST(Factories, LikeVariantsKeepShapeAndDtype) {
  Tensor x = ones({2, 3}, kFloat64);
  EXPECT_EQ(zeros_like(x).dtype(), kFloat64);
  EXPECT_EQ(zeros_like(x).sizes(), (Shape{2, 3}));
  EXPECT_THAT(vals(ones_like(x)), ElementsAre(1, 1, 1, 1, 1, 1));
  EXPECT_THAT(vals(full_like(x, 3)), ElementsAre(3, 3, 3, 3, 3, 3));
  EXPECT_EQ(full_like(x, 3).dtype(), kFloat64);
  EXPECT_EQ(empty_like(x).sizes(), x.sizes());
  EXPECT_EQ(zeros_like(x, kFloat32).dtype(), kFloat32);
  EXPECT_EQ(rand_like(x).dtype(), kFloat64);
  EXPECT_EQ(randn_like(x).sizes(), x.sizes());
}

// ---- metadata and element access ---------------------------------------------------------------

TEST(TensorMeta, SizesStridesContiguity) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_EQ(x.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_EQ(x.stride(0), 12);
  EXPECT_TRUE(x.is_contiguous());
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.sizes(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Strides{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(x.describe(), "[2, 3, 4] float32");
  EXPECT_FALSE(Tensor().defined());
}

TEST(TensorMeta, ItemAndToVector) {
  Tensor x = tensor({{1.5, -2.0}, {3.25, 4.0}});
  EXPECT_FLOAT_EQ(x[1][0].item<float>(), 3.25f);
  EXPECT_DOUBLE_EQ(x[0][1].item<double>(), -2.0);
  EXPECT_EQ(x[1][1].item<int64_t>(), 4);
  EXPECT_EQ(x[1][1].item<int>(), 4);
  EXPECT_TRUE(tensor({true}).item<bool>());
  EXPECT_THAT(x.to_vector<float>(), ElementsAre(1.5f, -2.0f, 3.25f, 4.0f));
  // to_vector of a non-contiguous view follows logical (row-major) order
  EXPECT_THAT(vals(x.t()), ElementsAre(1.5, 3.25, -2.0, 4.0));
  EXPECT_THAT(x.gt(0.0).to_vector<bool>(), ElementsAre(true, false, true, true));
  Tensor d = f64({1.0, 2.0});
  EXPECT_EQ(d.data_ptr<double>()[1], 2.0);
  EXPECT_THROW(d.data_ptr<float>(), DTypeError);
}

TEST(TensorMeta, ItemOnManyElementsNamesTheShape) {
  EXPECT_THROW_MSG(zeros({2, 3}).item<float>(), ShapeError, "item", "6 elements", "[2, 3]");
}

// ---- copies and conversion ---------------------------------------------------------------------

TEST(TensorCopy, CloneIsDeepAndKeepsValues) {
  Tensor x = tensor({1.0, 2.0, 3.0});
  Tensor c = x.clone();
  EXPECT_FALSE(c.is_same_storage(x));
  c.fill_(9);
  EXPECT_THAT(vals(x), ElementsAre(1, 2, 3));
  EXPECT_THAT(vals(c), ElementsAre(9, 9, 9));
}

TEST(TensorCopy, ContiguousCopiesOnlyWhenNeeded) {
  Tensor x = arange(6).reshape({2, 3});
  EXPECT_TRUE(x.contiguous().is_same_storage(x));  // already contiguous: same tensor
  Tensor t = x.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_same_storage(x));
  EXPECT_EQ(c.strides(), (Strides{2, 1}));
  EXPECT_THAT(ivals(c), ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(TensorCopy, ToDtypeConvertsValues) {
  Tensor x = tensor({1.7, -1.7, 0.0});
  Tensor i = x.to(kInt64);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_THAT(ivals(i), ElementsAre(1, -1, 0));  // truncation toward zero, as a C++ cast / PyTorch
  Tensor b = x.to(kBool);
  EXPECT_THAT(ivals(b), ElementsAre(1, 1, 0));
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(d[0].item<double>(), static_cast<double>(1.7f));
  EXPECT_TRUE(x.to(kFloat32).is_same_storage(x));  // same dtype: no copy
  EXPECT_EQ(tensor({true, false}).to(kFloat32).to_vector<float>(), (std::vector<float>{1.f, 0.f}));
}

// ---- devices ------------------------------------------------------------------------------------

TEST(Devices, CpuIsTheDefaultAndPrints) {
  EXPECT_TRUE(zeros({1}).device().is_cpu());
  EXPECT_EQ(Device(kCPU).str(), "cpu");
  EXPECT_EQ(Device(kCUDA, 1).str(), "cuda:1");
  EXPECT_TRUE(zeros({1}).to(Device(kCPU)).is_cpu());
}

TEST(Devices, AskingForCudaIsADeviceError) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present (checks/cuda covers that case)";
  EXPECT_THROW_MSG(zeros({2, 3}, TensorOptions().device(kCUDA)), DeviceError, "zeros", "cuda",
                   "not available");
  EXPECT_THROW_MSG(ones({2}, Device(kCUDA, 0)), DeviceError, "cuda:0");
  EXPECT_THROW_MSG(randn({2}, device(kCUDA)), DeviceError, "randn", "cuda");
  EXPECT_THROW_MSG(zeros({2}).to(Device(kCUDA)), DeviceError, "to", "cuda");
}

// ---- printing -----------------------------------------------------------------------------------

TEST(Printing, MatchesPyTorchLayout) {
  EXPECT_EQ(tensor({{1.0, 2.0}, {3.0, 4.0}}).str(), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(tensor({1.5, -2.25}).str(), "tensor([ 1.5000, -2.2500])");
  EXPECT_EQ(tensor(3.0).str(), "tensor(3.)");
  EXPECT_EQ(tensor({1, 2, 30}).str(), "tensor([ 1,  2, 30])");
  EXPECT_EQ(tensor({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(zeros({2, 1, 2}).str(), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])");
  EXPECT_EQ(tensor({0.001, 2.0}).str(), "tensor([1.0000e-03, 2.0000e+00])");
  std::ostringstream os;
  os << tensor({1.0});
  EXPECT_EQ(os.str(), "tensor([1.])");
}

TEST(Printing, ShowsDtypeRequiresGradAndGradFn) {
  EXPECT_EQ(f64({1.0, 2.0}).str(), "tensor([1., 2.], dtype=float64)");
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  EXPECT_EQ(x.str(), "tensor([1., 2.], requires_grad=True)");
  EXPECT_EQ((x * 2).str(), "tensor([2., 4.], grad_fn=<MulBackward0>)");
  EXPECT_EQ(x.sum().str(), "tensor(3., grad_fn=<SumBackward0>)");
  Tensor y = f64({1.0}, true);
  EXPECT_EQ((y + 1).str(), "tensor([2.], dtype=float64, grad_fn=<AddBackward0>)");
}

TEST(Printing, LongTensorsAreSummarized) {
  EXPECT_EQ(arange(2000).str(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(zeros({1001}).str(), "tensor([0., 0., 0.,  ..., 0., 0., 0.])");
  EXPECT_EQ(tensor(std::initializer_list<double>{}).str(), "tensor([])");
}

}  // namespace
}  // namespace gradlab
