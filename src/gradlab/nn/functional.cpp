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

Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o, Site site) {
  return gradlab::softplus(x, o.beta_, o.threshold_, site);
}
Tensor embedding(const Tensor& indices, const Tensor& weight, Site site) {
  return gradlab::embedding(weight, indices, site);
}

}  // namespace gradlab::nn::functional
