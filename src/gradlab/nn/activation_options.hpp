#pragma once
// Options of the activation modules and of their functional forms, as LibTorch's
// torch/nn/options/activation.h: nn::ELU(ELUOptions().alpha(0.5)) and
// F::elu(x, F::ELUFuncOptions().alpha(0.5)) take the same struct (the FuncOptions are aliases in
// nn::functional, as in LibTorch). `inplace(true)` writes the result into the input and returns
// it (torch::relu_, ...).

#include <cstdint>
#include <optional>
#include <string>

#include "gradlab/core/dtype.hpp"
#include "gradlab/nn/arg.hpp"

namespace gradlab::nn {

/// nn::ReLU / F::relu.
struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit, as LibTorch
  GRADLAB_ARG(bool, inplace);
};
/// nn::ReLU6 / F::relu6.
struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  GRADLAB_ARG(bool, inplace);
};
/// nn::SELU / F::selu.
struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  GRADLAB_ARG(bool, inplace);
};
/// nn::LeakyReLU / F::leaky_relu.
struct LeakyReLUOptions {
  GRADLAB_ARG(double, negative_slope) = 0.01;
  GRADLAB_ARG(bool, inplace) = false;
};
/// nn::ELU / F::elu: x > 0 ? x : alpha (exp(x) - 1).
struct ELUOptions {
  GRADLAB_ARG(double, alpha) = 1.0;
  GRADLAB_ARG(bool, inplace) = false;
};
/// nn::CELU / F::celu: x > 0 ? x : alpha (exp(x / alpha) - 1).
struct CELUOptions {
  GRADLAB_ARG(double, alpha) = 1.0;
  GRADLAB_ARG(bool, inplace) = false;
};
/// nn::Hardtanh / F::hardtanh: clamp(x, min_val, max_val).
struct HardtanhOptions {
  GRADLAB_ARG(double, min_val) = -1.0;
  GRADLAB_ARG(double, max_val) = 1.0;
  GRADLAB_ARG(bool, inplace) = false;
};
/// nn::Threshold / F::threshold: x > threshold ? x : value.
struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  GRADLAB_ARG(double, threshold);
  GRADLAB_ARG(double, value);
  GRADLAB_ARG(bool, inplace) = false;
};
/// nn::GLU / F::glu: the dim that is split in two halves.
struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  GRADLAB_ARG(int64_t, dim);
};
/// nn::GELU / F::gelu.
struct GELUOptions {
  /// "none" (exact, with erf) or "tanh" (the tanh approximation).
  GRADLAB_ARG(std::string, approximate) = "none";
};
/// nn::PReLU: num_parameters weights (1, or the input's channel count), each set to init.
struct PReLUOptions {
  GRADLAB_ARG(int64_t, num_parameters) = 1;
  GRADLAB_ARG(double, init) = 0.25;
};
/// nn::Softmax, nn::Softmin and nn::LogSoftmax: the dim reduced over.
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: nn::Softmax(1)
  GRADLAB_ARG(int64_t, dim);
};
using SoftminOptions = SoftmaxOptions;
/// nn::Hardshrink / F::hardshrink: |x| > lambda ? x : 0.
struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  GRADLAB_ARG(double, lambda);
};
/// nn::Softshrink / F::softshrink: x -+ lambda outside [-lambda, lambda], else 0.
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  GRADLAB_ARG(double, lambda);
};
using LogSoftmaxOptions = SoftmaxOptions;

namespace functional {
using ELUFuncOptions = ELUOptions;
using SELUFuncOptions = SELUOptions;
using CELUFuncOptions = CELUOptions;
using ReLUFuncOptions = ReLUOptions;
using ReLU6FuncOptions = ReLU6Options;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using HardtanhFuncOptions = HardtanhOptions;
using ThresholdFuncOptions = ThresholdOptions;
using GLUFuncOptions = GLUOptions;
using GELUFuncOptions = GELUOptions;
using HardshrinkFuncOptions = HardshrinkOptions;
using SoftshrinkFuncOptions = SoftshrinkOptions;

/// F::softmax / F::softmin / F::log_softmax: dim, and a dtype the input is cast to first.
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRADLAB_ARG(int64_t, dim);
  GRADLAB_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using SoftminFuncOptions = SoftmaxFuncOptions;
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
}  // namespace functional

}  // namespace gradlab::nn
