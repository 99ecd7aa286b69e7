#pragma once
// LibTorch's enum tags at the top level (torch::kNearest, torch::kReLU, torch::kFanOut, ...):
// the modes of interpolate / nn::Upsample, and nn::init's nonlinearities and fan modes, so
// `torch::nn::init::kaiming_normal_(w, 0, torch::kFanOut, torch::kReLU)` reads as in LibTorch.
// torch::kLinear is both a nonlinearity and an interpolation mode, as in LibTorch. Each tag is
// one entity, reachable as gradlab::kX and nn::init::kX alike (no ambiguity under both
// using-directives).

namespace gradlab {

/// How interpolate and nn::Upsample resample (LibTorch's interpolate mode_t).
enum class InterpolateMode { Nearest, Linear, Bilinear, Bicubic, Trilinear, Area, NearestExact };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::Trilinear;
inline constexpr InterpolateMode kArea = InterpolateMode::Area;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
/// "nearest", "bilinear", ... for messages and printouts.
const char* to_string(InterpolateMode mode);

/// How F::pad fills the border (LibTorch's pad mode_t): only kConstant is implemented.
enum class PadMode { Constant, Reflect, Replicate, Circular };
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;

namespace nn::init {
/// Which fan the Kaiming init keeps the variance of.
enum class FanMode { FanIn, FanOut };
inline constexpr FanMode kFanIn = FanMode::FanIn;
inline constexpr FanMode kFanOut = FanMode::FanOut;

/// The nonlinearity a gain is computed for.
enum class Nonlinearity { Linear, Conv1D, Conv2D, Conv3D, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
inline constexpr Nonlinearity kConv2D = Nonlinearity::Conv2D;
inline constexpr Nonlinearity kSigmoid = Nonlinearity::Sigmoid;
inline constexpr Nonlinearity kTanh = Nonlinearity::Tanh;
inline constexpr Nonlinearity kReLU = Nonlinearity::ReLU;
inline constexpr Nonlinearity kLeakyReLU = Nonlinearity::LeakyReLU;
inline constexpr Nonlinearity kSELU = Nonlinearity::SELU;
}  // namespace nn::init

/// torch::kLinear: the linear interpolation mode, and nn::init's linear nonlinearity.
struct LinearTag {
  constexpr operator InterpolateMode() const { return InterpolateMode::Linear; }  // NOLINT
  constexpr operator nn::init::Nonlinearity() const {                            // NOLINT
    return nn::init::Nonlinearity::Linear;
  }
};
inline constexpr LinearTag kLinear{};

namespace nn::init {
using gradlab::kLinear;
}  // namespace nn::init

using nn::init::kConv2D;
using nn::init::kFanIn;
using nn::init::kFanOut;
using nn::init::kLeakyReLU;
using nn::init::kReLU;
using nn::init::kSELU;
using nn::init::kSigmoid;
using nn::init::kTanh;

}  // namespace gradlab
