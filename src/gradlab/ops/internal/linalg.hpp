#pragma once
// The matrix-product op struct (internal): bmm is the primitive (BLAS underneath); matmul reduces
// every case of torch.matmul to it (linalg.cpp).
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// C = A @ B, batched: A [B, M, K], B [B, K, N]      dA = dC @ Bᵀ, dB = Aᵀ @ dC
struct Bmm : Op<Bmm> {
  static constexpr const char* kName = "BmmBackward0";
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) save(a_, a);
    if (a.requires_grad()) save(b_, b);
    return kern::bmm(a, b);
  }
  GradList backward(const GradList& g) {
    return {needs_input_grad(0) ? bmm(g[0], b_.unpack().transpose(1, 2)) : Tensor(),
            needs_input_grad(1) ? bmm(a_.unpack().transpose(1, 2), g[0]) : Tensor()};
  }
};

}  // namespace gradlab::ops_detail
