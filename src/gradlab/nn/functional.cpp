// nn::functional's own signatures: LibTorch's top-level op with the option struct unpacked
// (declarations and the op each one runs: nn/functional.hpp).

#include "gradlab/nn/functional.hpp"

#include <cmath>

namespace gradlab::nn::functional {

namespace {
int64_t as_int(Reduction r) { return static_cast<int64_t>(r); }  // at::Reduction's number
}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o,
                     Site site) {
  return cross_entropy_loss(input, target, o.weight_, as_int(o.reduction_), o.ignore_index_,
                            o.label_smoothing_, site);
}
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossFuncOptions& o,
                Site site) {
  return gradlab::nll_loss(log_probs, target, o.weight_, as_int(o.reduction_), o.ignore_index_,
                           site);
}
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction r, Site site) {
  return gradlab::mse_loss(input, target, as_int(r), site);
}
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction r, Site site) {
  return gradlab::l1_loss(input, target, as_int(r), site);
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, Reduction r,
                                        Site site) {
  return gradlab::binary_cross_entropy_with_logits(input, target, Tensor(), Tensor(), as_int(r), site);
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o,
                                        Site site) {
  return gradlab::binary_cross_entropy_with_logits(input, target, o.weight_, o.pos_weight_,
                                                   as_int(o.reduction_), site);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& o, Site site) {
  return gradlab::binary_cross_entropy(input, target, o.weight_, as_int(o.reduction_), site);
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction r, double beta,
                      Site site) {
  return gradlab::smooth_l1_loss(input, target, as_int(r), beta, site);
}

namespace {
void check_not_inplace(const char* op, const DropoutFuncOptions& o) {
  GRADLAB_CHECK(!o.inplace_, ValueError, op, "in-place dropout is not supported by gradlab",
                "inplace(false)", "inplace(true)", "use the returned tensor: x = F::" +
                    std::string(op) + "(x, options)");
}

// feature_dropout on a batched input (rank `batched`) or an unbatched one (rank batched - 1,
// given a batch dim of 1), as LibTorch's functional dropout2d / dropout3d.
Tensor dropout_nd(const char* op, int64_t batched, const char* layout, const Tensor& input,
                  const DropoutFuncOptions& o, const Site& site) {
  check_not_inplace(op, o);
  GRADLAB_CHECK(input.defined(), ValueError, op, "the input is undefined", "a defined tensor",
                "Tensor()");
  GRADLAB_CHECK(o.p_ >= 0 && o.p_ <= 1, ValueError, op,
                "dropout probability has to be between 0 and 1", "0 <= p <= 1",
                std::to_string(o.p_));
  GRADLAB_CHECK(input.dim() == batched || input.dim() == batched - 1, ShapeError, op,
                "expected a " + std::to_string(batched - 1) + "-D (unbatched) or " +
                    std::to_string(batched) + "-D (batched) input",
                layout, shape_str(input.sizes()),
                "dropout2d is for images [N, C, H, W], dropout3d for volumes [N, C, D, H, W]; "
                "for other shapes use dropout or feature_dropout");
  if (input.dim() == batched)
    return feature_dropout(input, o.p_, o.training_, o.generator_, site);
  return feature_dropout(input.unsqueeze(0, site), o.p_, o.training_, o.generator_, site)
      .squeeze(0, site);
}
}  // namespace

Tensor dropout(const Tensor& input, const DropoutFuncOptions& o, Site site) {
  check_not_inplace("dropout", o);
  return gradlab::dropout(input, o.p_, o.training_, o.generator_, site);
}
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& o, Site site) {
  return dropout_nd("dropout2d", 4, "[N, C, H, W] or [C, H, W]", input, o, site);
}
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& o, Site site) {
  return dropout_nd("dropout3d", 5, "[N, C, D, H, W] or [C, D, H, W]", input, o, site);
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o, Site site) {
  return gradlab::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                             o.count_include_pad(), o.divisor_override(), site);
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o, Site site) {
  return gradlab::adaptive_avg_pool2d(input, o.output_size(), site);
}
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& o, Site site) {
  return gradlab::adaptive_avg_pool1d(input, o.output_size(), site);
}
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o, Site site) {
  return gradlab::group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps(), site);
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o, Site site) {
  const char* op = "interpolate";
  GRADLAB_CHECK(input.defined(), ValueError, op, "the input is undefined", "a defined tensor",
                "Tensor()");
  const int64_t spatial = input.dim() - 2;
  const InterpolateMode mode = o.mode();
  GRADLAB_CHECK(spatial == 1 || spatial == 2, ShapeError, op,
                "gradlab resamples 3-D [N, C, L] and 4-D [N, C, H, W] inputs",
                "a 3-D or 4-D input", shape_str(input.sizes()),
                "an unbatched image [C, H, W] needs .unsqueeze(0) first; 5-D volumes (kTrilinear) "
                "are not in gradlab");
  GRADLAB_CHECK(mode != kBicubic && mode != kTrilinear && mode != kNearestExact, ValueError, op,
                std::string("mode ") + to_string(mode) + " is not supported by gradlab",
                "kNearest, kLinear, kBilinear or kArea", to_string(mode),
                "kBilinear is the nearest supported mode for images");
  const bool linear = mode == kLinear || mode == kBilinear;
  if (linear) {
    const int64_t want = mode == kLinear ? 1 : 2;
    GRADLAB_CHECK(spatial == want, ShapeError, op,
                  "got " + std::to_string(input.dim()) + "-D input, but " + to_string(mode) +
                      " mode needs " + std::to_string(want + 2) + "-D input",
                  std::to_string(want + 2) + "-D input", shape_str(input.sizes()),
                  "kLinear resamples [N, C, L], kBilinear [N, C, H, W]");
  } else {
    GRADLAB_CHECK(!o.align_corners().has_value(), ValueError, op,
                  "align_corners option can only be set with the interpolating modes: linear | "
                  "bilinear | bicubic | trilinear",
                  "no align_corners with mode " + std::string(to_string(mode)), "align_corners set");
  }
  GRADLAB_CHECK(!o.antialias(), ValueError, op, "anti-aliasing is not supported by gradlab",
                "antialias(false)", "antialias(true)");
  GRADLAB_CHECK(o.size().has_value() != o.scale_factor().has_value(), ValueError, op,
                "exactly one of size and scale_factor must be given", "size or scale_factor",
                o.size() ? "both" : "neither");
  std::vector<int64_t> size;
  std::vector<std::optional<double>> scales(static_cast<size_t>(spatial));
  if (o.size()) {
    size = *o.size();
    GRADLAB_CHECK(static_cast<int64_t>(size.size()) == spatial, ShapeError, op,
                  "size shape must match input shape (one entry per spatial dim)",
                  std::to_string(spatial) + " entries", std::to_string(size.size()));
  } else {
    const std::vector<double>& f = *o.scale_factor();
    GRADLAB_CHECK(static_cast<int64_t>(f.size()) == spatial, ShapeError, op,
                  "scale_factor shape must match input shape (one entry per spatial dim)",
                  std::to_string(spatial) + " entries", std::to_string(f.size()));
    for (int64_t s = 0; s < spatial; ++s) {
      const double v = f[static_cast<size_t>(s)];
      GRADLAB_CHECK(v > 0, ValueError, op, "scale factors must be positive", "> 0",
                    std::to_string(v));
      size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(input.size(2 + s)) * v)));
      if (!o.recompute_scale_factor().value_or(false)) scales[static_cast<size_t>(s)] = v;
    }
  }
  const bool corners = o.align_corners().value_or(false);
  if (mode == kArea)
    return spatial == 1 ? gradlab::adaptive_avg_pool1d(input, size[0], site)
                        : gradlab::adaptive_avg_pool2d(input, IntPair(size[0], size[1]), site);
  if (spatial == 1)
    return linear ? upsample_linear1d(input, size, corners, scales[0], site)
                  : upsample_nearest1d(input, size, scales[0], site);
  return linear ? upsample_bilinear2d(input, size, corners, scales[0], scales[1], site)
                : upsample_nearest2d(input, size, scales[0], scales[1], site);
}

Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o, Site site) {
  return gradlab::softplus(x, o.beta_, o.threshold_, site);
}
Tensor embedding(const Tensor& indices, const Tensor& weight, Site site) {
  return gradlab::embedding(weight, indices, site);
}

}  // namespace gradlab::nn::functional

namespace gradlab {
const char* to_string(InterpolateMode mode) {
  switch (mode) {
    case InterpolateMode::Nearest: return "nearest";
    case InterpolateMode::Linear: return "linear";
    case InterpolateMode::Bilinear: return "bilinear";
    case InterpolateMode::Bicubic: return "bicubic";
    case InterpolateMode::Trilinear: return "trilinear";
    case InterpolateMode::Area: return "area";
    case InterpolateMode::NearestExact: return "nearest-exact";
  }
  return "?";
}
}  // namespace gradlab
