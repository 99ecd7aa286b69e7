// LibTorch's other activations (torch::elu, selu, celu, silu, mish, hardtanh, relu6, log_sigmoid,
// hardswish, hardsigmoid, glu, threshold, prelu) and their in-place forms, each composed from the
// primitives (DESIGN: composites first). Each is an op-table row (testing/op_table/activation.cpp:
// float64 reference, gradcheck, gradgradcheck); the compatibility corpus compares values and
// gradients with LibTorch 1.13.

#include <cmath>
#include <functional>

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {
// x = f(x) in place, as clamp_ (ops/inplace.cpp's apply_inplace): without a graph f's value is
// written into x; with one, f(clone of x) is recorded (its node, e.g. ReluBackward0, as
// LibTorch's relu_) and becomes x's history. A leaf that requires grad is refused.
Tensor write_back(const Tensor& x, const char* op, const std::function<Tensor(const Tensor&)>& f,
                  const Site& site) {
  check_defined(op, x);
  apply_inplace(x, op, site, {}, [&] { kern::copy(x, f(x.detach())); }, f);
  return x;
}
}  // namespace

// x > 0 ? scale x : scale alpha (exp(input_scale x) - 1)
// NOTE: expm1 reads min(x, 0): the branch where() drops would give exp(big) = inf, and its zero
// gradient times inf is NaN.
Tensor elu(const Tensor& x, double alpha, double scale, double input_scale, Site site) {
  check_defined("elu", x);
  Tensor neg = mul(expm1(mul(clamp(x, std::nullopt, 0.0, site), input_scale, site), site), alpha * scale, site);
  return where(gt(x, 0.0), mul(x, scale, site), neg, site);
}

// Constants of Klambauer et al. (2017), as LibTorch.
Tensor selu(const Tensor& x, Site site) {
  return elu(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0, site);
}

Tensor celu(const Tensor& x, double alpha, Site site) {
  GRADLAB_CHECK(alpha != 0.0, ValueError, "celu", "alpha must not be 0 (celu divides by it)",
                "alpha != 0", "0");
  return elu(x, alpha, 1.0, 1.0 / alpha, site);
}

Tensor silu(const Tensor& x, Site site) {
  check_defined("silu", x);
  return mul(x, sigmoid(x, site), site);
}

Tensor mish(const Tensor& x, Site site) {
  check_defined("mish", x);
  return mul(x, tanh(softplus(x, 1.0, 20.0, site), site), site);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val, Site site) {
  check_defined("hardtanh", x);
  GRADLAB_CHECK(min_val <= max_val, ValueError, "hardtanh", "min_val must not exceed max_val",
                "min_val <= max_val", std::to_string(min_val) + " > " + std::to_string(max_val));
  return clamp(x, min_val, max_val, site);
}

Tensor relu6(const Tensor& x, Site site) { return hardtanh(x, 0.0, 6.0, site); }

// log σ(x) = min(x, 0) - log(1 + exp(-|x|)); softplus(-|x|) is that log, and -|x| <= 0 never
// reaches softplus's linear threshold.
Tensor log_sigmoid(const Tensor& x, Site site) {
  check_defined("log_sigmoid", x);
  return sub(clamp(x, std::nullopt, 0.0, site), softplus(neg(abs(x, site), site), 1.0, 20.0, site), site);
}

Tensor hardswish(const Tensor& x, Site site) {
  check_defined("hardswish", x);
  return mul(x, div(clamp(add(x, 3.0, site), 0.0, 6.0, site), 6.0, site), site);
}

Tensor hardsigmoid(const Tensor& x, Site site) {
  check_defined("hardsigmoid", x);
  return div(clamp(add(x, 3.0, site), 0.0, 6.0, site), 6.0, site);
}

// [..., 2n, ...] -> [..., n, ...]: first half * σ(second half)
Tensor glu(const Tensor& x, int64_t dim, Site site) {
  check_defined("glu", x);
  GRADLAB_CHECK(x.dim() > 0, ShapeError, "glu", "glu does not support scalars", "a tensor with 1+ dims",
                shape_str(x.sizes()));
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  const int64_t n = x.size(d);
  GRADLAB_CHECK(n % 2 == 0, ShapeError, "glu", "halving dimension must be even",
                "an even size along dim " + std::to_string(d), shape_str(x.sizes()),
                "glu splits dim " + std::to_string(d) + " into a value half and a gate half");
  return mul(narrow(x, d, 0, n / 2, site), sigmoid(narrow(x, d, n / 2, n / 2, site), site), site);
}

Tensor threshold(const Tensor& x, double threshold, double value, Site site) {
  check_defined("threshold", x);
  return where(gt(x, threshold), x, value, site);
}

// weight [1] or [C] with C = x.size(1): viewed as [1, C, 1, ...] to broadcast over the channels
Tensor prelu(const Tensor& x, const Tensor& weight, Site site) {
  check_defined("prelu", x);
  check_defined("prelu", weight, "weight");
  Tensor w = weight;
  const int64_t n = weight.numel();
  if (n == 1) {
    w = reshape(weight, Shape{}, site);
  } else {
    GRADLAB_CHECK(weight.dim() == 1, ShapeError, "prelu", "weight must be 1-D",
                  "[" + std::to_string(n) + "]", shape_str(weight.sizes()));
    const int64_t channels = x.dim() > 1 ? x.size(1) : 1;
    GRADLAB_CHECK(channels == n, ShapeError, "prelu",
                  "the number of weights must be 1 or the input's channel count (dim 1)",
                  std::to_string(channels) + " weights", std::to_string(n) + " for input " + shape_str(x.sizes()),
                  "nn::PReLU(PReLUOptions().num_parameters(C)) for C channels");
    Shape s(static_cast<size_t>(x.dim()), 1);
    s[1] = n;
    w = reshape(weight, s, site);
  }
  return where(gt(x, 0.0), x, mul(w, x, site), site);
}

Tensor relu_(const Tensor& x, Site site) {
  return write_back(x, "relu_", [&](const Tensor& c) { return relu(c, site); }, site);
}
Tensor leaky_relu_(const Tensor& x, double negative_slope, Site site) {
  return write_back(x, "leaky_relu_", [&](const Tensor& c) { return leaky_relu(c, negative_slope, site); }, site);
}
Tensor elu_(const Tensor& x, double alpha, double scale, double input_scale, Site site) {
  return write_back(x, "elu_", [&](const Tensor& c) { return elu(c, alpha, scale, input_scale, site); }, site);
}
Tensor selu_(const Tensor& x, Site site) {
  return write_back(x, "selu_", [&](const Tensor& c) { return selu(c, site); }, site);
}
Tensor celu_(const Tensor& x, double alpha, Site site) {
  return write_back(x, "celu_", [&](const Tensor& c) { return celu(c, alpha, site); }, site);
}
Tensor hardtanh_(const Tensor& x, double min_val, double max_val, Site site) {
  return write_back(x, "hardtanh_", [&](const Tensor& c) { return hardtanh(c, min_val, max_val, site); }, site);
}
Tensor relu6_(const Tensor& x, Site site) { return hardtanh_(x, 0.0, 6.0, site); }
Tensor threshold_(const Tensor& x, double threshold_value, double value, Site site) {
  return write_back(x, "threshold_", [&](const Tensor& c) { return threshold(c, threshold_value, value, site); }, site);
}

// |x| > λ ? x : 0; the gradient is the same mask (0 at |x| = λ, as LibTorch)
Tensor hardshrink(const Tensor& x, double lambd, Site site) {
  check_defined("hardshrink", x);
  return where(gt(abs(x, site), lambd), x, 0.0, site);
}

// x > λ ? x - λ : x < -λ ? x + λ : 0 = x - clamp(x, -λ, λ); the gradient 1 outside [-λ, λ]
Tensor softshrink(const Tensor& x, double lambd, Site site) {
  check_defined("softshrink", x);
  GRADLAB_CHECK(lambd >= 0, ValueError, "softshrink", "lambda must be greater or equal to 0",
                "lambd >= 0", std::to_string(lambd));
  return where(gt(abs(x, site), lambd), sub(x, mul(sign(x), lambd, site), site), 0.0, site);
}

}  // namespace gradlab
