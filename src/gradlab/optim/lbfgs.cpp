// optim::LBFGS: PyTorch's lbfgs.py (step, _strong_wolfe, _cubic_interpolate) over the flat
// parameter vector. Scalars (losses, dot products, step sizes) are doubles; vectors are tensors
// of the parameters' dtype and device.

#include "gradlab/optim/lbfgs.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::optim {

namespace {

// Every parameter's gradient, flattened and concatenated (zeros where one has none); a copy.
Tensor flat_grad(const std::vector<Tensor>& ps) {
  TensorList parts;
  for (const Tensor& p : ps)
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.options()));
  return parts.size() == 1 ? parts[0].clone() : cat(parts, 0);
}

// x += t d, x the parameters as one flat vector.
void add_flat(const std::vector<Tensor>& ps, double t, const Tensor& d) {
  int64_t off = 0;
  for (const Tensor& p : ps) {
    const int64_t n = p.numel();
    p.add_(d.narrow(0, off, n).reshape(p.sizes()).to(p.dtype()), t);
    off += n;
  }
}

double dot(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }
double abs_max(const Tensor& a) { return a.abs().max().item<double>(); }

// The minimiser of the cubic through (x1, f1, f1') and (x2, f2, f2'), clamped to [lo, hi]
// (default: between x1 and x2); the midpoint when the cubic has no real minimiser.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const std::pair<double, double> b = bounds ? *bounds : std::pair{std::min(x1, x2), std::max(x1, x2)};
  const double lo = b.first, hi = b.second;
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                            : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(m, lo), hi);
}

struct Eval {
  double f;
  Tensor g;
};
struct LineSearch {
  double f;
  Tensor g;
  double t;
  int64_t evals;
};

// A step t along d meeting the strong Wolfe conditions
//   f(x + t d) <= f + c1 t gᵀd   and   |g(x + t d)ᵀd| <= -c2 gᵀd,
// by bracketing then zooming with cubic interpolation (at most max_ls evaluations of obj).
LineSearch strong_wolfe(const std::function<Eval(double)>& obj, double t, const Tensor& d,
                        double f, const Tensor& g, double gtd, double c1 = 1e-4, double c2 = 0.9,
                        double tolerance_change = 1e-9, int64_t max_ls = 25) {
  const double d_norm = abs_max(d);
  Eval e = obj(t);
  int64_t evals = 1, ls_iter = 0;
  double gtd_new = dot(e.g, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  // The bracket [t_lo, t_hi] (one point when done) with f, g and gᵀd at each end.
  std::vector<double> bt, bf, bgtd;
  std::vector<Tensor> bg;
  while (ls_iter < max_ls) {
    const bool no_decrease = e.f > f + c1 * t * gtd || (ls_iter > 1 && e.f >= f_prev);
    if (!no_decrease && std::abs(gtd_new) <= -c2 * gtd) {
      bt = {t}, bf = {e.f}, bg = {e.g}, bgtd = {gtd_new};
      done = true;
      break;
    }
    if (no_decrease || gtd_new >= 0) {  // a minimum lies in [t_prev, t]
      bt = {t_prev, t}, bf = {f_prev, e.f}, bg = {g_prev, e.g}, bgtd = {gtd_prev, gtd_new};
      break;
    }
    // Extrapolate: a cubic step in [t + 0.01 (t - t_prev), 10 t].
    const double t_next =
        cubic_interpolate(t_prev, f_prev, gtd_prev, t, e.f, gtd_new, {{t + 0.01 * (t - t_prev), t * 10}});
    t_prev = t, f_prev = e.f, g_prev = e.g, gtd_prev = gtd_new;
    t = t_next;
    e = obj(t);
    ++evals, ++ls_iter;
    gtd_new = dot(e.g, d);
  }
  if (ls_iter == max_ls) bt = {0, t}, bf = {f, e.f}, bg = {g, e.g}, bgtd = {gtd, gtd_new};

  // Zoom into the bracket.
  bool insuf_progress = false;
  size_t lo = bf.front() <= bf.back() ? 0 : 1, hi = 1 - lo;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bt[1] - bt[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bt[0], bf[0], bgtd[0], bt[1], bf[1], bgtd[1]);
    // Too close to an end: move 10% of the bracket inwards (unless the last step progressed).
    const double bmax = std::max(bt[0], bt[1]), bmin = std::min(bt[0], bt[1]);
    const double eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    e = obj(t);
    ++evals, ++ls_iter;
    gtd_new = dot(e.g, d);
    if (e.f > f + c1 * t * gtd || e.f >= bf[lo]) {
      bt[hi] = t, bf[hi] = e.f, bg[hi] = e.g, bgtd[hi] = gtd_new;
      lo = bf[0] <= bf[1] ? 0 : 1, hi = 1 - lo;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bt[hi] - bt[lo]) >= 0) {
        bt[hi] = bt[lo], bf[hi] = bf[lo], bg[hi] = bg[lo], bgtd[hi] = bgtd[lo];
      }
      bt[lo] = t, bf[lo] = e.f, bg[lo] = e.g, bgtd[lo] = gtd_new;
    }
  }
  if (bt.size() == 1) lo = 0;
  return {bf[lo], bg[lo], bt[lo], evals};
}

}  // namespace

LBFGS::LBFGS(const std::vector<Tensor>& params, const LBFGSOptions& d)
    : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, d) {}

LBFGS::LBFGS(std::vector<OptimizerParamGroup> groups, const LBFGSOptions& d)
    : Optimizer(std::move(groups), d.clone()) {
  GRADLAB_CHECK(param_groups_.size() == 1, ValueError, "LBFGS",
                "LBFGS doesn't support per-parameter options (parameter groups)", "1 group",
                std::to_string(param_groups_.size()) + " groups");
  GRADLAB_CHECK(!param_groups_[0].params().empty(), ValueError, "LBFGS",
                "optimizer got an empty parameter list", "at least one parameter", "none");
  GRADLAB_CHECK(d.lr() >= 0, ValueError, "LBFGS", "invalid learning rate", "lr >= 0",
                std::to_string(d.lr()));
  GRADLAB_CHECK(d.max_iter() > 0 && d.history_size() > 0, ValueError, "LBFGS",
                "max_iter and history_size must be positive", "> 0",
                std::to_string(d.max_iter()) + " and " + std::to_string(d.history_size()));
  GRADLAB_CHECK(!d.line_search_fn() || *d.line_search_fn() == "strong_wolfe", ValueError, "LBFGS",
                "only 'strong_wolfe' is supported as line_search_fn", "nullopt or \"strong_wolfe\"",
                "\"" + d.line_search_fn().value_or("") + "\"");
}

void LBFGS::step_group(OptimizerParamGroup&) {
  throw Error(error_message("LBFGS", "step_group is not how LBFGS steps", "step(closure)",
                            "step_group", "call step with a closure"));
}

std::optional<Shape> LBFGS::state_shape(const std::string& name, const Tensor&) const {
  if (name == "d" || name == "prev_flat_grad") {
    int64_t n = 0;
    for (const Tensor& p : param_groups_[0].params()) n += p.numel();
    return Shape{n};
  }
  if (name == "old_dirs" || name == "old_stps" || name == "ro") return std::nullopt;
  return Shape{};
}

Tensor LBFGS::step(const LossClosure& closure) {
  GRADLAB_CHECK(closure != nullptr, ValueError, "LBFGS",
                "step() needs a closure that reevaluates the model and returns the loss",
                "step(closure)", "no closure",
                "opt.step([&] { opt.zero_grad(); Tensor l = loss_fn(); l.backward(); return l; })");
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  const std::vector<Tensor>& ps = param_groups_[0].params();
  const int64_t max_iter = o.max_iter(), max_eval = o.max_eval().value_or(max_iter * 5 / 4);
  NoGradGuard no_grad;
  auto evaluate = [&] {
    EnableGradGuard grad_on;
    Tensor l = closure();
    GRADLAB_CHECK(l.defined() && l.numel() == 1, ValueError, "LBFGS",
                  "the closure must return the loss as one number", "a 1-element tensor",
                  l.defined() ? shape_str(l.sizes()) : "an undefined tensor");
    return l;
  };

  // The state, kept on the first parameter so that state_dict() saves it.
  ParamState& st = state(ps[0]);
  auto number = [&](const char* k, double init) {
    return st.contains(k) ? st.at(k).item<double>() : init;
  };
  auto put = [&](const char* k, double v) { st.insert(k, scalar_tensor(v, dtype(kFloat64))); };
  double func_evals = number("func_evals", 0), n_iter_total = number("n_iter", 0);
  double t = number("t", o.lr()), H_diag = number("H_diag", 1), prev_loss = number("prev_loss", 0);
  Tensor d = st.contains("d") ? st.at("d") : Tensor();
  Tensor prev_g = st.contains("prev_flat_grad") ? st.at("prev_flat_grad") : Tensor();
  std::vector<Tensor> old_dirs, old_stps;
  std::vector<double> ro;
  if (st.contains("ro")) {
    ro = st.at("ro").to_vector<double>();
    for (int64_t i = 0; i < static_cast<int64_t>(ro.size()); ++i)
      old_dirs.push_back(st.at("old_dirs").select(0, i)), old_stps.push_back(st.at("old_stps").select(0, i));
  }

  Tensor orig_loss = evaluate();
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  func_evals += 1;
  Tensor g = flat_grad(ps);
  bool opt_cond = abs_max(g) <= o.tolerance_grad();
  int64_t n_iter = 0;
  while (!opt_cond && n_iter < max_iter) {
    ++n_iter, ++n_iter_total;
    if (n_iter_total == 1) {  // the first direction: steepest descent
      d = -g;
      old_dirs.clear(), old_stps.clear(), ro.clear();
      H_diag = 1;
    } else {
      // Update the history with s = t d, y = g - g_prev (when the curvature yᵀs is positive).
      Tensor y = g - prev_g, s = d * t;
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(old_dirs.size()) == o.history_size())
          old_dirs.erase(old_dirs.begin()), old_stps.erase(old_stps.begin()), ro.erase(ro.begin());
        old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(1.0 / ys);
        H_diag = ys / dot(y, y);
      }
      // Two-loop recursion: d = -H g.
      const size_t k = old_dirs.size();
      std::vector<double> al(k);
      Tensor q = -g;
      for (size_t i = k; i-- > 0;) {
        al[i] = dot(old_stps[i], q) * ro[i];
        q = q - old_dirs[i] * al[i];
      }
      d = q * H_diag;
      for (size_t i = 0; i < k; ++i) d = d + old_stps[i] * (al[i] - dot(old_dirs[i], d) * ro[i]);
    }
    prev_g = g;
    prev_loss = loss;
    t = n_iter_total == 1 ? std::min(1.0, 1.0 / g.abs().sum().item<double>()) * o.lr() : o.lr();
    const double gtd = dot(g, d);
    if (gtd > -o.tolerance_change()) break;  // not a descent direction

    int64_t ls_evals = 0;
    if (o.line_search_fn()) {
      std::vector<Tensor> x0;
      for (const Tensor& p : ps) x0.push_back(p.clone());
      auto at = [&](double step) {  // f and g at x0 + step d; the parameters are restored
        add_flat(ps, step, d);
        const double f = evaluate().item<double>();
        Eval e{f, flat_grad(ps)};
        for (size_t i = 0; i < ps.size(); ++i) ps[i].copy_(x0[i]);
        return e;
      };
      const LineSearch ls = strong_wolfe(at, t, d, loss, g, gtd);
      loss = ls.f, g = ls.g, t = ls.t, ls_evals = ls.evals;
      add_flat(ps, t, d);
      opt_cond = abs_max(g) <= o.tolerance_grad();
    } else {
      add_flat(ps, t, d);
      if (n_iter != max_iter) {  // the last iteration's loss is the next step's first
        loss = evaluate().item<double>();
        g = flat_grad(ps);
        opt_cond = abs_max(g) <= o.tolerance_grad();
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    func_evals += static_cast<double>(ls_evals);
    if (n_iter == max_iter || current_evals >= max_eval || opt_cond) break;
    if (abs_max(d * t) <= o.tolerance_change()) break;           // the step is tiny
    if (std::abs(loss - prev_loss) < o.tolerance_change()) break;  // the loss stopped moving
  }

  put("func_evals", func_evals), put("n_iter", n_iter_total), put("t", t), put("H_diag", H_diag);
  put("prev_loss", prev_loss);
  if (d.defined()) st.insert("d", d);
  if (prev_g.defined()) st.insert("prev_flat_grad", prev_g);
  if (d.defined()) {
    const int64_t n = d.numel();
    st.insert("old_dirs", old_dirs.empty() ? zeros({0, n}, d.options()) : stack(old_dirs));
    st.insert("old_stps", old_stps.empty() ? zeros({0, n}, d.options()) : stack(old_stps));
    st.insert("ro", from_vector(ro, {static_cast<int64_t>(ro.size())}, dtype(kFloat64)));
  }
  return orig_loss;
}

}  // namespace gradlab::optim
