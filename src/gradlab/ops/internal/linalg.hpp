#pragma once
// The matrix-product op structs (internal): bmm and mm are the primitives (BLAS underneath);
// matmul runs a 2-D product as mm (MmBackward0, as PyTorch) and reduces every other case of
// torch.matmul to bmm (linalg.cpp).
//
// Internal, but named (not in an anonymous namespace): the checks reach a struct's saved members
// to override its backward (testing/mutants.hpp), and the benches time the real nodes.

#include "gradlab/ops/common.hpp"

namespace gradlab::ops_detail {

// C = A @ B, batched: A [B, M, K], B [B, K, N]      dA = dC @ Bᵀ, dB = Aᵀ @ dC
struct Bmm : BuiltinOp<Bmm> {
  static constexpr const char* kName = "BmmBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Lower;
  static constexpr Onnx kOnnx = Onnx::same("MatMul");
  static constexpr Fusion kFusion = Fusion::None;
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

// C = A @ B, 2-D: A [M, K], B [K, N]      dA = dC @ Bᵀ, dB = Aᵀ @ dC   (torch.mm; a 2-D matmul)
struct Mm : BuiltinOp<Mm> {
  static constexpr const char* kName = "MmBackward0";
  static constexpr Formula kFormula = kNoFormula;
  static constexpr Amp kAutocast = Amp::Lower;
  static constexpr Onnx kOnnx = Onnx::same("MatMul");
  static constexpr Fusion kFusion = Fusion::None;
  SavedTensor a_, b_;
  Tensor forward(const Tensor& a, const Tensor& b) {
    if (b.requires_grad()) save(a_, a);
    if (a.requires_grad()) save(b_, b);
    return kern::mm(a, b);
  }
  GradList backward(const GradList& g) {
    return {needs_input_grad(0) ? mm(g[0], b_.unpack().t()) : Tensor(),
            needs_input_grad(1) ? mm(a_.unpack().t(), g[0]) : Tensor()};
  }
};

}  // namespace gradlab::ops_detail
