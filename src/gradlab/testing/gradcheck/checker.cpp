// gradcheck's Checker: setup, evaluation of fn, the analytic vjp, bookkeeping and the verdict.

#include "gradlab/testing/gradcheck/checker.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::testing::gradcheck_detail {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

namespace {

// A failure worse than the tolerance by this factor ranks first (NaN counts as infinitely bad).
double badness(const GradcheckFailure& f) {
  if (!std::isfinite(f.abs_err)) return std::numeric_limits<double>::infinity();
  return f.abs_err / std::max(f.tolerance, 1e-300);
}

}  // namespace

Checker::Checker(const TensorFn& fn, const TensorList& inputs, const GradcheckOptions& o)
    : fn_(fn), user_(inputs), o_(o), gen_(o.seed_) {
  report_.options = o;
  report_.name = o.name_.empty() ? std::string("fn") : o.name_;
  report_.num_inputs = static_cast<int64_t>(inputs.size());
}

GradcheckReport Checker::run() {
  prepare();
  snapshot_inputs();
  try {
    analytic_forward();
    if (use_fast_mode())
      fast_mode();
    else
      full_jacobian();
    if (o_.check_kinks_) classify_kinks();
    if (o_.check_taylor_) taylor();
    if (o_.check_linearity_) linearity();
    if (o_.check_nondeterminism_) nondeterminism();
    if (o_.check_undefined_grad_) undefined_grad();
    if (o_.check_grad_dtypes_) grad_dtypes();
  } catch (const std::exception& e) {
    add_check("exception", false, std::string("the function or its backward threw: ") + e.what());
  }
  if (o_.check_inputs_unchanged_) inputs_unchanged();
  finish();
  return std::move(report_);
}

void Checker::prepare() {
  work_ = user_;
  for (size_t i = 0; i < user_.size(); ++i) {
    const Tensor& t = user_[i];
    report_.input_shapes.push_back(t.defined() ? t.sizes() : Shape{});
    report_.input_dtypes.push_back(t.defined() ? t.dtype() : kFloat64);
    if (!t.defined() || !t.is_floating_point() || !t.requires_grad()) continue;
    if (t.dtype() != kFloat64) {
      std::string w = "input " + std::to_string(i) + " is " + to_string(t.dtype()) + ": ";
      if (o_.upcast_float32_) {
        work_[i] = t.detach().to(kFloat64).requires_grad_(true);
        w += "checked in float64 instead (central differences in " + to_string(t.dtype()) +
             " with eps=" + fmt("%g", o_.eps_) +
             " carry errors near 1e-2, far above atol=" + fmt("%g", o_.atol_) + ")";
      } else {
        w += "central differences in " + to_string(t.dtype()) + " with eps=" + fmt("%g", o_.eps_) +
             " carry errors near 1e-2, far above atol=" + fmt("%g", o_.atol_) +
             "; failures below may be rounding, not a wrong gradient";
      }
      report_.warnings.push_back(w + "; hint: create test inputs with dtype(kFloat64)");
    }
    diff_.push_back(static_cast<int64_t>(i));
  }
  GRADLAB_CHECK(!diff_.empty(), ValueError, "gradcheck", "no input requires grad",
                "at least one floating point input with requires_grad=true",
                std::to_string(user_.size()) + " inputs, none requiring grad",
                "create the inputs with dtype(kFloat64).requires_grad(true)");
  report_.checked_inputs = diff_;
  for (int64_t i : diff_) {
    Tensor c = work_[i].detach().contiguous().clone();
    pert_.push_back(c);
    base_.push_back(c.to_vector<double>());
    n_total_ += c.numel();
  }
}

void Checker::snapshot_inputs() {
  for (const Tensor& t : user_) {
    versions_.push_back(t.defined() ? t.version() : 0);
    values_.push_back(t.defined() ? t.to_vector<double>() : Vec{});
  }
}

Vec Checker::eval() {
  TensorList args = work_;
  for (size_t k = 0; k < diff_.size(); ++k) args[diff_[k]] = pert_[k];
  std::vector<uint32_t> before;
  for (const Tensor& p : pert_) before.push_back(p.version());
  TensorList outs;
  {
    NoGradGuard ng;
    outs = fn_(args);
  }
  Vec y;
  y.reserve(static_cast<size_t>(m_total_));
  size_t f = 0;
  for (const Tensor& t : outs) {
    if (!t.defined() || !t.is_floating_point()) continue;
    GRADLAB_CHECK(f < out_shapes_.size() && t.sizes() == out_shapes_[f], ShapeError, "gradcheck",
                  "fn returned outputs of other shapes for perturbed inputs",
                  f < out_shapes_.size() ? shape_str(out_shapes_[f]) : std::string("fewer outputs"),
                  shape_str(t.sizes()), "fn must be a deterministic function of its inputs");
    Vec v = t.to_vector<double>();
    y.insert(y.end(), v.begin(), v.end());
    ++f;
  }
  for (size_t k = 0; k < pert_.size(); ++k) {
    if (pert_[k].version() != before[k]) {
      modified_in_eval_ = true;
      std::copy(base_[k].begin(), base_[k].end(), pert_[k].data_ptr<double>());
    }
  }
  return y;
}

Vec Checker::eval_at(size_t k, int64_t j, double delta) {
  double* p = pert_[k].data_ptr<double>();
  const double keep = base_[k][j];
  p[j] = keep + delta;
  Vec y = eval();
  p[j] = keep;
  return y;
}

Vec Checker::eval_along(const std::vector<Vec>& dir, double h) {
  for (size_t k = 0; k < pert_.size(); ++k) {
    double* p = pert_[k].data_ptr<double>();
    for (size_t j = 0; j < base_[k].size(); ++j) p[j] = base_[k][j] + h * dir[k][j];
  }
  Vec y = eval();
  for (size_t k = 0; k < pert_.size(); ++k)
    std::copy(base_[k].begin(), base_[k].end(), pert_[k].data_ptr<double>());
  return y;
}

void Checker::analytic_forward() {
  EnableGradGuard eg;
  outs_ = fn_(work_);
  for (size_t i = 0; i < outs_.size(); ++i) {
    const Tensor& t = outs_[i];
    if (!t.defined() || !t.is_floating_point()) continue;
    float_outs_.push_back(static_cast<int64_t>(i));
    out_shapes_.push_back(t.sizes());
    out_diff_.push_back(t.requires_grad());
    m_total_ += t.numel();
    if (t.dtype() != kFloat64) {
      float32_out_ = true;
      report_.warnings.push_back(
          "output " + std::to_string(i) + " is " + to_string(t.dtype()) +
          ": numeric differences carry its rounding (about 1e-7 / eps); hint: compute in float64 "
          "or loosen eps/atol for this check");
    }
  }
  GRADLAB_CHECK(!float_outs_.empty(), ValueError, "gradcheck",
                "fn returned no floating point output", "at least one float32/float64 output",
                std::to_string(outs_.size()) + " non-float outputs");
  u_ = random_like_outputs();
  y0_ = flatten_outputs(outs_);
  vjp_ = analytic_vjp(outs_, u_);
}

Vec Checker::flatten_outputs(const TensorList& outs) const {
  Vec y;
  for (int64_t i : float_outs_) {
    Vec v = outs[i].to_vector<double>();
    y.insert(y.end(), v.begin(), v.end());
  }
  return y;
}

Vec Checker::random_like_outputs() {
  Vec u(static_cast<size_t>(m_total_));
  for (double& v : u) v = gen_.normal();
  return u;
}

std::vector<Vec> Checker::random_direction() {
  std::vector<Vec> dir(diff_.size());
  double vn = 0;
  for (size_t k = 0; k < diff_.size(); ++k) {
    dir[k].resize(base_[k].size());
    for (double& v : dir[k]) {
      v = gen_.normal();
      vn += v * v;
    }
  }
  vn = std::sqrt(vn);
  for (auto& d : dir)
    for (double& v : d) v /= (vn > 0 ? vn : 1.0);
  return dir;
}

Vec Checker::analytic_vjp(const TensorList& outs, const Vec& u, bool keep_graph) {
  TensorList roots, gos, xs;
  size_t at = 0;
  for (size_t f = 0; f < float_outs_.size(); ++f) {
    const Tensor& t = outs[float_outs_[f]];
    const int64_t n = numel_of(out_shapes_[f]);
    if (t.requires_grad()) {
      Vec part(u.begin() + static_cast<int64_t>(at), u.begin() + static_cast<int64_t>(at) + n);
      roots.push_back(t);
      gos.push_back(from_vector(part, out_shapes_[f], TensorOptions().dtype(t.dtype())));
    }
    at += static_cast<size_t>(n);
  }
  for (int64_t i : diff_) xs.push_back(work_[i]);
  Vec g;
  g.reserve(static_cast<size_t>(n_total_));
  if (roots.empty()) {
    g.assign(static_cast<size_t>(n_total_), 0.0);
    return g;
  }
  TensorList r = autograd::grad(roots, xs, gos, keep_graph, false, /*allow_unused=*/true);
  last_grads_ = r;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!r[k].defined()) {
      g.insert(g.end(), static_cast<size_t>(xs[k].numel()), 0.0);
      continue;
    }
    Vec v = r[k].to_vector<double>();
    g.insert(g.end(), v.begin(), v.end());
  }
  return g;
}

bool Checker::use_fast_mode() {
  const int64_t lim = o_.full_jacobian_max_numel_;
  const bool too_big = lim > 0 && (n_total_ > lim || m_total_ > lim);
  if (!o_.fast_mode_ && too_big)
    report_.warnings.push_back(
        "inputs or outputs exceed full_jacobian_max_numel=" + std::to_string(lim) +
        " elements: fast mode (uᵀJv) used instead of the full Jacobian");
  fast_ = o_.fast_mode_ || too_big;
  report_.mode = fast_ ? "fast (uᵀJv)" : "full Jacobian";
  report_.jacobian_rows = m_total_;
  report_.jacobian_cols = n_total_;
  return fast_;
}

std::pair<size_t, int64_t> Checker::locate(int64_t col) const {
  size_t k = 0;
  while (col >= static_cast<int64_t>(base_[k].size())) {
    col -= static_cast<int64_t>(base_[k].size());
    ++k;
  }
  return {k, col};
}

std::pair<size_t, int64_t> Checker::locate_output(int64_t row) const {
  size_t f = 0;
  while (row >= numel_of(out_shapes_[f])) {
    row -= numel_of(out_shapes_[f]);
    ++f;
  }
  return {f, row};
}

void Checker::place(GradcheckFailure& f, int64_t col) const {
  auto [k, j] = locate(col);
  f.input = diff_[k];
  f.input_shape = work_[diff_[k]].sizes();
  f.dtype = user_[diff_[k]].dtype();
  f.element = unravel_index(j, f.input_shape);
}

void Checker::record(GradcheckFailure f, int64_t col) {
  place(f, col);
  failure_cols_.push_back(col);
  report_.failures.push_back(std::move(f));
}

void Checker::record_unstable(GradcheckFailure f, int64_t col) {
  if (col >= 0) place(f, col);
  report_.inconclusive_entries.push_back(std::move(f));
}

void Checker::keep(GradcheckFailure f, bool unstable, int64_t col) {
  if (unstable)
    record_unstable(std::move(f), col);
  else
    record(std::move(f), col);
}

void Checker::add_check(std::string name, bool passed, std::string detail) {
  report_.checks.push_back({std::move(name), passed, false, std::move(detail)});
}

void Checker::finish() {
  report_.num_failures = static_cast<int64_t>(report_.failures.size());
  std::stable_sort(report_.failures.begin(), report_.failures.end(),
                   [](const GradcheckFailure& a, const GradcheckFailure& b) {
                     // Jacobian entries before uᵀJ elements before fast products, worst first.
                     auto rank = [](const std::string& c) {
                       return c == "jacobian" ? 0 : c == "vjp" ? 1 : 2;
                     };
                     if (rank(a.check) != rank(b.check)) return rank(a.check) < rank(b.check);
                     return badness(a) > badness(b);
                   });
  std::stable_sort(report_.inconclusive_entries.begin(), report_.inconclusive_entries.end(),
                   [](const GradcheckFailure& a, const GradcheckFailure& b) {
                     return a.numeric_spread / std::max(a.tolerance, 1e-300) >
                            b.numeric_spread / std::max(b.tolerance, 1e-300);
                   });
  int64_t unjudged_checks = 0;
  for (const auto& c : report_.checks) unjudged_checks += c.inconclusive ? 1 : 0;
  report_.num_inconclusive =
      static_cast<int64_t>(report_.inconclusive_entries.size()) + unjudged_checks;
  const bool failed =
      !report_.failures.empty() || std::any_of(report_.checks.begin(), report_.checks.end(),
                                               [](const CheckResult& c) { return !c.passed; });
  report_.verdict = failed                         ? Verdict::Failed
                    : report_.num_inconclusive > 0 ? Verdict::Inconclusive
                                                   : Verdict::Passed;
  report_.ok = !failed && !(report_.num_inconclusive > 0 && o_.fail_on_inconclusive_);
}

}  // namespace gradlab::testing::gradcheck_detail
