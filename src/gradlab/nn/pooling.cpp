// nn::AvgPool2d, nn::AdaptiveAvgPool1d / 2d, nn::Upsample, nn::GroupNorm: each forward is one
// call of its op (ops/resample.cpp, ops/nn_ops.cpp) or of F::interpolate.

#include "gradlab/nn/pooling.hpp"

#include <ostream>

#include "gradlab/core/factories.hpp"
#include "gradlab/nn/functional.hpp"
#include "gradlab/nn/init.hpp"

namespace gradlab::nn {

namespace {
void check_input(const char* layer, const Tensor& x) {
  GRADLAB_CHECK(x.defined(), ValueError, layer, "the input is undefined", "a defined tensor",
                "Tensor()");
}
template <class V>
void print_list(std::ostream& os, const std::vector<V>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
}
}  // namespace

Tensor AvgPool2dImpl::forward(const Tensor& input) {
  check_input("AvgPool2d", input);
  return functional::avg_pool2d(input, options);
}

void AvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AvgPool2d(kernel_size=" << options.kernel_size().str()
     << ", stride=" << options.stride().str() << ", padding=" << options.padding().str() << ")";
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) {
  check_input("AdaptiveAvgPool2d", input);
  return adaptive_avg_pool2d(input, options.output_size());
}

void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveAvgPool2d(output_size=" << options.output_size().str() << ")";
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& input) {
  check_input("AdaptiveAvgPool1d", input);
  return adaptive_avg_pool1d(input, options.output_size());
}

void AdaptiveAvgPool1dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveAvgPool1d(output_size=" << options.output_size() << ")";
}

Tensor UpsampleImpl::forward(const Tensor& input) {
  check_input("Upsample", input);
  return functional::interpolate(input, InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

void UpsampleImpl::pretty_print(std::ostream& os) const {
  os << "Upsample(";
  if (options.size()) os << "size=", print_list(os, *options.size());
  if (options.scale_factor()) os << "scale_factor=", print_list(os, *options.scale_factor());
  os << ", mode=" << to_string(options.mode()) << ")";
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& o) : options(o) {
  GRADLAB_CHECK(o.num_groups() > 0 && o.num_channels() > 0 && o.num_channels() % o.num_groups() == 0,
                ValueError, "GroupNorm", "num_channels must be divisible by num_groups",
                "num_groups > 0 dividing num_channels = " + std::to_string(o.num_channels()),
                std::to_string(o.num_groups()));
  if (o.affine()) {
    weight = register_parameter("weight", ones({o.num_channels()}));
    bias = register_parameter("bias", zeros({o.num_channels()}));
  }
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  check_input("GroupNorm", input);
  return group_norm(input, options.num_groups(), weight, bias, options.eps());
}

void GroupNormImpl::pretty_print(std::ostream& os) const {
  os << "GroupNorm(" << options.num_groups() << ", " << options.num_channels()
     << ", eps=" << options.eps() << ", affine=" << (options.affine() ? "true" : "false") << ")";
}

}  // namespace gradlab::nn
