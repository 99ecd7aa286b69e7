// Matrix products. bmm is the primitive (BLAS underneath); matmul reduces every case of
// torch.matmul to it by unsqueezing 1-D operands and broadcasting batch dims.

#include "gradlab/ops/internal/linalg.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

void check_float(const char* op, const Tensor& a, const Tensor& b) {
  GRADLAB_CHECK(a.is_floating_point() && b.is_floating_point(), DTypeError, op,
                "expected floating point matrices", "float32 or float64",
                to_string(a.dtype()) + " and " + to_string(b.dtype()), "convert with .to(kFloat32)");
  // LibTorch does not promote in matrix products ("expected scalar type Double but found Float").
  GRADLAB_CHECK(a.dtype() == b.dtype(), DTypeError, op, "expected both operands to have the same dtype",
                to_string(a.dtype()) + " and " + to_string(a.dtype()),
                to_string(a.dtype()) + " and " + to_string(b.dtype()),
                "convert one operand with .to(), e.g. b.to(a.scalar_type())");
}

}  // namespace

Tensor bmm(const Tensor& a, const Tensor& b, Site site) {  // autocast: Bmm / Mm's kAutocast
  check_defined("bmm", a, "a");
  check_defined("bmm", b, "b");
  check_same_device("bmm", a, b);
  GRADLAB_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "bmm", "batch1 and batch2 must be 3-D tensors",
                "[B, M, K] and [B, K, N]", shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  GRADLAB_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), ShapeError, "bmm",
                "batch sizes or inner dims do not match", "[B, M, K] and [B, K, N]",
                shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_float("bmm", a, b);
  return record<Bmm>(site, a, b);
}

Tensor mm(const Tensor& a, const Tensor& b, Site site) {  // autocast: Bmm / Mm's kAutocast
  check_defined("mm", a, "a");
  check_defined("mm", b, "b");
  GRADLAB_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "mm", "both arguments must be matrices",
                "2-D and 2-D", shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_same_device("mm", a, b);
  check_float("mm", a, b);
  GRADLAB_CHECK(a.size(1) == b.size(0), ShapeError, "mm",
                "mat1 and mat2 shapes cannot be multiplied (" + std::to_string(a.size(0)) + "x" +
                    std::to_string(a.size(1)) + " and " + std::to_string(b.size(0)) + "x" +
                    std::to_string(b.size(1)) + ")",
                "inner dims to match: a.size(1) == b.size(0)", shape_str(a.sizes()) + " @ " + shape_str(b.sizes()),
                "transpose one operand (b.t()) or fix the layer sizes");
  return record<Mm>(site, a, b);
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in, Site site) {
  check_defined("matmul", a_in, "a");
  check_defined("matmul", b_in, "b");
  const Tensor a = autocast_lower(a_in, site), b = autocast_lower(b_in, site);
  check_same_device("matmul", a, b);
  GRADLAB_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError, "matmul", "both arguments need at least 1 dimension",
                "tensors of rank >= 1", shape_str(a.sizes()) + " and " + shape_str(b.sizes()),
                "multiply by a 0-d tensor with mul (*) instead");
  check_float("matmul", a, b);
  if (a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0)) return mm(a, b, site);
  // 1-D: a vector [K] acts as a row [1, K] on the left and a column [K, 1] on the right.
  Tensor A = a.dim() == 1 ? a.unsqueeze(0, site) : a;
  Tensor B = b.dim() == 1 ? b.unsqueeze(1, site) : b;
  const int64_t M = A.size(-2), K = A.size(-1), K2 = B.size(-2), N = B.size(-1);
  if (K != K2) {
    throw ShapeError(error_message(
        "matmul", "mat1 and mat2 shapes cannot be multiplied (" + std::to_string(M) + "x" +
                      std::to_string(K) + " and " + std::to_string(K2) + "x" + std::to_string(N) + ")",
        "inner dims to match: a.size(-1) == b.size(-2)",
        shape_str(a.sizes()) + " @ " + shape_str(b.sizes()),
        "transpose one operand (b.t()) or fix the layer sizes"));
  }
  const Shape ba(A.sizes().begin(), A.sizes().end() - 2), bb(B.sizes().begin(), B.sizes().end() - 2);
  const Shape batch = broadcast_shapes(ba, bb, "matmul");
  int64_t nb = numel_of(batch);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  Tensor A3 = A.expand(sa, site).reshape({nb, M, K}, site);
  Tensor B3 = B.expand(sb, site).reshape({nb, K, N}, site);
  Tensor C = bmm(A3, B3, site);
  Shape out = batch;
  if (a.dim() > 1) out.push_back(M);
  if (b.dim() > 1) out.push_back(N);
  return C.reshape(out, site);
}

}  // namespace gradlab
