#include "gradlab/optim/optimizer.hpp"

#include <cmath>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::optim {

namespace detail {

void put_hyperparameter(Hyperparameters& out, const char* name, double v) { out.emplace_back(name, v); }
void put_hyperparameter(Hyperparameters& out, const char* name, bool v) {
  out.emplace_back(name, v ? 1.0 : 0.0);
}
void put_hyperparameter(Hyperparameters& out, const char*, const std::tuple<double, double>& v) {
  out.emplace_back("beta1", std::get<0>(v));
  out.emplace_back("beta2", std::get<1>(v));
}

void put_hyperparameter(Hyperparameters& out, const char* name, int64_t v) {
  out.emplace_back(name, static_cast<double>(v));
}
void put_hyperparameter(Hyperparameters& out, const char* name, const std::optional<int64_t>& v) {
  if (v) out.emplace_back(name, static_cast<double>(*v));
}

bool set_hyperparameter(int64_t& field, const char* name, const std::string& key, double v) {
  if (key != name) return false;
  field = static_cast<int64_t>(v);
  return true;
}
bool set_hyperparameter(std::optional<int64_t>& field, const char* name, const std::string& key,
                        double v) {
  if (key != name) return false;
  field = static_cast<int64_t>(v);
  return true;
}

bool set_hyperparameter(double& field, const char* name, const std::string& key, double v) {
  if (key != name) return false;
  field = v;
  return true;
}
bool set_hyperparameter(bool& field, const char* name, const std::string& key, double v) {
  if (key != name) return false;
  field = v != 0;
  return true;
}
bool set_hyperparameter(std::tuple<double, double>& field, const char*, const std::string& key,
                        double v) {
  if (key == "beta1") std::get<0>(field) = v;
  if (key == "beta2") std::get<1>(field) = v;
  return key == "beta1" || key == "beta2";
}

void unknown_hyperparameter(const char* optimizer, const std::string& key,
                            const Hyperparameters& known) {
  std::string names;
  for (const auto& [name, v] : known) names += (names.empty() ? "" : ", ") + name;
  throw ValueError(error_message(
      std::string(optimizer) + "::load_state_dict", "unknown hyperparameter '" + key + "'",
      "one of " + names, "'" + key + "'", "was the state saved from another optimizer type?"));
}

}  // namespace detail

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  GRADLAB_CHECK(options_ != nullptr, ValueError, "OptimizerParamGroup",
                "the group has no options yet", "a group added to an optimizer",
                "a group without options");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const {
  return const_cast<OptimizerParamGroup*>(this)->options();
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  GRADLAB_CHECK(!groups.empty(), ValueError, "optimizer", "optimizer got an empty parameter list",
                "at least one parameter group", "none", "pass model->parameters()");
  for (const auto& g : groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OptimizerParamGroup g = group;
  GRADLAB_CHECK(!g.params().empty(), ValueError, "optimizer",
                "optimizer got an empty parameter list", "at least one parameter", "0 parameters",
                "did the model register its parameters? (register_parameter / register_module)");
  std::unordered_set<const void*> seen;
  for (const auto& pg : param_groups_)
    for (const Tensor& p : pg.params()) seen.insert(p.impl());
  for (size_t i = 0; i < g.params().size(); ++i) {
    const Tensor& p = g.params()[i];
    GRADLAB_CHECK(p.defined(), ValueError, "optimizer",
                  "parameter " + std::to_string(i) + " is undefined", "defined tensors",
                  "Tensor()");
    GRADLAB_CHECK(p.is_leaf(), ValueError, "optimizer", "can't optimize a non-leaf Tensor",
                  "leaf tensors",
                  "a tensor made by " + (p.grad_fn() ? p.grad_fn()->name() : std::string("an op")),
                  "optimize the leaf the tensor was computed from (e.g. the parameter itself)");
    GRADLAB_CHECK(p.is_floating_point(), DTypeError, "optimizer",
                  "can only optimize floating point tensors", "float32 or float64",
                  to_string(p.dtype()));
    GRADLAB_CHECK(seen.insert(p.impl()).second, ValueError, "optimizer",
                  "some parameters appear in more than one parameter group (or twice in one)",
                  "each parameter once", "a repeated parameter " + p.describe());
  }
  if (!g.has_options()) g.set_options(defaults_->clone());
  param_groups_.push_back(std::move(g));
}

std::optional<Shape> Optimizer::state_shape(const std::string& name, const Tensor& param) const {
  if (name == "step") return std::nullopt;
  return param.sizes();
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard grad_on;
    loss = closure();
  }
  NoGradGuard no_grad;
  for (auto& g : param_groups_) step_group(g);
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : param_groups_)
    for (Tensor& p : g.params()) p.zero_grad(set_to_none);
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> r;
  for (const auto& g : param_groups_) r.insert(r.end(), g.params().begin(), g.params().end());
  return r;
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

bool Optimizer::has_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it != state_.end() && !it->second.empty();
}

StateDict Optimizer::state_dict() const {
  StateDict sd;
  const std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = state_.find(params[i].impl());
    if (it == state_.end()) continue;
    for (const auto& [name, t] : it->second)
      sd.insert("state." + std::to_string(i) + "." + name, t);
  }
  int64_t at = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [name, v] : param_groups_[g].options().hyperparameters())
      sd.insert(prefix + name, scalar_tensor(v, dtype(kFloat64)));
    std::vector<int64_t> idx;
    for (size_t k = 0; k < param_groups_[g].params().size(); ++k) idx.push_back(at++);
    sd.insert(prefix + "params", from_vector(idx, {static_cast<int64_t>(idx.size())}));
  }
  sd.metadata["optimizer"] = name();
  return sd;
}

void Optimizer::load_state_dict(const StateDict& sd) {
  const std::string op = name() + "::load_state_dict";
  size_t groups = 0;
  while (sd.contains("param_groups." + std::to_string(groups) + ".params")) ++groups;
  GRADLAB_CHECK(groups == param_groups_.size(), ValueError, op,
                "loaded state dict has a different number of parameter groups",
                std::to_string(param_groups_.size()) + " groups",
                std::to_string(groups) + " groups",
                "build the optimizer with the same parameter groups as the one that was saved");
  for (size_t g = 0; g < groups; ++g) {
    const Tensor& ids = sd.at("param_groups." + std::to_string(g) + ".params");
    GRADLAB_CHECK(ids.numel() == static_cast<int64_t>(param_groups_[g].params().size()), ValueError,
                  op,
                  "loaded state dict contains a parameter group that doesn't match the size of the "
                  "optimizer's group " +
                      std::to_string(g),
                  std::to_string(param_groups_[g].params().size()) + " parameters",
                  std::to_string(ids.numel()) + " parameters");
  }
  const std::vector<Tensor> params = parameters();
  // Parse everything before changing anything, so a bad dict leaves the optimizer as it was.
  std::unordered_map<const void*, ParamState> new_state;
  std::vector<std::pair<size_t, std::pair<std::string, double>>> hypers;
  for (const auto& [key, value] : sd) {
    if (key.rfind("state.", 0) == 0) {
      const auto dot = key.find('.', 6);
      GRADLAB_CHECK(dot != std::string::npos, ValueError, op, "malformed key '" + key + "'",
                    "state.<param index>.<name>", key);
      const std::string idx_text = key.substr(6, dot - 6);
      size_t i = 0;
      try {
        i = std::stoul(idx_text);
      } catch (const std::exception&) {
        throw ValueError(
            error_message(op, "malformed key '" + key + "'", "state.<param index>.<name>", key));
      }
      GRADLAB_CHECK(i < params.size(), ValueError, op,
                    "state for parameter " + std::to_string(i) + " but only " +
                        std::to_string(params.size()) + " parameters",
                    "an index < " + std::to_string(params.size()), key);
      const std::string name = key.substr(dot + 1);
      const Tensor& p = params[i];
      Tensor v = value.detach().clone();
      const std::optional<Shape> want = state_shape(name, p);
      if (want) {
        GRADLAB_CHECK(v.sizes() == *want, ShapeError, op,
                      "state '" + key + "' does not fit its parameter",
                      "shape " + shape_str(*want), "shape " + shape_str(v.sizes()));
      }
      if (name != "step") {
        // State shaped like its parameter takes its dtype (a float64 file into a float32 model).
        if (want && *want == p.sizes() && v.is_floating_point() && v.dtype() != p.dtype())
          v = v.to(p.dtype());
        // As PyTorch: state lives with its parameter (a CPU file loads into a CUDA model);
        // the step counter stays a CPU number.
        if (v.device() != p.device()) v = v.to(p.device());
      }
      new_state[p.impl()].insert(name, v);
    } else if (key.rfind("param_groups.", 0) == 0) {
      const auto dot = key.find('.', 13);
      GRADLAB_CHECK(dot != std::string::npos, ValueError, op, "malformed key '" + key + "'",
                    "param_groups.<group>.<name>", key);
      const size_t g = std::stoul(key.substr(13, dot - 13));
      const std::string name = key.substr(dot + 1);
      if (name == "params" || g >= groups) continue;
      GRADLAB_CHECK(value.numel() == 1, ShapeError, op,
                    "hyperparameter '" + key + "' must be one number", "a 0-d tensor",
                    shape_str(value.sizes()));
      hypers.push_back({g, {name, value.item<double>()}});
    }
  }
  std::vector<std::unique_ptr<OptimizerOptions>> opts;
  for (auto& g : param_groups_) opts.push_back(g.options().clone());
  for (auto& [g, h] : hypers)
    opts[g]->set_hyperparameter(h.first, h.second);  // throws on unknown names
  for (size_t g = 0; g < groups; ++g) param_groups_[g].set_options(std::move(opts[g]));
  state_ = std::move(new_state);
}

}  // namespace gradlab::optim
