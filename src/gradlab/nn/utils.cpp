// nn::utils (gradient clipping, parameters_to_vector / vector_to_parameters) and nn diagnostics
// (parameters_not_updated, find_unregistered_tensors).

#include "gradlab/nn/utils.hpp"

#include <cmath>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/nn/diagnostics.hpp"
#include "gradlab/ops/internal/shape.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::nn {

namespace utils {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> g;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) g.push_back(p.grad());
  return g;
}

// ‖g‖_p accumulated in float64; for p = inf the largest |g|.
double total_norm(const std::vector<Tensor>& grads, double p) {
  GRADLAB_CHECK(p > 0, ValueError, "clip_grad_norm_", "norm_type must be positive (or INFINITY)",
                "norm_type > 0", std::to_string(p));
  double acc = 0.0;
  for (const Tensor& g : grads) {
    NoGradGuard no_grad;
    const Tensor a = abs(g.detach().to(kFloat64));
    if (std::isinf(p))
      acc = std::max(acc, a.numel() ? amax(a).item<double>() : 0.0);
    else if (p == 1.0)
      acc += sum(a).item<double>();
    else if (p == 2.0)
      acc += sum(a * a).item<double>();
    else
      acc += sum(pow(a, p)).item<double>();
    if (std::isnan(acc)) return acc;
  }
  if (std::isinf(p) || p == 1.0) return acc;
  return p == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& parameters, double norm_type) {
  return total_norm(grads_of(parameters), norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return 0.0;
  const double norm = total_norm(grads, norm_type);
  if (error_if_nonfinite && !std::isfinite(norm)) {
    throw ValueError(
        error_message("clip_grad_norm_",
                      "the total norm of order " + std::to_string(norm_type) +
                          " for gradients from `parameters` is non-finite, so it cannot be clipped",
                      "a finite norm", std::to_string(norm),
                      "find where the NaN/Inf is born (DetectAnomalyGuard); set "
                      "error_if_nonfinite=false to scale by it anyway"));
  }
  // As PyTorch: every gradient is scaled by min(1, max_norm / (norm + 1e-6)).
  const double coef = std::min(1.0, max_norm / (norm + 1e-6));
  NoGradGuard no_grad;
  for (Tensor& g : grads) g.mul_(coef);
  return norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  GRADLAB_CHECK(clip_value >= 0, ValueError, "clip_grad_value_", "clip_value must be non-negative",
                "clip_value >= 0", std::to_string(clip_value));
  NoGradGuard no_grad;
  for (Tensor& g : grads_of(parameters)) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

namespace {

// As torch's _check_param_device: every parameter defined and on the first one's device.
void check_param_devices(const char* op, const std::vector<Tensor>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string which = "parameter " + std::to_string(i);
    GRADLAB_CHECK(params[i].defined(), ValueError, op, which + " is undefined", "defined tensors",
                  "an undefined Tensor");
    GRADLAB_CHECK(params[i].device() == params[0].device(), DeviceError, op,
                  "found two parameters on different devices, this is currently not supported",
                  params[0].device().str() + " (parameter 0)",
                  params[i].device().str() + " (" + which + ")",
                  "move the whole model to one device first (model->to(device))");
  }
}

}  // namespace

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  GRADLAB_CHECK(!parameters.empty(), ValueError, "parameters_to_vector",
                "expected a non-empty list of parameters", "at least one tensor", "0");
  check_param_devices("parameters_to_vector", parameters);
  // vec = cat([p.view(-1) for p in parameters]): views, so the gradient reaches every parameter.
  std::vector<Tensor> flat;
  flat.reserve(parameters.size());
  for (const Tensor& p : parameters) flat.push_back(p.reshape({-1}));
  return cat(flat, 0);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  const char* op = "vector_to_parameters";
  GRADLAB_CHECK(vec.defined(), ValueError, op, "expected a Tensor, but got: an undefined Tensor",
                "a defined 1-D tensor", "Tensor()");
  GRADLAB_CHECK(vec.dim() == 1, ShapeError, op, "vec must be a 1-D tensor (one flat vector)",
                "1 dim", std::to_string(vec.dim()) + " dims, shape " + shape_str(vec.sizes()),
                "flatten it (vec.flatten()) or make it with parameters_to_vector");
  check_param_devices(op, parameters);
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  // NOTE: PyTorch does not check this: a short vec fails later on a view_as, a long one is
  // silently accepted. Checked before any copy, so a wrong vec leaves every parameter untouched.
  GRADLAB_CHECK(
      vec.numel() == total, ShapeError, op,
      "vec's length must equal the total number of elements of the parameters",
      std::to_string(total) + " elements (" + std::to_string(parameters.size()) + " parameters)",
      std::to_string(vec.numel()) + " elements",
      "make vec with parameters_to_vector of a model with the same parameter shapes, in "
      "the same order");
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    const int64_t n = p.numel();
    Tensor dst = p;  // a handle to the same parameter: copy_ writes its storage in place
    dst.copy_(vec.narrow(0, offset, n).reshape(p.sizes()));
    offset += n;
  }
}

}  // namespace utils

// ---- diagnostics -----------------------------------------------------------------------------

ParameterSnapshot snapshot_parameters(const Module& model) {
  ParameterSnapshot s;
  NoGradGuard no_grad;
  for (const auto& [name, p] : model.named_parameters())
    s.entries.push_back({name, p.detach().clone(), p.requires_grad()});
  return s;
}

std::vector<std::string> parameters_not_updated(const ParameterSnapshot& before,
                                                const ParameterSnapshot& after) {
  std::vector<std::string> r;
  for (const auto& b : before.entries) {
    if (!b.trainable) continue;
    const ParameterSnapshot::Entry* a = nullptr;
    for (const auto& e : after.entries)
      if (e.name == b.name) a = &e;
    if (!a || equal(a->value, b.value)) r.push_back(b.name);
  }
  return r;
}

std::vector<std::string> parameters_not_updated(const ParameterSnapshot& before,
                                                const Module& after) {
  return parameters_not_updated(before, snapshot_parameters(after));
}

std::string UnregisteredTensor::describe() const {
  std::string s = tensor.describe() + " tensor (requires_grad) used by " + used_by +
                  " (forward called at " + used_at.str() + ")";
  // Used inside a gradlab layer: the layer's own weight, so the layer itself is not registered.
  if (used_at.str().rfind("src/gradlab/nn/", 0) == 0)
    s += "; it belongs to a layer that is not a registered submodule (keep what register_module "
         "returns)";
  return s;
}

namespace {
// Whether n is a node of one of the op structs Ops (by type: a display name is never a key).
template <class... Ops>
bool is_any(const autograd::Node* n) {
  return ((dynamic_cast<const Ops*>(n) != nullptr) || ...);
}
}  // namespace

std::vector<UnregisteredTensor> find_unregistered_tensors(const Tensor& loss, const Module& model) {
  GRADLAB_CHECK(loss.defined(), ValueError, "find_unregistered_tensors", "the loss is undefined",
                "a defined tensor", "Tensor()");
  std::unordered_set<const TensorImpl*> registered;
  for (const auto& [name, p] : model.named_parameters(true, false)) registered.insert(p.impl());
  std::vector<UnregisteredTensor> found;
  std::unordered_set<const TensorImpl*> reported;
  if (!loss.grad_fn()) {
    if (loss.requires_grad() && !registered.count(loss.impl()))
      found.push_back({loss, "the loss itself", Site::unknown()});
    return found;
  }
  // Views, broadcasts and casts (often made implicitly, e.g. w.t() inside linear) are not the op
  // that uses the tensor: a leaf they pass along is reported as used by the op above them.
  auto plumbing = [](const autograd::Node* n) {
    using namespace ops_detail;
    return is_any<Expand, ToCopy, ToDevice, Permute, Reshape<ViewTag>, Reshape<ReshapeTag>, Reshape<SqueezeTag>,
                  Reshape<UnsqueezeTag>>(n);
  };
  struct Visit {
    std::shared_ptr<autograd::Node> node;
    const autograd::Node* shown;  // the node reported as the consumer
  };
  std::vector<Visit> stack{{loss.grad_fn(), loss.grad_fn().get()}};
  std::unordered_set<const autograd::Node*> seen;
  while (!stack.empty()) {
    Visit v = stack.back();
    stack.pop_back();
    if (!seen.insert(v.node.get()).second) continue;
    for (const autograd::Edge& e : v.node->next_edges()) {
      if (!e.valid()) continue;
      if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(e.fn.get())) {
        const TensorImpl* leaf = acc->leaf().get();
        if (registered.count(leaf) || !reported.insert(leaf).second) continue;
        found.push_back({Tensor(acc->leaf()), v.shown->name(), v.shown->site});
      } else {
        stack.push_back({e.fn, plumbing(e.fn.get()) ? v.shown : e.fn.get()});
      }
    }
  }
  return found;
}

}  // namespace gradlab::nn
