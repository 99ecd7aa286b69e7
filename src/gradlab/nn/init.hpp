#pragma once
// Parameter initialization, as torch::nn::init. Every function fills `tensor` in place without
// recording a graph and returns it. Random ones draw from `generator` (the default generator,
// seeded by gradlab::manual_seed, when null).

#include <cstdint>
#include <utility>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/enum.hpp"  // FanMode, Nonlinearity and their kFanIn, kReLU, ...

namespace gradlab::nn::init {

/// The recommended gain: 1 (linear, conv, sigmoid), 5/3 (tanh), √2 (relu),
/// √(2 / (1 + slope²)) (leaky relu, slope = param), 3/4 (selu).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
/// (fan_in, fan_out) of a weight of rank >= 2: [out, in, k...] -> (in * k..., out * k...).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// U(a, b).
Tensor uniform_(Tensor tensor, double a = 0.0, double b = 1.0, Generator* generator = nullptr);
/// N(mean, std²).
Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0, Generator* generator = nullptr);
Tensor constant_(Tensor tensor, const Scalar& value);
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
/// U(-a, a) with a = gain * √(6 / (fan_in + fan_out)) (Glorot & Bengio).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr);
/// N(0, std²) with std = gain * √(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr);
/// U(-b, b) with b = gain * √(3 / fan), gain = calculate_gain(nonlinearity, a) (He et al.).
/// nn::Linear and nn::Conv2d use a = √5, which gives b = 1 / √fan_in.
Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, FanMode mode = kFanIn,
                        Nonlinearity nonlinearity = kLeakyReLU, Generator* generator = nullptr);
/// N(0, std²) with std = gain / √fan.
Tensor kaiming_normal_(Tensor tensor, double a = 0.0, FanMode mode = kFanIn,
                       Nonlinearity nonlinearity = kLeakyReLU, Generator* generator = nullptr);

}  // namespace gradlab::nn::init
