#pragma once
// nn::MaxPool2dOptions, which is also F::MaxPool2dFuncOptions (one struct, as in LibTorch):
// nn/conv.hpp's module and nn/functional.hpp's F::max_pool2d both read it.

#include "gradlab/nn/arg.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::nn {

/// Options of nn::MaxPool2d and F::max_pool2d: F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2)).
struct MaxPool2dOptions {
  MaxPool2dOptions(IntPair kernel_size)  // NOLINT: nn::MaxPool2d(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  GRADLAB_ARG(IntPair, kernel_size);
  /// Defaults to kernel_size.
  GRADLAB_ARG(IntPair, stride);
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, dilation) = 1;
  /// true is refused (ValueError): gradlab's max_pool2d has no last, partial window.
  GRADLAB_ARG(bool, ceil_mode) = false;
};

}  // namespace gradlab::nn
