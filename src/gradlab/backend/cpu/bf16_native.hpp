#pragma once
// bfloat16 matmul and convolution on the CPU's own bfloat16 instructions (AVX-512 BF16:
// vdpbf16ps, two bf16 products summed into a float32 lane), through oneDNN (bf16_native.cpp).
// kern::mm / bmm / conv2d_* (backend/kernels.cpp) try these first for CPU bfloat16 tensors;
// where they return an undefined Tensor, the operands are widened to float32 and the float32
// kernel runs (the fallback on CPUs without AVX-512 BF16, for float16, and without oneDNN).
//
// Numerics: operands are bfloat16 already; oneDNN accumulates their products in float32 and
// rounds the result once to bfloat16, as the fallback does (its float32 GEMM sums in another
// order, so the two agree to bfloat16 rounding, not bit for bit).

#include <cstdint>

#include "gradlab/backend/cpu/cpu.hpp"

namespace gradlab::cpu::bf16 {

/// True when the native path runs: oneDNN was found at build time, gradlab's CPU level is avx512
/// (GRADLAB_CPU_CAPABILITY=avx2 or default turns it off), oneDNN's effective ISA includes
/// avx512_core_bf16 (the CPU has AVX-512 BF16 and DNNL_MAX_CPU_ISA does not cap it below), and
/// it is enabled (GRADLAB_BF16_NATIVE=0 at start, or set_native(false), turns it off).
bool native();
/// Whether this CPU and build could run the native path (native() without the on/off switch).
bool native_supported();
/// Turns the native path on or off (process-wide); returns the previous setting.
bool set_native(bool on);
/// How many oneDNN bf16 primitives have run (the checks see which path a call took).
int64_t native_runs();

// Each returns an undefined Tensor when the native path does not apply (not native(), not
// bfloat16, an empty shape, a layout or shape oneDNN has no primitive for).
/// c[b] = a[b] @ b[b]: a [B, M, K], b [B, K, N] bfloat16 (any strides; batch stride 0 only
/// when B == 1) -> contiguous [B, M, N] bfloat16.
Tensor bmm(const Tensor& a, const Tensor& b);
/// The contracts of cpu::conv2d_forward / _backward_input / _backward_weight, bfloat16 in and out.
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g);
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g);
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Conv2dGeom& g);

}  // namespace gradlab::cpu::bf16
