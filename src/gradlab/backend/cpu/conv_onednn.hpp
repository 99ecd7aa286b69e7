#pragma once
// float32 convolutions through oneDNN (conv_onednn.cpp), reached only from conv_gemm.cpp: the
// same contracts as cpu::conv2d_forward / _backward_input / _backward_weight. Without oneDNN at
// build time, usable() is false and the GEMM path runs every case.

#include "gradlab/backend/cpu/cpu.hpp"

namespace gradlab::cpu::onednn {

/// True when oneDNN was found at build time, GRADLAB_CONV_ONEDNN is not 0, the dtype is float32,
/// 4 or more input channels per group or depthwise (groups == C > 1), and the window count is the
/// floor formula's (oneDNN derives it; output_padding >= stride in conv_transpose2d gives more windows).
bool usable(const Conv2dGeom& g, ScalarType dtype);
/// Whether oneDNN was found at build time.
bool built();
/// Turns the oneDNN path on or off (process-wide; starts as GRADLAB_CONV_ONEDNN says, on when
/// unset). Returns the previous setting. The checks and bench_conv compare both fast paths
/// through it.
bool set_enabled(bool on);
// Each returns an undefined Tensor when oneDNN has no primitive for the shape (then the caller
// runs the GEMM path).
Tensor forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g);
Tensor backward_input(const Tensor& dy, const Tensor& weight, const Tensor& bias,
                      const Conv2dGeom& g);
Tensor backward_weight(const Tensor& x, const Tensor& dy, const Conv2dGeom& g);

}  // namespace gradlab::cpu::onednn
