// Every bad input is an exception whose message names the op and the shapes (or dtypes) involved,
// in DESIGN.md's format "<op>: <what>; expected <X>, got <Y>; hint: ...".

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

namespace F = nn::functional;
using checks::i64;

TEST(ShapeErrors, BroadcastMismatchNamesOpSizesAndDim) {
  EXPECT_THROW_MSG(zeros({4, 16}) + zeros({4, 3}), ShapeError,
                   "add: size of a (16) must match size of b (3) at non-singleton dimension 1",
                   "expected broadcastable shapes, got [4, 16] and [4, 3]", "hint:");
  EXPECT_THROW_MSG(mul(zeros({2, 3}), zeros({3, 2})), ShapeError, "mul: size of a (3) must match size of b (2)",
                   "[2, 3] and [3, 2]");
  EXPECT_THROW_MSG(zeros({5}) - zeros({4}), ShapeError, "sub:", "[5] and [4]");
  EXPECT_THROW_MSG(zeros({5}) / zeros({4}), ShapeError, "div:", "[5] and [4]");
  EXPECT_THROW_MSG(maximum(zeros({2}), zeros({3})), ShapeError, "maximum:", "[2] and [3]");
  EXPECT_THROW_MSG(where(zeros({2}) > 0, zeros({3}), zeros({3})), ShapeError, "where:", "[2] and [3]");
  EXPECT_THROW_MSG(masked_fill(zeros({2}), tensor({true, false, true}), 0.0), ShapeError, "masked_fill:",
                   "[2] and [3]");
  EXPECT_THROW_MSG(zeros({3}).add_(zeros({2, 3})), ShapeError,
                   "add_: output with shape [3] doesn't match the broadcast shape [2, 3]");
}

TEST(ShapeErrors, MatmulInnerDimsNamesBothShapes) {
  EXPECT_THROW_MSG(matmul(zeros({2, 3}), zeros({4, 5})), ShapeError,
                   "matmul: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "[2, 3] @ [4, 5]");
  EXPECT_THROW_MSG(matmul(zeros({3}), zeros({4})), ShapeError, "matmul:", "[3] @ [4]");
  EXPECT_THROW_MSG(matmul(zeros({7, 2, 3}), zeros({7, 4, 5})), ShapeError, "matmul:", "[7, 2, 3] @ [7, 4, 5]");
  EXPECT_THROW_MSG(matmul(zeros({2, 2, 3}), zeros({5, 3, 4})), ShapeError, "matmul:", "[2] and [5]");
  EXPECT_THROW_MSG(matmul(tensor(1.0), zeros({2})), ShapeError, "matmul:", "[] and [2]");
  EXPECT_THROW_MSG(mm(zeros({2, 3, 4}), zeros({4, 2})), ShapeError, "mm:", "[2, 3, 4] and [4, 2]");
  EXPECT_THROW_MSG(bmm(zeros({2, 2, 3}), zeros({3, 3, 2})), ShapeError, "bmm:", "[2, 2, 3] and [3, 3, 2]");
}

TEST(ShapeErrors, ReshapeAndView) {
  EXPECT_THROW_MSG(zeros({2, 3}).reshape({4}), ShapeError, "reshape: shape [4] is invalid for input of size 6",
                   "[2, 3]");
  EXPECT_THROW_MSG(zeros({2, 3}).view({-1, 4}), ShapeError, "view:", "[-1, 4]", "6");
  EXPECT_THROW_MSG(zeros({2, 3}).reshape({-1, -1}), ShapeError, "reshape:", "only one dimension can be inferred");
  EXPECT_THROW_MSG(zeros({2, 3}).t().view({6}), ShapeError,
                   "view: view size is not compatible with input tensor's size and stride",
                   "input [3, 2] with strides [1, 3] viewed as [6]", "reshape");
}

TEST(ShapeErrors, MovementOps) {
  EXPECT_THROW_MSG(zeros({3}).expand({2, 4}), ShapeError,
                   "expand: the expanded size of the tensor (4) must match the existing size (3) at non-singleton "
                   "dimension 1",
                   "[2, 4]");
  EXPECT_THROW_MSG(zeros({2, 3}).expand({3}), ShapeError, "expand:", "[3]");
  EXPECT_THROW_MSG(zeros({2, 3}).permute({0}), ShapeError, "permute:", "2 dims", "1 dims ([0])");
  EXPECT_THROW_MSG(zeros({2, 3}).permute({0, 0}), ShapeError, "permute:", "[0, 0]");
  EXPECT_THROW_MSG(zeros({2, 3}).transpose(0, 2), ShapeError, "transpose: dimension out of range", "[-2, 1]", "got 2");
  EXPECT_THROW_MSG(zeros({2, 3}).select(1, 3), ShapeError,
                   "select: index 3 is out of bounds for dimension 1 with size 3");
  EXPECT_THROW_MSG(zeros({2, 3}).narrow(1, 2, 2), ShapeError, "narrow:", "exceeds dimension size (3)");
  EXPECT_THROW_MSG(zeros({2, 3})[2], ShapeError, "select:", "out of bounds for dimension 0 with size 2");
  EXPECT_THROW_MSG(zeros({2, 3}).sum({2}), ShapeError, "sum: dimension out of range",
                   "got 2");
  EXPECT_THROW_MSG(cat({zeros({2, 3}), zeros({2, 4})}, 0), ShapeError,
                   "cat: sizes of tensors must match except in dimension 0", "size 4 for tensor 1 (shape [2, 4])");
  EXPECT_THROW_MSG(cat({zeros({2, 3}), zeros({3})}, 0), ShapeError, "cat:", "2 dims", "1 dims");
  EXPECT_THROW_MSG(stack({zeros({2, 3}), zeros({3, 2})}), ShapeError, "stack:", "[2, 3]", "[3, 2] at entry 1");
  EXPECT_THROW_MSG(cat({}), ValueError, "cat:");
  EXPECT_THROW_MSG(from_vector(std::vector<double>{1, 2, 3}, {2, 2}), ShapeError, "from_vector:",
                   "4 values for shape [2, 2]", "3 values");
  EXPECT_THROW_MSG(zeros({-1}), ShapeError, "zeros:", "[-1]");
}

TEST(ShapeErrors, IndexOutOfRangeNamesOpBoundAndValue) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW_MSG(index_select(x, 1, i64({0, 5})), ShapeError,
                   "index_select: index out of range at position 1; expected an index in [0, 3), got 5");
  EXPECT_THROW_MSG(index_select(x, 0, i64({-1})), ShapeError, "index_select:", "[0, 2)", "got -1");
  EXPECT_THROW_MSG(gather(x, 1, tensor({3}).reshape({1, 1})), ShapeError, "gather:", "[0, 3)", "got 3");
  EXPECT_THROW_MSG(gather(x, 1, tensor({1, 2})), ShapeError, "gather:", "same number of dimensions", "[2]");
  EXPECT_THROW_MSG(scatter_add(x, 0, tensor({2}).reshape({1, 1}), tensor({1.0}).reshape({1, 1})), ShapeError, "scatter_add:", "[0, 2)", "got 2");
  EXPECT_THROW_MSG(index_add(x, 0, i64({4}), zeros({1, 3})), ShapeError, "index_add:", "[0, 2)", "got 4");
  EXPECT_THROW_MSG(index_add(x, 0, i64({1}), zeros({2, 3})), ShapeError, "index_add:", "[1, 3]", "[2, 3]");
  EXPECT_THROW_MSG(embedding(zeros({4, 2}), i64({1, 4})), ShapeError, "index_select:", "[0, 4)", "got 4");
  EXPECT_THROW_MSG(embedding(zeros({4}), i64({1})), ShapeError, "embedding:", "[num_embeddings, dim]", "[4]");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({2, 3}), i64({1, 3})), ShapeError, "cross_entropy:", "[0, 3)", "got 3");
  EXPECT_THROW_MSG(zeros({3}).index_put_(i64({3}), 1.0), ShapeError, "index_put_:", "[0, 3)", "got 3");
}

TEST(ShapeErrors, LossShapes) {
  EXPECT_THROW_MSG(F::mse_loss(zeros({4}), zeros({4, 1})), ShapeError, "mse_loss: input and target shapes differ",
                   "expected [4], got [4, 1]", "squeeze");
  EXPECT_THROW_MSG(F::l1_loss(zeros({4}), zeros({3})), ShapeError, "l1_loss:", "[4]", "[3]");
  EXPECT_THROW_MSG(F::binary_cross_entropy_with_logits(zeros({2, 1}), zeros({2})), ShapeError,
                   "binary_cross_entropy_with_logits:", "[2, 1]", "[2]");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({4, 3}), i64({0, 1})), ShapeError,
                   "cross_entropy: expected input batch_size (4) to match target batch_size (2)");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({4, 3}), zeros({4, 1}, kInt64)), ShapeError, "cross_entropy:", "[4, 1]");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({2, 3, 4}), i64({0, 1})), ShapeError, "cross_entropy:", "[2, 3, 4]");
  EXPECT_THROW_MSG(F::nll_loss(zeros({4}), i64({0})), ShapeError, "nll_loss:", "[4]");
}

TEST(DTypeErrors, NameTheOpAndTheDtypes) {
  EXPECT_THROW_MSG(where(zeros({2}), zeros({2}), zeros({2})), DTypeError, "where: condition must be a bool tensor",
                   "expected bool, got float32");
  EXPECT_THROW_MSG(masked_fill(zeros({2}), zeros({2}, kInt64), 1.0), DTypeError, "masked_fill:", "got int64");
  EXPECT_THROW_MSG(index_select(zeros({2}), 0, zeros({1})), DTypeError, "index_select: index must be an int64 tensor",
                   "got float32");
  EXPECT_THROW_MSG(gather(zeros({2}), 0, zeros({1}, kFloat64)), DTypeError, "gather:", "float64");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({2, 3}), zeros({2})), DTypeError,
                   "cross_entropy: target must hold class indices (int64)", "got float32");
  EXPECT_THROW_MSG(matmul(tensor({{1, 2}}), tensor({1, 2}).reshape({2, 1})), DTypeError, "matmul:", "int64 and int64");
  EXPECT_THROW_MSG(mean(tensor({1, 2})), DTypeError, "mean:", "got int64");
  EXPECT_THROW_MSG(tensor({true}) - tensor({false}), DTypeError, "sub:", "bool and bool");
  EXPECT_THROW_MSG(-tensor({true}), DTypeError, "neg:", "bool");
  EXPECT_THROW_MSG(tensor({1, 2}).div_(2), DTypeError, "div_:", "int64");
  EXPECT_THROW_MSG(tensor({1, 2}).add_(0.5), DTypeError, "add_:", "float32", "int64");
  // matrices must be floating point (float16 / bfloat16 compute too, through float32)
  EXPECT_THROW_MSG(matmul(tensor({1, 2}), tensor({1, 2})), DTypeError, "matmul:", "int64");
}

TEST(ValueErrors, BadArguments) {
  EXPECT_THROW_MSG(clamp(zeros({2}), std::nullopt, std::nullopt), ValueError, "clamp:");
  EXPECT_THROW_MSG(zeros({3}).slice(0, 0, 3, 0), ValueError, "slice: slice step must be positive", "got 0");
  EXPECT_THROW_MSG(arange(0, 5, -1), ValueError, "arange:");
  EXPECT_THROW_MSG(F::cross_entropy(zeros({1, 2}), i64({0}), F::CrossEntropyFuncOptions().label_smoothing(1.5)),
                   ValueError, "cross_entropy: label_smoothing must be in [0, 1]");
  EXPECT_THROW_MSG(Tensor().sizes(), ValueError, "sizes: the tensor is undefined");
  EXPECT_THROW_MSG(add(Tensor(), zeros({1})), ValueError, "add:", "undefined");
}

TEST(Errors, AllDeriveFromGradlabError) {
  EXPECT_THROW(zeros({2}) + zeros({3}), Error);
  EXPECT_THROW(zeros({2}, kCUDA), Error);
  EXPECT_THROW(where(zeros({2}), zeros({2}), zeros({2})), Error);
}

}  // namespace
}  // namespace gradlab
