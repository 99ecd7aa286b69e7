// nn::MaxPool1d, AvgPool1d, AdaptiveMaxPool1d / 2d, PixelShuffle / PixelUnshuffle, ReflectionPad1d / 2d,
// ReplicationPad1d / 2d, ConstantPad1d / 2d, InstanceNorm1d / 2d (nn/pooling.hpp), and
// MaxPool2d::forward_with_indices (nn/conv.hpp). Each forward is one call of its F:: form.

#include <ostream>
#include <string>

#include "gradlab/core/factories.hpp"
#include "gradlab/nn/conv.hpp"
#include "gradlab/nn/functional.hpp"
#include "gradlab/nn/init.hpp"
#include "gradlab/nn/pooling.hpp"

namespace gradlab::nn {

namespace F = functional;

namespace {
const char* tf(bool b) { return b ? "true" : "false"; }
void check_defined(const char* layer, const Tensor& x) {
  GRADLAB_CHECK(x.defined(), ValueError, layer, "the input is undefined", "a defined tensor", "Tensor()");
}
void print_list(std::ostream& os, const std::vector<int64_t>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
}
}  // namespace

std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& input) {
  check_defined("MaxPool2d", input);
  return F::max_pool2d_with_indices(input, options);
}

// ---- 1-D pools ---------------------------------------------------------------------------------
Tensor MaxPool1dImpl::forward(const Tensor& input) {
  check_defined("MaxPool1d", input);
  return F::max_pool1d(input, options);
}
std::tuple<Tensor, Tensor> MaxPool1dImpl::forward_with_indices(const Tensor& input) {
  check_defined("MaxPool1d", input);
  return F::max_pool1d_with_indices(input, options);
}
void MaxPool1dImpl::pretty_print(std::ostream& os) const {
  os << "MaxPool1d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
     << ", padding=" << options.padding() << ", dilation=" << options.dilation()
     << ", ceil_mode=" << tf(options.ceil_mode()) << ")";
}
Tensor AvgPool1dImpl::forward(const Tensor& input) {
  check_defined("AvgPool1d", input);
  return F::avg_pool1d(input, options);
}
void AvgPool1dImpl::pretty_print(std::ostream& os) const {
  os << "AvgPool1d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
     << ", padding=" << options.padding() << ")";
}

Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& input) {
  check_defined("AdaptiveMaxPool2d", input);
  return F::adaptive_max_pool2d(input, options);
}
std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  check_defined("AdaptiveMaxPool2d", input);
  return F::adaptive_max_pool2d_with_indices(input, options);
}
void AdaptiveMaxPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveMaxPool2d(output_size=" << options.output_size().str() << ")";
}
Tensor AdaptiveMaxPool1dImpl::forward(const Tensor& input) {
  check_defined("AdaptiveMaxPool1d", input);
  return F::adaptive_max_pool1d(input, options);
}
std::tuple<Tensor, Tensor> AdaptiveMaxPool1dImpl::forward_with_indices(const Tensor& input) {
  check_defined("AdaptiveMaxPool1d", input);
  return F::adaptive_max_pool1d_with_indices(input, options);
}
void AdaptiveMaxPool1dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveMaxPool1d(output_size=" << options.output_size() << ")";
}

// ---- pixel shuffle -----------------------------------------------------------------------------
Tensor PixelShuffleImpl::forward(const Tensor& input) {
  check_defined("PixelShuffle", input);
  return F::pixel_shuffle(input, options);
}
void PixelShuffleImpl::pretty_print(std::ostream& os) const {
  os << "PixelShuffle(upscale_factor=" << options.upscale_factor() << ")";
}
Tensor PixelUnshuffleImpl::forward(const Tensor& input) {
  check_defined("PixelUnshuffle", input);
  return F::pixel_unshuffle(input, options);
}
void PixelUnshuffleImpl::pretty_print(std::ostream& os) const {
  os << "PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}

// ---- pads: the op of their mode on the last 1 or 2 dims ----------------------------------------
#define GRADLAB_PAD_FORWARD(Name, call)                                \
  Tensor Name##Impl::forward(const Tensor& input) {                    \
    check_defined(#Name, input);                                       \
    return call;                                                       \
  }                                                                    \
  void Name##Impl::pretty_print(std::ostream& os) const {              \
    os << #Name "(";                                                   \
    print_list(os, options.padding());                                 \
    os << ")";                                                         \
  }
GRADLAB_PAD_FORWARD(ReflectionPad1d, reflection_pad1d(input, options.padding()))
GRADLAB_PAD_FORWARD(ReflectionPad2d, reflection_pad2d(input, options.padding()))
GRADLAB_PAD_FORWARD(ReplicationPad1d, replication_pad1d(input, options.padding()))
GRADLAB_PAD_FORWARD(ReplicationPad2d, replication_pad2d(input, options.padding()))
GRADLAB_PAD_FORWARD(ConstantPad1d, F::pad(input, F::PadFuncOptions(options.padding()).value(options.value())))
GRADLAB_PAD_FORWARD(ConstantPad2d, F::pad(input, F::PadFuncOptions(options.padding()).value(options.value())))
#undef GRADLAB_PAD_FORWARD

// ---- instance norm -----------------------------------------------------------------------------
namespace {
// weight / bias registered when affine; running stats refused
void instance_norm_init(const char* layer, Module& m, const InstanceNormOptions& o, Tensor& weight, Tensor& bias) {
  GRADLAB_CHECK(o.num_features() > 0, ValueError, layer, "num_features must be positive", "num_features > 0",
                std::to_string(o.num_features()));
  GRADLAB_CHECK(!o.track_running_stats(), ValueError, layer,
                "track_running_stats is not supported by gradlab's instance norm", "track_running_stats(false)",
                "track_running_stats(true)",
                "instance norm then normalizes with each instance's own statistics in train and eval alike");
  if (o.affine()) {
    weight = m.register_parameter("weight", ones({o.num_features()}));
    bias = m.register_parameter("bias", zeros({o.num_features()}));
  }
}
// unbatched input (dim == batched - 1) gets a batch dim of 1 for the call
Tensor instance_norm_forward(const char* layer, const Tensor& x, int64_t batched, const InstanceNormOptions& o,
                             const Tensor& weight, const Tensor& bias) {
  check_defined(layer, x);
  GRADLAB_CHECK(x.dim() == batched || x.dim() == batched - 1, ShapeError, layer, "unexpected input rank",
                std::to_string(batched - 1) + "-D or " + std::to_string(batched) + "-D input",
                std::to_string(x.dim()) + "-D input " + shape_str(x.sizes()));
  const bool unbatched = x.dim() == batched - 1;
  Tensor in = unbatched ? x.unsqueeze(0) : x;
  GRADLAB_CHECK(in.size(1) == o.num_features(), ShapeError, layer, "the channel dim must be num_features",
                std::to_string(o.num_features()) + " channels", shape_str(x.sizes()));
  Tensor y = F::instance_norm(in, F::InstanceNormFuncOptions().weight(weight).bias(bias).eps(o.eps()));
  return unbatched ? y.squeeze(0) : y;
}
void instance_norm_print(std::ostream& os, const char* layer, const InstanceNormOptions& o) {
  os << layer << "(" << o.num_features() << ", eps=" << o.eps() << ", momentum=" << o.momentum()
     << ", affine=" << tf(o.affine()) << ", track_running_stats=" << tf(o.track_running_stats()) << ")";
}
}  // namespace

InstanceNorm1dImpl::InstanceNorm1dImpl(const InstanceNorm1dOptions& o) : options(o) {
  instance_norm_init("InstanceNorm1d", *this, o, weight, bias);
}
void InstanceNorm1dImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}
Tensor InstanceNorm1dImpl::forward(const Tensor& input) {
  return instance_norm_forward("InstanceNorm1d", input, 3, options, weight, bias);
}
void InstanceNorm1dImpl::pretty_print(std::ostream& os) const { instance_norm_print(os, "InstanceNorm1d", options); }

InstanceNorm2dImpl::InstanceNorm2dImpl(const InstanceNorm2dOptions& o) : options(o) {
  instance_norm_init("InstanceNorm2d", *this, o, weight, bias);
}
void InstanceNorm2dImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}
Tensor InstanceNorm2dImpl::forward(const Tensor& input) {
  return instance_norm_forward("InstanceNorm2d", input, 4, options, weight, bias);
}
void InstanceNorm2dImpl::pretty_print(std::ostream& os) const { instance_norm_print(os, "InstanceNorm2d", options); }

}  // namespace gradlab::nn
