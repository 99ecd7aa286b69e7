#include "gradlab/diagnose/model.hpp"

#include "gradlab/core/error.hpp"

namespace gradlab::diagnose {

namespace fn = nn::functional;

Loss::Loss(Kind k, std::function<Tensor(const Tensor&, const Tensor&)> f, std::string n, Site where)
    : kind(k), fn(std::move(f)), name(std::move(n)), site(where) {
  GRADLAB_CHECK(static_cast<bool>(fn), ValueError, "diagnose::Loss", "the loss function is empty", "a callable",
                "an empty std::function");
  if (name.empty()) name = "custom loss";
}
Loss::Loss(nn::CrossEntropyLoss m, Site where)
    : Loss(Kind::CrossEntropy, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "CrossEntropyLoss", where) {}
Loss::Loss(nn::NLLLoss m, Site where)
    : Loss(Kind::NLL, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "NLLLoss", where) {}
Loss::Loss(nn::BCEWithLogitsLoss m, Site where)
    : Loss(Kind::BCEWithLogits, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "BCEWithLogitsLoss", where) {}
Loss::Loss(nn::MSELoss m, Site where)
    : Loss(Kind::MSE, [m](const Tensor& o, const Tensor& t) { return m(o, t); }, "MSELoss", where) {}

Loss Loss::cross_entropy(Site where) {
  return Loss(Kind::CrossEntropy, [](const Tensor& o, const Tensor& t) { return fn::cross_entropy(o, t); }, "cross_entropy",
              where);
}
Loss Loss::nll(Site where) {
  return Loss(Kind::NLL, [](const Tensor& o, const Tensor& t) { return fn::nll_loss(o, t); }, "nll_loss", where);
}
Loss Loss::bce_with_logits(Site where) {
  return Loss(Kind::BCEWithLogits, [](const Tensor& o, const Tensor& t) { return fn::binary_cross_entropy_with_logits(o, t); },
              "binary_cross_entropy_with_logits", where);
}
Loss Loss::mse(Site where) {
  return Loss(Kind::MSE, [](const Tensor& o, const Tensor& t) { return fn::mse_loss(o, t); }, "mse_loss", where);
}

}  // namespace gradlab::diagnose
