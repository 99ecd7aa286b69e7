// SGD, Adam, AdamW, RMSprop, Adagrad: each step_group is PyTorch's single-tensor update written
// with gradlab's in-place ops (run under NoGradGuard by Optimizer::step): the composite path. Each
// first tries the same formula as one fused pass (backend/math/optim.hpp): a vectorized loop over
// the intra-op threads on a contiguous float32 / float64 CPU parameter whose grad and state are
// contiguous and of its dtype (backend/cpu/optim.cpp); SGD / Adam / AdamW also a kernel on a CUDA
// parameter (backend/cuda/optim.cuh; RMSprop and Adagrad keep the composite ops there). Anything
// else (maximize, amsgrad, strided or half tensors, mixed dtypes) takes the composite path, the
// reference for the fused one: on the CPU the same bits (kern::set_cpu_fused_step(false) turns the
// fused path off; checks/optim/fused_step_test.cpp compares the two).

#include <cmath>
#include <functional>

#include "gradlab/backend/kernels.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/ops/ops.hpp"
#include "gradlab/optim/adagrad.hpp"
#include "gradlab/optim/adam.hpp"
#include "gradlab/optim/rmsprop.hpp"
#include "gradlab/optim/sgd.hpp"

namespace gradlab::optim {

namespace {

std::vector<OptimizerParamGroup> one_group(const std::vector<Tensor>& params) {
  return {OptimizerParamGroup(params)};
}

void check_range(const char* opt, const char* what, double v, double lo, double hi,
                 bool hi_open = false) {
  const bool ok = v >= lo && (hi_open ? v < hi : v <= hi);
  GRADLAB_CHECK(
      ok, ValueError, opt, std::string("invalid ") + what,
      std::to_string(lo) + " <= " + what + (hi_open ? " < " : " <= ") + std::to_string(hi),
      std::to_string(v));
}

void check_nonneg(const char* opt, const char* what, double v) {
  GRADLAB_CHECK(v >= 0, ValueError, opt, std::string("invalid ") + what,
                std::string(what) + " >= 0", std::to_string(v));
}

// The (maybe negated) gradient of p.
Tensor grad_of(const Tensor& p, bool maximize) { return maximize ? -p.grad() : p.grad(); }

// After a fused kernel wrote these tensors in place: bump their versions, as add_/mul_ would
// (once each: the composite bumps some twice; a saved-tensor check only asks "changed?").
void wrote(std::initializer_list<const Tensor*> ts, const Site& site = Site::current()) {
  for (const Tensor* t : ts) t->impl()->storage->bump_version(site);
}

// A 0-d float64 step counter, incremented; returns the new count.
double bump_step(ParamState& st) {
  Tensor& t = st["step"];
  t.add_(1.0);
  return t.item<double>();
}

// Adam / AdamW after the weight decay has been applied (to g or to p).
void adam_core(Tensor& p, const Tensor& g, ParamState& st, double lr, double beta1, double beta2,
               double eps, bool amsgrad, double step) {
  Tensor& exp_avg = st["exp_avg"];
  Tensor& exp_avg_sq = st["exp_avg_sq"];
  exp_avg.mul_(beta1).add_(g, 1.0 - beta1);
  exp_avg_sq.mul_(beta2).add_(g * g, 1.0 - beta2);
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  Tensor denom;
  if (amsgrad) {
    Tensor& vmax = st["max_exp_avg_sq"];
    vmax.copy_(maximum(vmax, exp_avg_sq));
    denom = sqrt(vmax) / bias_correction2_sqrt + eps;
  } else {
    denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + eps;
  }
  p.add_(exp_avg / denom, -step_size);
}

// Adam / AdamW as one fused pass (kern::adam_step_; not with amsgrad or maximize); false: not taken.
bool fused_adam(Tensor& p, bool maximize, bool amsgrad, ParamState& st, double lr, double beta1,
                double beta2, double eps, double wd, double step, bool decoupled) {
  if (maximize || amsgrad) return false;
  Tensor& exp_avg = st["exp_avg"];
  Tensor& exp_avg_sq = st["exp_avg_sq"];
  if (!kern::adam_step_(p, p.grad(), exp_avg, exp_avg_sq, lr, beta1, beta2, eps, wd, step, decoupled))
    return false;
  wrote({&p, &exp_avg, &exp_avg_sq});
  return true;
}

void init_adam_state(ParamState& st, const Tensor& p, bool amsgrad) {
  if (!st.empty()) return;
  st.insert("step", scalar_tensor(0.0, dtype(kFloat64)));
  st.insert("exp_avg", zeros_like(p));
  st.insert("exp_avg_sq", zeros_like(p));
  if (amsgrad) st.insert("max_exp_avg_sq", zeros_like(p));
}

void check_adam(const char* opt, double lr, std::tuple<double, double> betas, double eps,
                double wd) {
  check_nonneg(opt, "learning rate", lr);
  check_nonneg(opt, "epsilon value", eps);
  check_range(opt, "beta parameter at index 0", std::get<0>(betas), 0.0, 1.0, true);
  check_range(opt, "beta parameter at index 1", std::get<1>(betas), 0.0, 1.0, true);
  check_nonneg(opt, "weight_decay value", wd);
}

// One Adam (decoupled = false: weight decay added to g) or AdamW (true: p *= 1 - lr * wd) step
// over a group; `state_of` is the optimizer's per-parameter state.
template <class Options>
void adam_group(OptimizerParamGroup& group,
                const std::function<ParamState&(const Tensor&)>& state_of, bool decoupled) {
  const auto& o = static_cast<const Options&>(group.options());
  const auto [beta1, beta2] = o.betas();
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    Tensor g = grad_of(p, o.maximize());
    ParamState& st = state_of(p);
    init_adam_state(st, p, o.amsgrad());
    const double step = bump_step(st);
    if (fused_adam(p, o.maximize(), o.amsgrad(), st, o.lr(), beta1, beta2, o.eps(), o.weight_decay(),
                   step, decoupled))
      continue;
    if (decoupled)
      p.mul_(1.0 - o.lr() * o.weight_decay());  // decoupled weight decay
    else if (o.weight_decay() != 0)
      g = g + o.weight_decay() * p;
    adam_core(p, g, st, o.lr(), beta1, beta2, o.eps(), o.amsgrad(), step);
  }
}

}  // namespace

// ---- SGD -------------------------------------------------------------------------------------

SGD::SGD(const std::vector<Tensor>& params, const SGDOptions& defaults)
    : SGD(one_group(params), defaults) {}

SGD::SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  check_nonneg("SGD", "learning rate", d.lr());
  check_nonneg("SGD", "momentum value", d.momentum());
  check_nonneg("SGD", "weight_decay value", d.weight_decay());
  GRADLAB_CHECK(
      !d.nesterov() || (d.momentum() > 0 && d.dampening() == 0), ValueError, "SGD",
      "Nesterov momentum requires a momentum and zero dampening", "momentum > 0 and dampening = 0",
      "momentum=" + std::to_string(d.momentum()) + ", dampening=" + std::to_string(d.dampening()));
}

void SGD::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    if (!o.maximize() && kern::fused_step_supported(p, p.grad())) {
      Tensor buf;
      bool first = false;
      if (o.momentum() != 0) {
        ParamState& st = state(p);
        first = !st.contains("momentum_buffer");
        buf = first ? empty_like(p) : st.at("momentum_buffer");
      }
      if (kern::sgd_step_(p, p.grad(), buf, o.lr(), o.momentum(), o.dampening(), o.weight_decay(),
                          o.nesterov(), first)) {
        if (first) state(p).insert("momentum_buffer", buf);
        if (buf.defined()) wrote({&p, &buf});
        else wrote({&p});
        continue;
      }
    }
    Tensor d_p = grad_of(p, o.maximize());
    if (o.weight_decay() != 0) d_p = d_p + o.weight_decay() * p;
    if (o.momentum() != 0) {
      ParamState& st = state(p);
      if (!st.contains("momentum_buffer")) {
        st.insert("momentum_buffer", d_p.clone());
      } else {
        st["momentum_buffer"].mul_(o.momentum()).add_(d_p, 1.0 - o.dampening());
      }
      const Tensor& buf = st.at("momentum_buffer");
      d_p = o.nesterov() ? d_p + o.momentum() * buf : buf;
    }
    p.add_(d_p, -o.lr());
  }
}

// ---- Adam, AdamW -----------------------------------------------------------------------------

Adam::Adam(const std::vector<Tensor>& params, const AdamOptions& d) : Adam(one_group(params), d) {}
Adam::Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  check_adam("Adam", d.lr(), d.betas(), d.eps(), d.weight_decay());
}

void Adam::step_group(OptimizerParamGroup& group) {
  adam_group<AdamOptions>(group, [this](const Tensor& p) -> ParamState& { return state(p); },
                          /*decoupled=*/false);
}

AdamW::AdamW(const std::vector<Tensor>& params, const AdamWOptions& d)
    : AdamW(one_group(params), d) {}
AdamW::AdamW(std::vector<OptimizerParamGroup> groups, const AdamWOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  check_adam("AdamW", d.lr(), d.betas(), d.eps(), d.weight_decay());
}

void AdamW::step_group(OptimizerParamGroup& group) {
  adam_group<AdamWOptions>(group, [this](const Tensor& p) -> ParamState& { return state(p); },
                           /*decoupled=*/true);
}

// ---- RMSprop ---------------------------------------------------------------------------------

RMSprop::RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& d)
    : RMSprop(one_group(params), d) {}
RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  check_nonneg("RMSprop", "learning rate", d.lr());
  check_nonneg("RMSprop", "epsilon value", d.eps());
  check_nonneg("RMSprop", "momentum value", d.momentum());
  check_nonneg("RMSprop", "weight_decay value", d.weight_decay());
  check_nonneg("RMSprop", "alpha value", d.alpha());
}

void RMSprop::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const RMSpropOptions&>(group.options());
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    Tensor g = grad_of(p, o.maximize());
    ParamState& st = state(p);
    if (st.empty()) {
      st.insert("step", scalar_tensor(0.0, dtype(kFloat64)));
      st.insert("square_avg", zeros_like(p));
      if (o.momentum() > 0) st.insert("momentum_buffer", zeros_like(p));
      if (o.centered()) st.insert("grad_avg", zeros_like(p));
    }
    bump_step(st);
    // The fused pass (every option but maximize, whose negated gradient stays on the composite
    // path as for SGD / Adam); versions bumped once per written tensor.
    if (!o.maximize()) {
      Tensor& sq = st["square_avg"];
      Tensor ga = o.centered() ? st.at("grad_avg") : Tensor();
      Tensor buf = o.momentum() > 0 ? st.at("momentum_buffer") : Tensor();
      if (kern::rmsprop_step_(p, p.grad(), sq, ga, buf, o.lr(), o.alpha(), o.eps(), o.weight_decay(), o.momentum(),
                              o.centered())) {
        wrote({&p, &sq});
        if (ga.defined()) wrote({&ga});
        if (buf.defined()) wrote({&buf});
        continue;
      }
    }
    if (o.weight_decay() != 0) g = g + o.weight_decay() * p;
    Tensor& square_avg = st["square_avg"];
    square_avg.mul_(o.alpha()).add_(g * g, 1.0 - o.alpha());
    Tensor avg;
    if (o.centered()) {
      Tensor& grad_avg = st["grad_avg"];
      grad_avg.mul_(o.alpha()).add_(g, 1.0 - o.alpha());
      avg = sqrt(square_avg - grad_avg * grad_avg) + o.eps();
    } else {
      avg = sqrt(square_avg) + o.eps();
    }
    if (o.momentum() > 0) {
      Tensor& buf = st["momentum_buffer"];
      buf.mul_(o.momentum()).add_(g / avg);
      p.add_(buf, -o.lr());
    } else {
      p.add_(g / avg, -o.lr());
    }
  }
}

// ---- Adagrad ---------------------------------------------------------------------------------

Adagrad::Adagrad(const std::vector<Tensor>& params, const AdagradOptions& d)
    : Adagrad(one_group(params), d) {}
Adagrad::Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  check_nonneg("Adagrad", "learning rate", d.lr());
  check_nonneg("Adagrad", "lr_decay value", d.lr_decay());
  check_nonneg("Adagrad", "weight_decay value", d.weight_decay());
  check_nonneg("Adagrad", "initial_accumulator_value", d.initial_accumulator_value());
  check_nonneg("Adagrad", "epsilon value", d.eps());
}

void Adagrad::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const AdagradOptions&>(group.options());
  for (Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    Tensor g = grad_of(p, o.maximize());
    ParamState& st = state(p);
    if (st.empty()) {
      st.insert("step", scalar_tensor(0.0, dtype(kFloat64)));
      st.insert("sum", full_like(p, o.initial_accumulator_value()));
    }
    const double step = bump_step(st);
    // The fused pass (not with maximize: the composite path, as for SGD / Adam).
    Tensor& sum_st = st["sum"];
    if (!o.maximize() &&
        kern::adagrad_step_(p, p.grad(), sum_st, o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), step)) {
      wrote({&p, &sum_st});
      continue;
    }
    if (o.weight_decay() != 0) g = g + o.weight_decay() * p;
    const double clr = o.lr() / (1.0 + (step - 1.0) * o.lr_decay());
    Tensor& sum = st["sum"];
    sum.add_(g * g);
    p.add_(g / (sqrt(sum) + o.eps()), -clr);
  }
}

}  // namespace gradlab::optim
