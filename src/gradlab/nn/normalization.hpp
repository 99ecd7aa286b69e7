#pragma once
// nn::BatchNorm1d / 2d / 3d and nn::LayerNorm.

#include <optional>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// Options of nn::BatchNorm1d, 2d and 3d.
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  GRADLAB_ARG(int64_t, num_features);
  GRADLAB_ARG(double, eps) = 1e-5;
  /// Weight of the newest batch in the running stats; nullopt = cumulative average.
  GRADLAB_ARG(std::optional<double>, momentum) = 0.1;
  /// Learn weight (γ) and bias (β).
  GRADLAB_ARG(bool, affine) = true;
  /// Keep running_mean / running_var (used in eval mode); without them eval uses batch stats.
  GRADLAB_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;

using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

/// What BatchNorm1d/2d/3d share: parameters, buffers, running-stat updates; they differ only in
/// the input rank they accept. Training: batch mean and biased variance, and running stats
/// updated with momentum (unbiased variance). Eval: running stats.
/// Buffers: running_mean, running_var, num_batches_tracked.
class BatchNormImplBase : public Module {
 public:
  Tensor forward(const Tensor& input);
  /// running_mean = 0, running_var = 1, num_batches_tracked = 0.
  void reset_running_stats();
  /// Also weight = 1, bias = 0.
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  BatchNormOptions options;
  Tensor weight, bias;                                    ///< parameters (affine)
  Tensor running_mean, running_var, num_batches_tracked;  ///< buffers (track_running_stats)

 protected:
  /// name: "BatchNorm2d"; dims: the accepted input ranks; layout: how to say them in errors.
  BatchNormImplBase(const BatchNormOptions& options, const char* name, int64_t dim_lo,
                    int64_t dim_hi, const char* layout);

 private:
  const char* name_;
  int64_t dim_lo_, dim_hi_;
  const char* layout_;
};

/// Normalizes each feature (dim 1) of [N, C] or [N, C, L].
class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options)
      : BatchNormImplBase(options, "BatchNorm1d", 2, 3, "[N, C] or [N, C, L]") {}
  explicit BatchNorm1dImpl(int64_t num_features)
      : BatchNorm1dImpl(BatchNormOptions(num_features)) {}
};
GRADLAB_MODULE(BatchNorm1d);

/// Normalizes each channel (dim 1) of [N, C, H, W] over N, H and W.
class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options)
      : BatchNormImplBase(options, "BatchNorm2d", 4, 4, "[N, C, H, W]") {}
  explicit BatchNorm2dImpl(int64_t num_features)
      : BatchNorm2dImpl(BatchNormOptions(num_features)) {}
};
GRADLAB_MODULE(BatchNorm2d);

/// Normalizes each channel (dim 1) of [N, C, D, H, W] over N, D, H and W.
class BatchNorm3dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm3dImpl(const BatchNormOptions& options)
      : BatchNormImplBase(options, "BatchNorm3d", 5, 5, "[N, C, D, H, W]") {}
  explicit BatchNorm3dImpl(int64_t num_features)
      : BatchNorm3dImpl(BatchNormOptions(num_features)) {}
};
GRADLAB_MODULE(BatchNorm3d);

/// Options of nn::LayerNorm.
struct LayerNormOptions {
  LayerNormOptions(Shape normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  GRADLAB_ARG(Shape, normalized_shape);
  GRADLAB_ARG(double, eps) = 1e-5;
  /// Learn weight and bias of normalized_shape.
  GRADLAB_ARG(bool, elementwise_affine) = true;
};

/// Normalizes over the last dims (normalized_shape) of each sample; same in train and eval.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  explicit LayerNormImpl(Shape normalized_shape)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  LayerNormOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(LayerNorm);

}  // namespace gradlab::nn
