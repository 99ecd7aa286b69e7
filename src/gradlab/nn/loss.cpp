#include "gradlab/nn/loss.hpp"

#include <ostream>

namespace gradlab::nn {

namespace {
const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Sum:
      return "sum";
    case Reduction::Mean:
      return "mean";
  }
  return "mean";
}
}  // namespace

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& o) : options(o) {
  if (o.weight().defined()) weight = register_buffer("weight", o.weight());
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target,
                                   functional::CrossEntropyFuncOptions()
                                       .weight(weight)
                                       .reduction(options.reduction())
                                       .ignore_index(options.ignore_index())
                                       .label_smoothing(options.label_smoothing()));
}
void CrossEntropyLossImpl::pretty_print(std::ostream& os) const {
  os << "CrossEntropyLoss(reduction=" << reduction_name(options.reduction())
     << ", ignore_index=" << options.ignore_index()
     << ", label_smoothing=" << options.label_smoothing() << ")";
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& o) : options(o) {
  if (o.weight().defined()) weight = register_buffer("weight", o.weight());
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target,
                              functional::NLLLossFuncOptions()
                                  .weight(weight)
                                  .reduction(options.reduction())
                                  .ignore_index(options.ignore_index()));
}
void NLLLossImpl::pretty_print(std::ostream& os) const {
  os << "NLLLoss(reduction=" << reduction_name(options.reduction())
     << ", ignore_index=" << options.ignore_index() << ")";
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options.reduction());
}
void MSELossImpl::pretty_print(std::ostream& os) const {
  os << "MSELoss(reduction=" << reduction_name(options.reduction()) << ")";
}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::l1_loss(input, target, options.reduction());
}
void L1LossImpl::pretty_print(std::ostream& os) const {
  os << "L1Loss(reduction=" << reduction_name(options.reduction()) << ")";
}

Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::smooth_l1_loss(input, target, options);
}
void SmoothL1LossImpl::pretty_print(std::ostream& os) const {
  os << "SmoothL1Loss(reduction=" << reduction_name(options.reduction()) << ", beta=" << options.beta() << ")";
}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::huber_loss(input, target, options);
}
void HuberLossImpl::pretty_print(std::ostream& os) const {
  os << "HuberLoss(reduction=" << reduction_name(options.reduction()) << ", delta=" << options.delta() << ")";
}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::kl_div(input, target, options);
}
void KLDivLossImpl::pretty_print(std::ostream& os) const {
  os << "KLDivLoss(reduction=" << (options.batch_mean_ ? "batchmean" : reduction_name(options.reduction_))
     << ", log_target=" << (options.log_target() ? "true" : "false") << ")";
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o) : options(o) {
  if (o.weight().defined()) weight = register_buffer("weight", o.weight());
  if (o.pos_weight().defined()) pos_weight = register_buffer("pos_weight", o.pos_weight());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy_with_logits(
      input, target,
      functional::BinaryCrossEntropyWithLogitsFuncOptions().weight(weight).pos_weight(pos_weight).reduction(
          options.reduction()));
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream& os) const {
  os << "BCEWithLogitsLoss(reduction=" << reduction_name(options.reduction()) << ")";
}

BCELossImpl::BCELossImpl(const BCELossOptions& o) : options(o) {
  if (o.weight().defined()) weight = register_buffer("weight", o.weight());
}
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy(
      input, target,
      functional::BinaryCrossEntropyFuncOptions().weight(weight).reduction(options.reduction()));
}
void BCELossImpl::pretty_print(std::ostream& os) const {
  os << "BCELoss(reduction=" << reduction_name(options.reduction())
     << (weight.defined() ? ", weight=" + shape_str(weight.sizes()) : std::string()) << ")";
}

}  // namespace gradlab::nn
