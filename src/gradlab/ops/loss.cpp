// Softmax family and losses, composed from primitives (their backward comes from the pieces;
// DESIGN: composites first, a fused version later with the composite kept as its oracle).

#include "gradlab/ops/common.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab {
using namespace ops_detail;

// softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m),  m = max_j x_j (detached: the value does not depend on it)
Tensor softmax(const Tensor& x, int64_t dim, Site site) {
  check_defined("softmax", x);
  const Tensor xa = autocast_float32(x, site);  // autocast: float32 list
  Tensor xf = cast_to(xa, float_dtype(xa), site);
  const int64_t d = wrap_dim(dim, xf.dim(), "softmax");
  Tensor m = amax(xf, {d}, /*keepdim=*/true).detach();
  m = where(isfinite(m), m, 0.0);
  Tensor e = exp(sub(xf, m, site), site);
  return div(e, sum(e, {d}, /*keepdim=*/true, site), site);
}

// log_softmax(x)_i = x_i - logsumexp(x)
Tensor log_softmax(const Tensor& x, int64_t dim, Site site) {
  check_defined("log_softmax", x);
  const Tensor xa = autocast_float32(x, site);  // autocast: float32 list
  Tensor xf = cast_to(xa, float_dtype(xa), site);
  const int64_t d = wrap_dim(dim, xf.dim(), "log_softmax");
  return sub(xf, logsumexp(xf, {d}, /*keepdim=*/true, site), site);
}

namespace {

using nn::functional::Reduction;

Tensor reduce(const Tensor& loss, Reduction r, const Site& site) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss, site);
    case Reduction::Mean: return mean(loss, site);
  }
  return loss;
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  check_defined(op, input);
  check_defined(op, target, "target");
  if (input.sizes() == target.sizes()) return;
  throw ShapeError(error_message(
      op, "input and target shapes differ", shape_str(input.sizes()), shape_str(target.sizes()),
      "broadcasting them (as PyTorch does, with a warning) would compare every input with every "
      "target; reshape one side, e.g. output.squeeze(-1) or target.unsqueeze(-1)"));
}

// A weight that multiplies the elementwise loss: it must broadcast to the input's shape (it may
// not grow the loss). Cast to `like`'s dtype.
Tensor elementwise_weight(const char* op, const char* arg, const Tensor& w_in, const Tensor& like,
                          const Site& site) {
  const Tensor w = autocast_float32(w_in, site);
  bool fits = w.dim() <= like.dim();
  for (int64_t k = 1; fits && k <= w.dim(); ++k) fits = w.size(-k) == 1 || w.size(-k) == like.size(-k);
  GRADLAB_CHECK(fits, ShapeError, op, std::string(arg) + " must broadcast to the input's shape",
                "a shape that broadcasts to " + shape_str(like.sizes()), shape_str(w.sizes()),
                "one weight per element, or e.g. per class along the last dim");
  GRADLAB_CHECK(w.is_floating_point(), DTypeError, op, std::string(arg) + " must be floating point",
                "float32 or float64", to_string(w.dtype()));
  check_same_device(op, like, w);
  return cast_to(w, like.dtype(), site);
}

void check_smoothing(const char* op, double label_smoothing) {
  GRADLAB_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, op,
                "label_smoothing must be in [0, 1]", "0 <= label_smoothing <= 1",
                std::to_string(label_smoothing));
}

// Shared by nll_loss and cross_entropy: log-probabilities [N, C], targets [N].
Tensor nll_core(const char* op, const Tensor& logp, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, double smoothing, Reduction reduction, const Site& site) {
  check_defined(op, target, "target");
  GRADLAB_CHECK(target.dtype() == kInt64, DTypeError, op, "target must hold class indices (int64)", "int64",
                to_string(target.dtype()),
                "class indices come from labels .to(kInt64); for one-hot or probability targets use "
                "-(target * log_softmax(input, 1)).sum(1).mean()");
  GRADLAB_CHECK(logp.dim() == 2, ShapeError, op, "input must be [N, C] (or [C] with a 0-d target)",
                "a 2-D input", shape_str(logp.sizes()));
  GRADLAB_CHECK(target.dim() == 1, ShapeError, op, "target must be 1-D [N]", "[" + std::to_string(logp.size(0)) + "]",
                shape_str(target.sizes()), "labels of shape [N, 1] need .squeeze(1); one-hot labels need argmax(1)");
  GRADLAB_CHECK(target.size(0) == logp.size(0), ShapeError, op,
                "expected input batch_size (" + std::to_string(logp.size(0)) + ") to match target batch_size (" +
                    std::to_string(target.size(0)) + ")",
                std::to_string(logp.size(0)) + " targets", std::to_string(target.size(0)));
  const int64_t C = logp.size(1);
  Tensor w;  // class weights [C], or undefined
  if (weight.defined()) {
    GRADLAB_CHECK(weight.dim() == 1 && weight.size(0) == C, ShapeError, op,
                  "weight must hold one value per class", "[" + std::to_string(C) + "]",
                  shape_str(weight.sizes()), "a class weight is a 1-D tensor of C values");
    GRADLAB_CHECK(weight.is_floating_point(), DTypeError, op, "weight must be floating point",
                  "float32 or float64", to_string(weight.dtype()));
    check_same_device(op, logp, weight);
    w = cast_to(weight, logp.dtype(), site);
  }
  Tensor valid = ne(target, ignore_index);
  Tensor safe = where(valid, target, 0);
  kern::check_indices(safe, C, op);
  Tensor picked = gather(logp, 1, safe.unsqueeze(1), site).squeeze(1, site);  // logp[i, target_i]
  // loss_i = -w[t_i] logp[i, t_i]  (w = 1 without class weights)
  Tensor wt = w.defined() ? index_select(w, 0, safe, site) : Tensor();
  Tensor loss = neg(w.defined() ? mul(picked, wt, site) : picked, site);
  if (smoothing > 0) {
    // (1 - ε) nll + ε / C Σ_c -w_c logp_c: the target mixed with the uniform distribution.
    Tensor all = w.defined() ? mul(logp, w, site) : logp;
    loss = add(mul(loss, 1.0 - smoothing, site),
               mul(neg(sum(all, {1}, false, site), site), smoothing / static_cast<double>(C), site), site);
  }
  Tensor validf = valid.to(logp.dtype());
  loss = mul(loss, validf, site);
  // mean over kept targets, each counted with its class weight: Σ loss_i / Σ w[t_i]
  if (reduction == Reduction::Mean)
    return div(sum(loss, site), sum(w.defined() ? mul(validf, wt, site) : validf), site);
  return reduce(loss, reduction, site);
}

}  // namespace

namespace ops_detail {
Reduction to_reduction(const char* op, int64_t r) {
  GRADLAB_CHECK(r >= 0 && r <= 2, ValueError, op, "unknown reduction",
                "0 (none), 1 (mean) or 2 (sum), as at::Reduction", std::to_string(r),
                "nn::functional's losses take kNone / kMean / kSum");
  return static_cast<Reduction>(r);
}
}  // namespace ops_detail

Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing,
                          Site site) {
  const char* op = "cross_entropy";
  check_defined(op, input);
  check_defined(op, target, "target");
  check_smoothing(op, label_smoothing);
  const Reduction r = to_reduction(op, reduction);
  if (input.dim() == 1 && target.dim() == 0) {  // one sample: [C] logits and a 0-d class
    Tensor l = cross_entropy_loss(input.unsqueeze(0), target.unsqueeze(0), weight, reduction,
                                  ignore_index, label_smoothing, site);
    return r == Reduction::None ? l.squeeze(0) : l;
  }
  GRADLAB_CHECK(input.dim() == 2, ShapeError, op, "input must be logits [N, C]", "a 2-D input",
                shape_str(input.sizes()), "flatten extra dims first, e.g. logits.reshape({-1, C})");
  // Class weights: the composite (log_softmax, then the weighted nll).
  if (weight.defined())
    return nll_core(op, gradlab::log_softmax(autocast_float32(input, site), 1, site), target,
                    autocast_float32(weight, site), ignore_index, label_smoothing, r, site);
  // One node; its oracle is cross_entropy_loss_reference, below.
  return cross_entropy_loss_fused(autocast_float32(input, site), target, reduction, ignore_index,
                                  label_smoothing, site);
}

Tensor cross_entropy_loss_reference(const Tensor& input, const Tensor& target, int64_t reduction,
                                    int64_t ignore_index, double label_smoothing, Site site) {
  const char* op = "cross_entropy";
  check_defined(op, input);
  check_smoothing(op, label_smoothing);
  GRADLAB_CHECK(input.dim() == 2, ShapeError, op, "input must be logits [N, C]", "a 2-D input",
                shape_str(input.sizes()), "flatten extra dims first, e.g. logits.reshape({-1, C})");
  return nll_core(op, gradlab::log_softmax(input, 1, site), target, Tensor(), ignore_index,
                  label_smoothing, to_reduction(op, reduction), site);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t reduction, int64_t ignore_index, Site site) {
  const char* op = "nll_loss";
  check_defined(op, log_probs);
  return nll_core(op, autocast_float32(log_probs, site), target,
                  weight.defined() ? autocast_float32(weight, site) : Tensor(), ignore_index, 0.0,
                  to_reduction(op, reduction), site);
}

Tensor mse_loss(const Tensor& input_in, const Tensor& target_in, int64_t reduction, Site site) {
  check_same_shape("mse_loss", input_in, target_in);
  const Reduction r = to_reduction("mse_loss", reduction);
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  Tensor d = sub(input, target, site);
  return reduce(mul(d, d, site), r, site);
}

Tensor l1_loss(const Tensor& input_in, const Tensor& target_in, int64_t reduction, Site site) {
  check_same_shape("l1_loss", input_in, target_in);
  const Reduction r = to_reduction("l1_loss", reduction);
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  return reduce(abs(sub(input, target, site), site), r, site);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input_in, const Tensor& target_in,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        int64_t reduction, Site site) {
  const char* op = "binary_cross_entropy_with_logits";
  check_same_shape(op, input_in, target_in);
  const Reduction r = to_reduction(op, reduction);
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  Tensor y = target.to(input.dtype());
  // loss = (1 - y) x + (1 + (p - 1) y) softplus(-x)   (p = pos_weight, 1 without), times weight;
  // softplus(-x) = max(-x, 0) + log(1 + exp(-|x|)) never exponentiates a large positive number.
  // NOTE: max(-x, 0) is written (|x| - x) / 2 so that the gradient at x = 0 exactly is right:
  // relu'(0) = 0 and |x|'(0) = 0 would give -y there instead of sigmoid(0) - y = 0.5 - y.
  Tensor neg_part = mul(sub(abs(input, site), input, site), 0.5, site);
  Tensor softplus_neg = add(neg_part, log(1 + exp(neg(abs(input, site), site), site), site), site);
  if (pos_weight.defined()) {
    const Tensor p = elementwise_weight(op, "pos_weight", pos_weight, input, site);
    softplus_neg = mul(add(mul(sub(p, 1.0, site), y, site), 1.0, site), softplus_neg, site);
  }
  Tensor loss = add(mul(rsub(y, 1.0, site), input, site), softplus_neg, site);
  if (weight.defined()) loss = mul(loss, elementwise_weight(op, "weight", weight, input, site), site);
  return reduce(loss, r, site);
}

// loss = -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100))   (PyTorch's clamp: a
// probability of exactly 0 or 1 costs 100, not inf)
Tensor binary_cross_entropy(const Tensor& self_in, const Tensor& target_in, const Tensor& weight_in,
                            int64_t reduction, Site site) {
  const char* op = "binary_cross_entropy";
  check_same_shape(op, self_in, target_in);
  const Reduction r = to_reduction(op, reduction);
  const Tensor self = autocast_float32(self_in, site), target = autocast_float32(target_in, site);
  GRADLAB_CHECK(self.is_floating_point() && target.is_floating_point(), DTypeError, op,
                "expected floating point input and target", "float32 or float64",
                to_string(self.dtype()) + " and " + to_string(target.dtype()),
                "labels need .to(kFloat32)");
  {
    NoGradGuard no_grad;
    const bool in_range = all(logical_and(ge(self, 0.0), le(self, 1.0))).item<bool>();
    GRADLAB_CHECK(in_range, ValueError, op, "all elements of input should be between 0 and 1",
                  "probabilities in [0, 1]",
                  "values from " + std::to_string(min(self).item<double>()) + " to " +
                      std::to_string(max(self).item<double>()),
                  "apply sigmoid first, or pass the logits to binary_cross_entropy_with_logits "
                  "(stabler)");
  }
  const Tensor y = cast_to(target, self.dtype(), site);
  Tensor loss = neg(add(mul(y, clamp(log(self, site), -100.0, std::nullopt, site), site),
                        mul(rsub(y, 1.0, site), clamp(log(rsub(self, 1.0, site), site), -100.0,
                                                      std::nullopt, site), site),
                        site),
                    site);
  if (weight_in.defined()) loss = mul(loss, elementwise_weight(op, "weight", weight_in, self, site), site);
  return reduce(loss, r, site);
}

// d = input - target;  loss = 0.5 d² / β where |d| < β, else |d| - 0.5 β   (β = 0: |d|)
Tensor smooth_l1_loss(const Tensor& input_in, const Tensor& target_in, int64_t reduction,
                      double beta, Site site) {
  check_same_shape("smooth_l1_loss", input_in, target_in);
  const Reduction r = to_reduction("smooth_l1_loss", reduction);
  GRADLAB_CHECK(beta >= 0, ValueError, "smooth_l1_loss", "beta must be non-negative", ">= 0",
                std::to_string(beta));
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  Tensor d = sub(input, target, site);
  Tensor a = abs(d, site);
  if (beta == 0) return reduce(a, r, site);
  return reduce(where(lt(a, beta), mul(mul(d, d, site), 0.5 / beta, site), sub(a, 0.5 * beta, site), site), r, site);
}

// 0.5 d² where |d| < delta, else delta (|d| - 0.5 delta)  (d = input - target; = delta * smooth_l1 with beta = delta)
Tensor huber_loss(const Tensor& input_in, const Tensor& target_in, int64_t reduction, double delta,
                  Site site) {
  check_same_shape("huber_loss", input_in, target_in);
  const Reduction r = to_reduction("huber_loss", reduction);
  GRADLAB_CHECK(delta > 0, ValueError, "huber_loss", "delta must be positive", "> 0", std::to_string(delta));
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  Tensor d = sub(input, target, site);
  Tensor a = abs(d, site);
  return reduce(where(lt(a, delta), mul(mul(d, d, site), 0.5, site), mul(sub(a, 0.5 * delta, site), delta, site), site),
                r, site);
}

// target (log target - input), with 0 log 0 = 0 (xlogy); log_target: exp(target) (target - input)
// NOTE: log reads where(target > 0, target, 1): log(0) = -inf would make the dropped branch's
// zero gradient NaN.
Tensor kl_div(const Tensor& input_in, const Tensor& target_in, int64_t reduction, bool log_target,
              Site site) {
  check_same_shape("kl_div", input_in, target_in);
  const Reduction r = to_reduction("kl_div", reduction);
  const Tensor input = autocast_float32(input_in, site), target = autocast_float32(target_in, site);
  if (log_target) return reduce(mul(exp(target, site), sub(target, input, site), site), r, site);
  Tensor safe = where(gt(target, 0.0), target, 1.0, site);
  return reduce(sub(mul(target, log(safe, site), site), mul(target, input, site), site), r, site);
}

// [...] int64 in [0, C) -> [..., C] int64, 1 at each index
Tensor one_hot(const Tensor& self, int64_t num_classes) {
  check_defined("one_hot", self);
  GRADLAB_CHECK(self.dtype() == kInt64, DTypeError, "one_hot", "one_hot is only applicable to index tensors",
                "int64", to_string(self.dtype()), "convert with .to(kInt64)");
  GRADLAB_CHECK(num_classes >= -1, ValueError, "one_hot", "num_classes must be -1 (infer) or non-negative",
                ">= -1", std::to_string(num_classes));
  if (self.numel() > 0) {
    GRADLAB_CHECK(amin(self).item<int64_t>() >= 0, ValueError, "one_hot", "class values must be non-negative",
                  "values >= 0", std::to_string(amin(self).item<int64_t>()));
    const int64_t top = amax(self).item<int64_t>();
    if (num_classes == -1) num_classes = top + 1;
    GRADLAB_CHECK(top < num_classes, ValueError, "one_hot", "class values must be smaller than num_classes",
                  "values < " + std::to_string(num_classes), std::to_string(top));
  }
  GRADLAB_CHECK(num_classes >= 0, ValueError, "one_hot",
                "cannot infer the number of classes of an empty tensor", "num_classes >= 0", "-1");
  Tensor classes = arange(num_classes, TensorOptions().dtype(kInt64).device(self.device()));
  return eq(unsqueeze(self, -1), classes).to(kInt64);
}

}  // namespace gradlab
