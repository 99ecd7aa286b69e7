#pragma once
// What the model and training checks run: a model (its module, for the parameters, and how to
// call it) and a loss (a function, and which kind, for the expected loss at init and the
// activation/loss pairing).
//
//   nn::Sequential net(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
//   diagnose::Model model(net);                             // any holder with forward(Tensor)
//   diagnose::Loss loss(nn::CrossEntropyLoss());             // or Loss::cross_entropy()

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/loss.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::diagnose {

/// A module and its forward. Built from a holder (nn::Sequential, a GRADLAB_MODULE type) or
/// from a module pointer and any callable.
struct Model {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(const Tensor&)> forward;
  /// The user's line that handed the model over (`diagnose::doctor(net, ...)` converts net here,
  /// so it is that call's line). Findings about an op inside a library module that no user line
  /// calls (a Softmax inside a Sequential) name it instead of a line of gradlab's sources.
  Site site = Site::unknown();

  Model(std::shared_ptr<nn::Module> m, std::function<Tensor(const Tensor&)> f, Site where = {})
      : module(std::move(m)), forward(std::move(f)), site(where) {}
  /// From a holder: Model(net) calls net->forward(x) (through the holder, so forward hooks run).
  template <class H, std::enable_if_t<nn::detail::is_callable_holder_v<H>, int> = 0>
  Model(H holder, Site where = {})  // NOLINT: diagnose::doctor(net, ...)
      : module(holder.ptr()), forward([holder](const Tensor& x) { return Tensor(holder(x)); }), site(where) {}

  Tensor operator()(const Tensor& x) const { return forward(x); }
};

/// A loss: output [B, ...] and target [B, ...] -> a scalar; the kind says what it expects.
struct Loss {
  enum class Kind {
    CrossEntropy,   ///< logits [B, C], class indices [B]
    NLL,            ///< log-probabilities [B, C], class indices [B]
    BCEWithLogits,  ///< logits, targets in [0, 1] of the same shape
    MSE,            ///< any output, targets of the same shape
    Other           ///< a custom loss: no expected value at init, pairing read from its graph only
  };
  Kind kind = Kind::Other;
  std::function<Tensor(const Tensor& output, const Tensor& target)> fn;
  /// Name for messages: "CrossEntropyLoss", ...
  std::string name;
  /// The user's line that made this Loss (as Model::site): named for the loss's own op.
  Site site = Site::unknown();

  Loss(Kind k, std::function<Tensor(const Tensor&, const Tensor&)> f, std::string n = {}, Site where = {});
  Loss(nn::CrossEntropyLoss m, Site where = {});   // NOLINT
  Loss(nn::NLLLoss m, Site where = {});            // NOLINT
  Loss(nn::BCEWithLogitsLoss m, Site where = {});  // NOLINT
  Loss(nn::MSELoss m, Site where = {});            // NOLINT
  /// nn::functional::cross_entropy with default options (and likewise below).
  static Loss cross_entropy(Site where = {});
  static Loss nll(Site where = {});
  static Loss bce_with_logits(Site where = {});
  static Loss mse(Site where = {});

  Tensor operator()(const Tensor& output, const Tensor& target) const { return fn(output, target); }
  /// Classification losses that take class indices (CrossEntropy, NLL).
  bool takes_class_indices() const { return kind == Kind::CrossEntropy || kind == Kind::NLL; }
};

}  // namespace gradlab::diagnose
