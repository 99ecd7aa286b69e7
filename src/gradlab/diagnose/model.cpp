#include "gradlab/diagnose/model.hpp"

#include "gradlab/core/error.hpp"

namespace gradlab::diagnose {

namespace fn = nn::functional;

Loss::Loss(Kind k, std::function<Tensor(const Tensor&, const Tensor&)> f, std::string n)
    : kind(k), fn(std::move(f)), name(std::move(n)) {
  GRADLAB_CHECK(static_cast<bool>(fn), ValueError, "diagnose::Loss", "the loss function is empty", "a callable",
                "an empty std::function");
  if (name.empty()) name = "custom loss";
}
Loss::Loss(nn::CrossEntropyLoss m)
    : Loss(Kind::CrossEntropy, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "CrossEntropyLoss") {}
Loss::Loss(nn::NLLLoss m) : Loss(Kind::NLL, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "NLLLoss") {}
Loss::Loss(nn::BCEWithLogitsLoss m)
    : Loss(Kind::BCEWithLogits, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "BCEWithLogitsLoss") {}
Loss::Loss(nn::MSELoss m) : Loss(Kind::MSE, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "MSELoss") {}

Loss Loss::cross_entropy() {
  return Loss(Kind::CrossEntropy, [](const Tensor& o, const Tensor& t) { return fn::cross_entropy(o, t); }, "cross_entropy");
}
Loss Loss::nll() {
  return Loss(Kind::NLL, [](const Tensor& o, const Tensor& t) { return fn::nll_loss(o, t); }, "nll_loss");
}
Loss Loss::bce_with_logits() {
  return Loss(Kind::BCEWithLogits, [](const Tensor& o, const Tensor& t) { return fn::binary_cross_entropy_with_logits(o, t); },
              "binary_cross_entropy_with_logits");
}
Loss Loss::mse() {
  return Loss(Kind::MSE, [](const Tensor& o, const Tensor& t) { return fn::mse_loss(o, t); }, "mse_loss");
}

}  // namespace gradlab::diagnose
