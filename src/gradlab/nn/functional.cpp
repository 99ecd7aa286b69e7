// nn::functional's own signatures: LibTorch's top-level op with the option struct unpacked
// (declarations and the op each one runs: nn/functional.hpp).

#include "gradlab/nn/functional.hpp"

namespace gradlab::nn::functional {

namespace {
int64_t as_int(Reduction r) { return static_cast<int64_t>(r); }  // at::Reduction's number
}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o,
                     Site site) {
  return cross_entropy_loss(input, target, Tensor(), as_int(o.reduction_), o.ignore_index_,
                            o.label_smoothing_, site);
}
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossFuncOptions& o,
                Site site) {
  return gradlab::nll_loss(log_probs, target, Tensor(), as_int(o.reduction_), o.ignore_index_, site);
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
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction r, double beta,
                      Site site) {
  return gradlab::smooth_l1_loss(input, target, as_int(r), beta, site);
}

Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o, Site site) {
  return gradlab::softplus(x, o.beta_, o.threshold_, site);
}
Tensor embedding(const Tensor& indices, const Tensor& weight, Site site) {
  return gradlab::embedding(weight, indices, site);
}

}  // namespace gradlab::nn::functional
