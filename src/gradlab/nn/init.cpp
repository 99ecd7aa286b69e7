#include "gradlab/nn/init.hpp"

#include <cmath>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::nn::init {

namespace {

void check_tensor(const Tensor& t, const char* op) {
  GRADLAB_CHECK(t.defined(), ValueError, op, "the tensor is undefined", "a defined tensor",
                "Tensor()");
  GRADLAB_CHECK(t.is_floating_point(), DTypeError, op, "initializers fill floating point tensors",
                "float32 or float64", to_string(t.dtype()));
}

// Writes `values` (float64, t's shape) into t without recording a graph.
Tensor fill_from(Tensor t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

int64_t fan_of(const Tensor& t, FanMode mode, const char* op) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const int64_t fan = mode == kFanIn ? in : out;
  GRADLAB_CHECK(fan > 0, ValueError, op, "cannot initialize a tensor with zero elements in its fan",
                "fan > 0", std::to_string(fan));
  return fan;
}

}  // namespace

double calculate_gain(Nonlinearity nl, double param) {
  switch (nl) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1D:
    case Nonlinearity::Conv2D:
    case Nonlinearity::Conv3D:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::ReLU:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU:
      return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::SELU:
      return 3.0 / 4.0;
  }
  return 1.0;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  GRADLAB_CHECK(t.defined() && t.dim() >= 2, ShapeError, "calculate_fan_in_and_fan_out",
                "fan in and fan out can not be computed for a tensor with fewer than 2 dimensions",
                "a weight of rank >= 2",
                t.defined() ? shape_str(t.sizes()) : std::string("undefined"));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b, Generator* g) {
  check_tensor(t, "uniform_");
  GRADLAB_CHECK(a <= b, ValueError, "uniform_", "the range is empty", "a <= b",
                "a=" + std::to_string(a) + ", b=" + std::to_string(b));
  Tensor u = rand(t.sizes(), dtype(kFloat64), g);
  return fill_from(t, u * (b - a) + a);
}

Tensor normal_(Tensor t, double mean, double std, Generator* g) {
  check_tensor(t, "normal_");
  GRADLAB_CHECK(std >= 0, ValueError, "normal_", "std must be non-negative", "std >= 0",
                std::to_string(std));
  Tensor z = randn(t.sizes(), dtype(kFloat64), g);
  return fill_from(t, z * std + mean);
}

Tensor constant_(Tensor t, const Scalar& value) {
  GRADLAB_CHECK(t.defined(), ValueError, "constant_", "the tensor is undefined", "a defined tensor",
                "Tensor()");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor xavier_uniform_(Tensor t, double gain, Generator* g) {
  check_tensor(t, "xavier_uniform_");
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const double a = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(std::move(t), -a, a, g);
}

Tensor xavier_normal_(Tensor t, double gain, Generator* g) {
  check_tensor(t, "xavier_normal_");
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return normal_(std::move(t), 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)), g);
}

Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, Nonlinearity nl, Generator* g) {
  check_tensor(t, "kaiming_uniform_");
  const double fan = static_cast<double>(fan_of(t, mode, "kaiming_uniform_"));
  const double bound = calculate_gain(nl, a) * std::sqrt(3.0 / fan);
  return uniform_(std::move(t), -bound, bound, g);
}

Tensor kaiming_normal_(Tensor t, double a, FanMode mode, Nonlinearity nl, Generator* g) {
  check_tensor(t, "kaiming_normal_");
  const double fan = static_cast<double>(fan_of(t, mode, "kaiming_normal_"));
  return normal_(std::move(t), 0.0, calculate_gain(nl, a) / std::sqrt(fan), g);
}

}  // namespace gradlab::nn::init
