#include "gradlab/testing/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/core/storage.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::testing {

Shape unravel_index(int64_t flat, const Shape& shape) {
  Shape c(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    c[k] = shape[k] == 0 ? 0 : flat % shape[k];
    flat = shape[k] == 0 ? 0 : flat / shape[k];
  }
  return c;
}

namespace {

using Vec = std::vector<double>;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string num(double v) { return fmt("%.7g", v); }
std::string sci(double v) { return fmt("%.1e", v); }

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A failure worse than the tolerance by this factor ranks first (NaN counts as infinitely bad).
double badness(const GradcheckFailure& f) {
  if (!std::isfinite(f.abs_err)) return std::numeric_limits<double>::infinity();
  return f.abs_err / std::max(f.tolerance, 1e-300);
}

// The Taylor test halves h from 1e-3 this many times at least, and at most (down to ~1e-12).
constexpr int kTaylorSteps = 7;
constexpr int kTaylorMaxSteps = 30;

// Everything one gradcheck run needs.
class Checker {
 public:
  Checker(const TensorFn& fn, const TensorList& inputs, const GradcheckOptions& o)
      : fn_(fn), user_(inputs), o_(o), gen_(o.seed_) {
    report_.options = o;
    report_.name = o.name_.empty() ? std::string("fn") : o.name_;
    report_.num_inputs = static_cast<int64_t>(inputs.size());
  }

  GradcheckReport run() {
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

 private:
  // ---- setup -------------------------------------------------------------------------------
  void prepare() {
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
          w += "central differences in " + to_string(t.dtype()) +
               " with eps=" + fmt("%g", o_.eps_) +
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

  void snapshot_inputs() {
    for (const Tensor& t : user_) {
      versions_.push_back(t.defined() ? t.version() : 0);
      values_.push_back(t.defined() ? t.to_vector<double>() : Vec{});
    }
  }

  // ---- evaluation ------------------------------------------------------------------------
  // fn at the perturbed copies (pert_), without a graph; floating outputs flattened and joined.
  Vec eval() {
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
      GRADLAB_CHECK(
          f < out_shapes_.size() && t.sizes() == out_shapes_[f], ShapeError, "gradcheck",
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

  // fn with element j of differentiable input k moved by delta.
  Vec eval_at(size_t k, int64_t j, double delta) {
    double* p = pert_[k].data_ptr<double>();
    const double keep = base_[k][j];
    p[j] = keep + delta;
    Vec y = eval();
    p[j] = keep;
    return y;
  }

  // fn with every differentiable input moved by h * dir (dir holds one vector per input).
  Vec eval_along(const std::vector<Vec>& dir, double h) {
    for (size_t k = 0; k < pert_.size(); ++k) {
      double* p = pert_[k].data_ptr<double>();
      for (size_t j = 0; j < base_[k].size(); ++j) p[j] = base_[k][j] + h * dir[k][j];
    }
    Vec y = eval();
    for (size_t k = 0; k < pert_.size(); ++k)
      std::copy(base_[k].begin(), base_[k].end(), pert_[k].data_ptr<double>());
    return y;
  }

  // The analytic forward: outputs with a graph, their shapes and the random upstream gradient u.
  void analytic_forward() {
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

  Vec flatten_outputs(const TensorList& outs) const {
    Vec y;
    for (int64_t i : float_outs_) {
      Vec v = outs[i].to_vector<double>();
      y.insert(y.end(), v.begin(), v.end());
    }
    return y;
  }

  Vec random_like_outputs() {
    Vec u(static_cast<size_t>(m_total_));
    for (double& v : u) v = gen_.normal();
    return u;
  }

  // uᵀJ for the flattened upstream gradient u (joined over floating outputs), joined over the
  // differentiable inputs. Outputs without a graph contribute nothing.
  Vec analytic_vjp(const TensorList& outs, const Vec& u, bool keep_graph = true) {
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

  bool use_fast_mode() {
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

  // Which differentiable input and element a flat column belongs to.
  std::pair<size_t, int64_t> locate(int64_t col) const {
    size_t k = 0;
    while (col >= static_cast<int64_t>(base_[k].size())) {
      col -= static_cast<int64_t>(base_[k].size());
      ++k;
    }
    return {k, col};
  }
  std::pair<size_t, int64_t> locate_output(int64_t row) const {
    size_t f = 0;
    while (row >= numel_of(out_shapes_[f])) {
      row -= numel_of(out_shapes_[f]);
      ++f;
    }
    return {f, row};
  }

  void record(GradcheckFailure f, int64_t col) {
    auto [k, j] = locate(col);
    f.input = diff_[k];
    f.input_shape = work_[diff_[k]].sizes();
    f.dtype = user_[diff_[k]].dtype();
    f.element = unravel_index(j, f.input_shape);
    failure_cols_.push_back(col);
    report_.failures.push_back(std::move(f));
  }

  // Compares analytic a with numeric n under tol; fills `f` (kept by the caller when off).
  bool compare(double a, double n, double tol, GradcheckFailure& f) {
    ++report_.comparisons;
    fill(a, n, tol, f);
    const bool pass = f.abs_err <= tol;  // NaN compares false: a failure
    if (pass) note_err(f.abs_err);
    return pass;
  }
  static void fill(double a, double n, double tol, GradcheckFailure& f) {
    const double err = std::abs(a - n);
    f.analytic = a;
    f.numeric = n;
    f.abs_err = err;
    f.rel_err = err / std::max(std::abs(n), 1e-300);
    f.tolerance = tol;
  }
  void note_err(double err) {
    if (std::isfinite(err)) report_.max_abs_err = std::max(report_.max_abs_err, err);
  }

  // A comparison that failed at eps, redone with d2 = D(eps/2): inconclusive when the two
  // differences disagree by more than the tolerance (the reference is not trustworthy here),
  // else judged against the Richardson value (4·D(eps/2) - D(eps)) / 3. `tol_at(n)` is the
  // tolerance for a numeric value n. Returns true when it passes; else `f` is filled and
  // `unstable` says which list it belongs to.
  bool refine(double a, double d1, double d2, const std::function<double(double)>& tol_at,
              GradcheckFailure& f, bool& unstable) {
    ++report_.num_refined;
    const double rich = (4 * d2 - d1) / 3;
    const double spread = std::abs(d1 - d2);
    const double tol = tol_at(rich);
    unstable = !(spread <= tol) && std::isfinite(a);  // a NaN gradient is a failure regardless
    fill(a, unstable ? d1 : rich, unstable ? tol_at(d1) : tol, f);
    f.refined = true;
    f.numeric_eps = d1;
    f.numeric_half = d2;
    f.numeric_spread = spread;
    if (unstable) return false;
    const bool pass = f.abs_err <= f.tolerance;
    if (pass) note_err(f.abs_err);
    return pass;
  }

  void record_unstable(GradcheckFailure f, int64_t col) {
    if (col >= 0) {
      auto [k, j] = locate(col);
      f.input = diff_[k];
      f.input_shape = work_[diff_[k]].sizes();
      f.dtype = user_[diff_[k]].dtype();
      f.element = unravel_index(j, f.input_shape);
    }
    report_.inconclusive_entries.push_back(std::move(f));
  }

  // ---- full Jacobian -----------------------------------------------------------------------
  // Numeric column c (d y / d input element c) and u·column, by central differences with step h.
  void numeric_column(size_t c, double h, Vec& col, double& vjp_num) {
    auto [k, j] = locate(static_cast<int64_t>(c));
    Vec yp = eval_at(k, j, h), ym = eval_at(k, j, -h);
    col.resize(yp.size());
    for (size_t r = 0; r < yp.size(); ++r) col[r] = (yp[r] - ym[r]) / (2 * h);
    vjp_num = (dot(u_, yp) - dot(u_, ym)) / (2 * h);
  }

  // uᵀJ with the random u: the tolerance is what the entry tolerances add up to over the
  // column's nonzero entries (atol Σ|u_r| + rtol Σ|u_r J_rc|).
  double vjp_tol(const Vec& col) const {
    double scale = 0, support = 0;
    for (size_t r = 0; r < col.size(); ++r) {
      scale += std::abs(u_[r] * col[r]);
      if (col[r] != 0) support += std::abs(u_[r]);
    }
    return o_.atol_ * std::max(support, 1.0) + o_.rtol_ * scale;
  }

  void full_jacobian() {
    const double eps = o_.eps_;
    const auto N = static_cast<size_t>(n_total_), M = static_cast<size_t>(m_total_);
    // Numeric columns, and uᵀJ from the same evaluations.
    std::vector<Vec> jn(N);
    Vec vjp_num(N);
    for (size_t c = 0; c < N; ++c) numeric_column(c, eps, jn[c], vjp_num[c]);
    // Analytic rows: one backward per output element with a one-hot upstream gradient.
    std::vector<Vec> ja(M);
    {
      Vec onehot(M, 0.0);
      for (size_t r = 0; r < M; ++r) {
        auto [f, e] = locate_output(static_cast<int64_t>(r));
        if (!out_diff_[f]) {
          ja[r].assign(N, 0.0);
          continue;
        }
        onehot[r] = 1.0;
        ja[r] = analytic_vjp(outs_, onehot);
        onehot[r] = 0.0;
      }
    }
    auto entry_tol = [&](double n) { return o_.atol_ + o_.rtol_ * std::abs(n); };
    for (size_t c = 0; c < N; ++c) {
      // First at eps; only a column with a failing comparison is evaluated again at eps/2.
      std::vector<size_t> bad_rows;
      GradcheckFailure f;
      for (size_t r = 0; r < M; ++r)
        if (!compare(ja[r][c], jn[c][r], entry_tol(jn[c][r]), f)) bad_rows.push_back(r);
      const bool bad_vjp = !compare(vjp_[c], vjp_num[c], vjp_tol(jn[c]), f);
      if (bad_rows.empty() && !bad_vjp) continue;
      Vec jn2;
      double vjp_num2 = 0;
      numeric_column(c, eps / 2, jn2, vjp_num2);
      for (size_t r : bad_rows) {
        GradcheckFailure g;
        bool unstable = false;
        if (refine(ja[r][c], jn[c][r], jn2[r], entry_tol, g, unstable)) continue;
        auto [fo, e] = locate_output(static_cast<int64_t>(r));
        g.check = "jacobian";
        g.output = float_outs_[fo];
        g.output_element = unravel_index(e, out_shapes_[fo]);
        if (unstable)
          record_unstable(std::move(g), static_cast<int64_t>(c));
        else
          record(std::move(g), static_cast<int64_t>(c));
      }
      if (bad_vjp) {
        Vec rich(M);
        for (size_t r = 0; r < M; ++r) rich[r] = (4 * jn2[r] - jn[c][r]) / 3;
        const double tol = vjp_tol(rich);
        GradcheckFailure g;
        bool unstable = false;
        if (refine(
                vjp_[c], vjp_num[c], vjp_num2, [tol](double) { return tol; }, g, unstable))
          continue;
        g.check = "vjp";
        if (unstable)
          record_unstable(std::move(g), static_cast<int64_t>(c));
        else
          record(std::move(g), static_cast<int64_t>(c));
      }
    }
  }

  // ---- fast mode ---------------------------------------------------------------------------
  void fast_mode() {
    const double eps = o_.eps_;
    // u of unit length (the vjp above used an unnormalized u: rescale it).
    const double un = std::sqrt(dot(u_, u_));
    Vec u = u_;
    for (double& v : u) v /= (un > 0 ? un : 1.0);
    size_t col0 = 0;
    for (size_t k = 0; k < diff_.size(); ++k) {
      const size_t n = base_[k].size();
      std::vector<Vec> dir(diff_.size());
      for (size_t q = 0; q < diff_.size(); ++q) dir[q].assign(base_[q].size(), 0.0);
      double vn = 0;
      for (double& v : dir[k]) {
        v = gen_.normal();
        vn += v * v;
      }
      vn = std::sqrt(vn);
      for (double& v : dir[k]) v /= (vn > 0 ? vn : 1.0);
      auto s_num_at = [&](double h) {
        Vec yp = eval_along(dir, h), ym = eval_along(dir, -h);
        double s = 0;
        for (size_t r = 0; r < yp.size(); ++r) s += u[r] * (yp[r] - ym[r]) / (2 * h);
        return s;
      };
      const double s_num = s_num_at(eps);
      double s_an = 0;
      for (size_t j = 0; j < n; ++j) s_an += vjp_[col0 + j] / (un > 0 ? un : 1.0) * dir[k][j];
      // PyTorch's adjusted atol: an all-atol error matrix E gives uᵀEv = atol (Σu)(Σv); at least
      // atol.
      double su = 0, sv = 0;
      for (double v : u) su += v;
      for (double v : dir[k]) sv += v;
      auto tol_at = [&](double v) {
        return o_.atol_ * std::max(std::abs(su * sv), 1.0) + o_.rtol_ * std::abs(v);
      };
      GradcheckFailure f;
      bool unstable = false;
      if (!compare(s_an, s_num, tol_at(s_num), f) &&
          !refine(s_an, s_num, s_num_at(eps / 2), tol_at, f, unstable)) {
        f.check = "fast";
        f.input = diff_[k];
        f.input_shape = work_[diff_[k]].sizes();
        f.dtype = user_[diff_[k]].dtype();
        if (unstable) {
          record_unstable(std::move(f), -1);
        } else {
          report_.failures.push_back(f);
          failure_cols_.push_back(-1);
          if (static_cast<int64_t>(n) <= o_.localize_max_numel_) localize(k, col0);
        }
      }
      col0 += n;
    }
  }

  // After a fast-mode failure: uᵀJ element by element for input k, to name the entries.
  void localize(size_t k, size_t col0) {
    const double eps = o_.eps_;
    for (size_t j = 0; j < base_[k].size(); ++j) {
      const size_t c = col0 + j;
      Vec col;
      double n = 0;
      numeric_column(c, eps, col, n);
      GradcheckFailure f;
      if (compare(vjp_[c], n, vjp_tol(col), f)) continue;
      Vec col2;
      double n2 = 0;
      numeric_column(c, eps / 2, col2, n2);
      for (size_t r = 0; r < col.size(); ++r) col2[r] = (4 * col2[r] - col[r]) / 3;
      const double tol = vjp_tol(col2);
      bool unstable = false;
      if (refine(
              vjp_[c], n, n2, [tol](double) { return tol; }, f, unstable))
        continue;
      f.check = "vjp";
      if (unstable)
        record_unstable(std::move(f), static_cast<int64_t>(c));
      else
        record(std::move(f), static_cast<int64_t>(c));
    }
  }

  // ---- kinks -------------------------------------------------------------------------------
  // A failing column is a kink when the one-sided slopes of the checked scalar disagree and the
  // jump does not shrink with the step (a smooth function's jump is eps * f'' and does).
  void classify_kinks() {
    std::vector<int64_t> cols;
    for (int64_t c : failure_cols_)
      if (c >= 0 && std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    if (cols.empty()) return;
    std::vector<int64_t> kink_cols;
    const double l0 = dot(u_, y0_);
    for (int64_t c : cols) {
      auto [k, j] = locate(c);
      auto slopes = [&](double h) {
        const double lp = dot(u_, eval_at(k, j, h)), lm = dot(u_, eval_at(k, j, -h));
        return std::pair<double, double>{(l0 - lm) / h, (lp - l0) / h};
      };
      auto [left, right] = slopes(o_.eps_);
      auto [left4, right4] = slopes(o_.eps_ / 4);
      const double jump = std::abs(right - left), jump4 = std::abs(right4 - left4);
      const double tol = o_.atol_ + o_.rtol_ * std::max(std::abs(left), std::abs(right));
      if (jump > tol && jump4 > 0.5 * jump) {
        kink_cols.push_back(c);
        report_.kinks.push_back(
            {diff_[k], unravel_index(j, work_[diff_[k]].sizes()), base_[k][j], left, right});
      }
    }
    if (kink_cols.empty()) return;
    std::vector<GradcheckFailure> keep;
    std::vector<int64_t> keep_cols;
    for (size_t i = 0; i < report_.failures.size(); ++i) {
      const int64_t c = failure_cols_[i];
      if (c >= 0 && std::find(kink_cols.begin(), kink_cols.end(), c) != kink_cols.end()) continue;
      keep.push_back(report_.failures[i]);
      keep_cols.push_back(c);
    }
    // A fast-mode product over a kink says nothing either.
    if (fast_) {
      std::vector<GradcheckFailure> k2;
      for (auto& f : keep)
        if (f.check != "fast" || std::none_of(report_.kinks.begin(), report_.kinks.end(),
                                              [&](const Kink& kk) { return kk.input == f.input; }))
          k2.push_back(f);
      keep = std::move(k2);
    }
    report_.failures = std::move(keep);
    failure_cols_ = std::move(keep_cols);
  }

  // ---- Taylor remainder --------------------------------------------------------------------
  void taylor() {
    TaylorResult& t = report_.taylor;
    if (!report_.kinks.empty()) {
      add_check("taylor", true, "skipped: non-differentiable points in the input");
      return;
    }
    t.ran = true;
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
    double gv = 0;
    size_t at = 0;
    for (auto& d : dir)
      for (double& v : d) {
        v /= (vn > 0 ? vn : 1.0);
        gv += vjp_[at++] * v;
      }
    const double l0 = dot(u_, y0_);
    double scale = std::abs(gv) * 1e-3;
    for (size_t r = 0; r < y0_.size(); ++r) scale += std::abs(u_[r] * y0_[r]);
    // Rounding in L: float64 about 1e-16 relative, float32 about 1e-7; keep a wide margin. A
    // raised eps says fn is smooth only at coarse scales (float32 inside): use float32's level.
    const double rel = o_.taylor_rel_noise_ > 0            ? o_.taylor_rel_noise_
                       : (float32_out_ || o_.eps_ >= 1e-4) ? 1e-5
                                                           : 1e-12;
    // And measured from the values: at h = ±1e-8, ±1e-9, ±1e-10 the true remainder is below
    // 1e-16·|vᵀHv|, so what is left is the rounding of L(x+hv) - L(x), which does not shrink with
    // h (large when the outputs come from cancellation: layer_norm of 2, batch_norm over 2
    // values, whose output is nearly constant). Six samples, since two can both land small
    // (gradgrad of batch_norm on [1, 2, 2], seed 17111494834531011952: floor 1.5e-17 from two,
    // remainders of ~1e-16 above it, orders 0.32 -0.59 0.71 ...).
    double measured = 0;
    for (double tiny : {1e-8, -1e-8, 1e-9, -1e-9, 1e-10, -1e-10})
      measured = std::max(measured, std::abs(dot(u_, eval_along(dir, tiny)) - l0 - tiny * gv));
    const double noise = std::max(rel * std::max(scale, 1e-300), 4 * measured);
    t.noise = noise;
    // The reference along v: if the central difference moves by more than the tolerance when
    // eps halves, fn is not resolved at eps along v, let alone at h >= 1e-3 / 2^k.
    double su = 0;
    for (double v : u_) su += std::abs(v);
    auto dv_at = [&](double h) {
      return (dot(u_, eval_along(dir, h)) - dot(u_, eval_along(dir, -h))) / (2 * h);
    };
    const double dv1 = dv_at(o_.eps_), dv2 = dv_at(o_.eps_ / 2), dv = (4 * dv2 - dv1) / 3;
    const double dv_tol = o_.atol_ * std::max(su, 1.0) + o_.rtol_ * std::abs(dv);
    auto inconclusive = [&](const std::string& why) {
      t.inconclusive = true;
      t.order = std::numeric_limits<double>::quiet_NaN();
      report_.checks.push_back({"taylor", true, true, "inconclusive: " + why});
    };
    if (!(std::abs(dv1 - dv2) <= dv_tol)) {
      inconclusive(
          "the numeric estimate is unstable here: the directional differences along v "
          "at eps and eps/2 differ by " +
          sci(std::abs(dv1 - dv2)) + " > tolerance " + sci(dv_tol) + " (analytic " + num(gv) + ")");
      return;
    }
    // A wrong gradient leaves r(h) ≈ |dv - ∇L·v|·h; a right one r(h) ≈ |vᵀHv|·h²/2. Halve h
    // until the last three orders agree (within 0.6) at 2 or more, or at 1 with that slope.
    const double err1 = std::abs(dv - gv);
    double last_r = 0, last_h = 1;  // the last remainder above the floor
    enum class Fit { Open, Pass, Fail };
    auto settle = [&](const std::vector<double>& run, size_t w) {
      if (run.size() < w) return Fit::Open;
      std::vector<double> last(run.end() - static_cast<int64_t>(w), run.end());
      std::sort(last.begin(), last.end());
      if (last.back() - last.front() > 0.6) return Fit::Open;
      const double m = last[last.size() / 2];
      t.order = m;
      if (m >= 1.7) return Fit::Pass;
      const double slope = last_r / last_h;
      if (std::abs(m - 1) <= 0.3 && slope >= 0.5 * err1 && slope <= 2 * err1) return Fit::Fail;
      return Fit::Open;
    };
    std::vector<double> run;  // orders of consecutive remainders above the floor
    int64_t num_orders = 0, below = 0;
    double floor_h = 0;  // the first of two consecutive remainders below the floor
    Fit fit = Fit::Open;
    double h = 1e-3;
    for (int k = 0; k < kTaylorMaxSteps; ++k, h /= 2) {
      const double r = std::abs(dot(u_, eval_along(dir, h)) - l0 - h * gv);
      const bool prev_above = !t.remainder.empty() && t.remainder.back() > noise;
      t.h.push_back(h);
      t.remainder.push_back(r);
      if (!(r > noise)) {
        if (++below == 1) floor_h = h;
        if (below == 2) break;  // at rounding level: halving further only adds noise
        continue;
      }
      if (below > 0) run.clear();  // a new run starts after a remainder below the floor
      below = 0;
      last_r = r;
      last_h = h;
      if (prev_above) {
        run.push_back(std::log2(t.remainder[t.remainder.size() - 2] / r));
        ++num_orders;
      }
      if (k >= kTaylorSteps - 1 && (fit = settle(run, 3)) != Fit::Open) break;
    }
    if (fit == Fit::Open && run.size() >= 2) fit = settle(run, std::min<size_t>(run.size(), 3));
    // Below the floor F at h_f and h_f/2: |δh_f + c h_f²/2| <= F and |δh_f/2 + c h_f²/8| <= F, so
    // (4·second - first) |δ| <= 5F/h_f: the gradient along v is right to that bound. Without two
    // orders above the floor (fn linear along v, or its remainder at rounding level from the
    // start) that bound is all there is: within the tolerance a pass, else too few points.
    const bool bounded = below == 2 && 5 * noise / floor_h <= dv_tol;
    if (fit == Fit::Open && bounded) {
      t.order = std::numeric_limits<double>::quiet_NaN();
      t.passed = true;
      add_check("taylor", true,
                (num_orders < 2 ? std::string("remainder at rounding level ") + sci(noise) +
                                      " from h = " + sci(floor_h) + " (fn is linear along v)"
                                : "the remainder reaches the rounding floor " + sci(noise) +
                                      " at h = " + sci(floor_h) + " and h/2") +
                    ": the gradient along v is right to " + sci(5 * noise / floor_h) +
                    " <= tolerance " + sci(dv_tol));
      return;
    }
    if (fit == Fit::Open && num_orders < 2) {
      inconclusive("only " + std::to_string(num_orders) +
                   " halving(s) of h keep the remainder above the rounding floor " + sci(noise) +
                   " (too few to fit an order), and the floor bounds the error along v only by " +
                   sci(below == 2 ? 5 * noise / floor_h : std::numeric_limits<double>::infinity()) +
                   " > tolerance " + sci(dv_tol));
      return;
    }
    if (fit == Fit::Open) {
      std::string os;
      for (size_t k = 0; k < run.size(); ++k) os += (k ? " " : "") + fmt("%.2f", run[k]);
      inconclusive(
          "the Taylor remainder does not settle at order 1 or 2 above the rounding floor " +
          sci(noise) + " as h halves from 1e-03 to " + sci(t.h.back()) +
          (os.empty() ? std::string() : " (last orders " + os + ")"));
      return;
    }
    t.passed = fit == Fit::Pass;
    add_check("taylor", t.passed,
              "Taylor remainder |L(x+hv) - L(x) - h*grad.v| shrinks at order " +
                  fmt("%.2f", t.order) + " as h halves from 1e-03 to " + sci(t.h.back()) +
                  " (expected 2; order 1 means the gradient is wrong along a random direction v)");
  }

  // ---- linearity, determinism, undefined grads ---------------------------------------------
  void linearity() {
    const double a = 0.5 + gen_.uniform(), b = -(0.5 + gen_.uniform());
    Vec u1 = random_like_outputs(), u2 = random_like_outputs(), u12(u1.size());
    for (size_t r = 0; r < u1.size(); ++r) u12[r] = a * u1[r] + b * u2[r];
    Vec g1 = analytic_vjp(outs_, u1), g2 = analytic_vjp(outs_, u2), g12 = analytic_vjp(outs_, u12);
    double worst = 0;
    int64_t where = -1;
    double got = 0, want = 0;
    for (size_t c = 0; c < g1.size(); ++c) {
      const double rhs = a * g1[c] + b * g2[c];
      const double err = std::abs(g12[c] - rhs);
      const double tol = o_.atol_ + o_.rtol_ * std::abs(rhs);
      if (!(err <= tol) && (where < 0 || err > worst || !std::isfinite(err))) {
        worst = err;
        where = static_cast<int64_t>(c);
        got = g12[c];
        want = rhs;
      }
    }
    if (where < 0) {
      add_check("linearity", true, "");
      return;
    }
    auto [k, j] = locate(where);
    add_check(
        "linearity", false,
        "backward is not linear in the upstream gradient: backward(a*u1 + b*u2) = " + num(got) +
            " but a*backward(u1) + b*backward(u2) = " + num(want) + " at input " +
            std::to_string(diff_[k]) + " " + shape_str(unravel_index(j, work_[diff_[k]].sizes())) +
            " (a=" + fmt("%.3g", a) + ", b=" + fmt("%.3g", b) + ")");
  }

  void nondeterminism() {
    // Same upstream gradient through the retained graph, then through a freshly built one.
    Vec again = analytic_vjp(outs_, u_);
    TensorList outs2;
    {
      EnableGradGuard eg;
      outs2 = fn_(work_);
    }
    Vec fresh = analytic_vjp(outs2, u_, false);
    double worst = 0;
    int64_t where = -1;
    for (size_t c = 0; c < vjp_.size(); ++c) {
      for (double v : {again[c], fresh[c]}) {
        const double d = std::abs(v - vjp_[c]);
        if (!(d <= o_.nondet_tol_) && (where < 0 || d > worst)) {
          worst = d;
          where = static_cast<int64_t>(c);
        }
      }
    }
    if (where < 0) {
      add_check("nondeterminism", true, "");
      return;
    }
    auto [k, j] = locate(where);
    add_check("nondeterminism", false,
              "backward is not reproducible: two runs with the same upstream gradient differ by " +
                  sci(worst) + " > nondet_tol = " + fmt("%g", o_.nondet_tol_) + " at input " +
                  std::to_string(diff_[k]) + " " +
                  shape_str(unravel_index(j, work_[diff_[k]].sizes())));
  }

  void undefined_grad() {
    std::vector<size_t> d;
    for (size_t f = 0; f < float_outs_.size(); ++f)
      if (out_diff_[f]) d.push_back(f);
    if (d.size() < 2) return;  // one output: nothing can be undefined
    size_t at0 = 0;
    std::vector<size_t> offs;
    for (size_t f = 0; f < float_outs_.size(); ++f) {
      offs.push_back(at0);
      at0 += static_cast<size_t>(numel_of(out_shapes_[f]));
    }
    TensorList xs;
    for (int64_t i : diff_) xs.push_back(work_[i]);
    for (size_t f : d) {
      // Only output f gets a gradient; every other one is left undefined.
      const Tensor& t = outs_[float_outs_[f]];
      const int64_t n = numel_of(out_shapes_[f]);
      Vec part(u_.begin() + static_cast<int64_t>(offs[f]),
               u_.begin() + static_cast<int64_t>(offs[f]) + n);
      TensorList r = autograd::grad(
          {t}, xs, {from_vector(part, out_shapes_[f], TensorOptions().dtype(t.dtype()))}, true,
          false, true);
      Vec only;
      for (size_t k = 0; k < xs.size(); ++k) {
        Vec v = r[k].defined() ? r[k].to_vector<double>()
                               : Vec(static_cast<size_t>(xs[k].numel()), 0.0);
        only.insert(only.end(), v.begin(), v.end());
      }
      Vec zeros_u(u_.size(), 0.0);
      std::copy(part.begin(), part.end(), zeros_u.begin() + static_cast<int64_t>(offs[f]));
      Vec with_zeros = analytic_vjp(outs_, zeros_u);
      for (size_t c = 0; c < only.size(); ++c) {
        if (std::abs(only[c] - with_zeros[c]) <= o_.atol_ + o_.rtol_ * std::abs(with_zeros[c]))
          continue;
        auto [k, j] = locate(static_cast<int64_t>(c));
        add_check("undefined_grad", false,
                  "with only output " + std::to_string(float_outs_[f]) +
                      " given a gradient, input " + std::to_string(diff_[k]) + " " +
                      shape_str(unravel_index(j, work_[diff_[k]].sizes())) + " gets " +
                      num(only[c]) + " but zero gradients for the other outputs give " +
                      num(with_zeros[c]) + ": an undefined output gradient must act as zeros");
        return;
      }
    }
    add_check("undefined_grad", true, "");
  }

  void grad_dtypes() {
    for (size_t k = 0; k < last_grads_.size() && k < diff_.size(); ++k) {
      const Tensor& g = last_grads_[k];
      if (g.defined() && g.dtype() != work_[diff_[k]].dtype()) {
        add_check("grad_dtype", false,
                  "gradient of input " + std::to_string(diff_[k]) + " is " + to_string(g.dtype()) +
                      " but the input is " + to_string(work_[diff_[k]].dtype()));
        return;
      }
    }
    add_check("grad_dtype", true, "");
  }

  void inputs_unchanged() {
    for (size_t i = 0; i < user_.size(); ++i) {
      const Tensor& t = user_[i];
      if (!t.defined()) continue;
      if (t.version() != versions_[i]) {
        add_check("inputs_unchanged", false,
                  "fn modified input " + std::to_string(i) + " in place: version " +
                      std::to_string(versions_[i]) + " -> " + std::to_string(t.version()) +
                      ", last write at " + t.impl()->storage->last_write().str() +
                      "; hint: clone() an input before writing to it");
        return;
      }
      if (t.to_vector<double>() != values_[i] &&
          !(std::any_of(values_[i].begin(), values_[i].end(),
                        [](double v) { return std::isnan(v); }))) {
        add_check("inputs_unchanged", false,
                  "the values of input " + std::to_string(i) +
                      " changed without a version bump (a raw write "
                      "through data_ptr?)");
        return;
      }
    }
    if (modified_in_eval_) {
      add_check("inputs_unchanged", false,
                "fn modified one of its inputs in place (seen on the perturbed copies gradcheck "
                "passes it)");
      return;
    }
    add_check("inputs_unchanged", true, "");
  }

  void add_check(std::string name, bool passed, std::string detail) {
    report_.checks.push_back({std::move(name), passed, false, std::move(detail)});
  }

  void finish() {
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

  const TensorFn& fn_;
  const TensorList& user_;
  GradcheckOptions o_;
  Generator gen_;
  GradcheckReport report_;

  TensorList work_;            // arguments of the analytic pass (float32 inputs upcast)
  std::vector<int64_t> diff_;  // indices of the differentiable arguments
  TensorList pert_;            // contiguous float64 copies, perturbed one element at a time
  std::vector<Vec> base_;      // their unperturbed values
  int64_t n_total_ = 0, m_total_ = 0;
  std::vector<uint32_t> versions_;
  std::vector<Vec> values_;

  TensorList outs_;
  std::vector<int64_t> float_outs_;
  std::vector<Shape> out_shapes_;
  std::vector<bool> out_diff_;
  bool float32_out_ = false;
  Vec u_, y0_, vjp_;
  TensorList last_grads_;
  bool fast_ = false;
  bool modified_in_eval_ = false;
  std::vector<int64_t> failure_cols_;  // flat input column of each failure (-1: a fast product)
};

// ---- text and JSON ---------------------------------------------------------------------------

std::string tolerances(const GradcheckOptions& o) {
  return "(eps=" + fmt("%.0e", o.eps_) + " atol=" + fmt("%.0e", o.atol_) +
         " rtol=" + fmt("%.0e", o.rtol_) + ")";
}

std::string entry_line(const GradcheckFailure& f) {
  std::string s = "input " + std::to_string(f.input) + " ";
  s += f.check == "fast" ? std::string("(uᵀJv)") : shape_str(f.element);
  if (f.check == "jacobian")
    s += " -> output " + std::to_string(f.output) + " " + shape_str(f.output_element);
  if (f.check == "vjp") s += " (uᵀJ)";
  s += ": analytic " + num(f.analytic) + ", numeric " + num(f.numeric) + ", |diff| " +
       sci(f.abs_err) + ", rel " + sci(f.rel_err) + ", tol " + sci(f.tolerance);
  return s;
}

std::string inconclusive_line(const GradcheckFailure& f) {
  std::string s = "input " + std::to_string(f.input) + " ";
  s += f.check == "fast" ? std::string("(uᵀJv)") : shape_str(f.element);
  if (f.check == "jacobian")
    s += " -> output " + std::to_string(f.output) + " " + shape_str(f.output_element);
  if (f.check == "vjp") s += " (uᵀJ)";
  s += ": analytic " + num(f.analytic) + ", numeric " + num(f.numeric_eps) + " at eps but " +
       num(f.numeric_half) + " at eps/2: they differ by " + sci(f.numeric_spread) + " > tol " +
       sci(f.tolerance);
  return s;
}

std::string headline_for_check(const std::string& name) {
  if (name == "linearity") return "backward is not linear in the upstream gradient";
  if (name == "nondeterminism") return "backward is not deterministic";
  if (name == "undefined_grad") return "an undefined output gradient is not treated as zeros";
  if (name == "inputs_unchanged") return "fn modifies its inputs";
  if (name == "grad_dtype") return "a gradient has the wrong dtype";
  if (name == "taylor") return "the Taylor remainder shrinks at the wrong order";
  if (name == "exception") return "an exception was thrown";
  return name;
}

void json_string(std::ostringstream& os, const std::string& s) {
  os << '"';
  for (unsigned char ch : s) {
    switch (ch) {
      case '"':
        os << "\\\"";
        break;
      case '\\':
        os << "\\\\";
        break;
      case '\n':
        os << "\\n";
        break;
      case '\t':
        os << "\\t";
        break;
      case '\r':
        os << "\\r";
        break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          os << buf;
        } else {
          os << ch;
        }
    }
  }
  os << '"';
}
void json_number(std::ostringstream& os, double v) {
  if (std::isfinite(v))
    os << fmt("%.17g", v);
  else
    os << "null";  // JSON has no NaN / Inf
}
void json_shape(std::ostringstream& os, const Shape& s) {
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
}

}  // namespace

// ---- report ----------------------------------------------------------------------------------

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Passed:
      return "passed";
    case Verdict::Failed:
      return "failed";
    case Verdict::Inconclusive:
      return "inconclusive";
  }
  return "?";
}

std::string GradcheckReport::first_failure() const {
  if (!failures.empty()) return failures.front().check;
  for (const auto& c : checks)
    if (!c.passed) return c.name;
  if (!ok && inconclusive()) return "inconclusive";  // fail_on_inconclusive
  return "";
}

std::vector<GradcheckFailure> GradcheckReport::top(int64_t k) const {
  if (k < 0) k = options.top_k_;
  std::vector<GradcheckFailure> r(
      failures.begin(),
      failures.begin() + std::min<int64_t>(k, static_cast<int64_t>(failures.size())));
  return r;
}

std::string GradcheckReport::text() const {
  std::ostringstream os;
  auto input_desc = [&](int64_t i) {
    return "input " + std::to_string(i) + " of " + std::to_string(num_inputs) + ", shape " +
           shape_str(input_shapes[i]) + ", " + to_string(input_dtypes[i]);
  };
  auto summary = [&] {
    for (size_t k = 0; k < checked_inputs.size(); ++k)
      os << (k ? "; " : "") << input_desc(checked_inputs[k]);
    os << "; " << mode << " " << jacobian_rows << " x " << jacobian_cols << ", " << comparisons
       << " comparisons";
  };
  if (verdict == Verdict::Inconclusive) {
    const int64_t entries = static_cast<int64_t>(inconclusive_entries.size());
    os << "gradcheck inconclusive for " << name << ": "
       << (entries > 0
               ? "the numeric estimate is unstable here (" + std::to_string(entries) + " of " +
                     std::to_string(comparisons) + " comparisons; no failure found)"
               : std::string("the Taylor fit is unusable here (no failure found)"))
       << (ok ? "" : "; counted as a failure (fail_on_inconclusive)") << "\n  ";
    summary();
    os << ", max |diff| " << sci(max_abs_err) << " where conclusive\n";
  }
  if (verdict == Verdict::Passed) {
    os << "gradcheck passed for " << name << ": ";
    for (size_t k = 0; k < checked_inputs.size(); ++k)
      os << (k ? "; " : "") << input_desc(checked_inputs[k]);
    os << "; " << mode << " " << jacobian_rows << " x " << jacobian_cols << ", " << comparisons
       << " comparisons, max |diff| " << sci(max_abs_err);
    if (num_refined > 0) os << " (" << num_refined << " refined at eps/2)";
    if (taylor.ran)
      os << ", Taylor order "
         << (std::isnan(taylor.order) ? std::string("n/a (at rounding level)")
                                      : fmt("%.2f", taylor.order));
    os << "\n";
  } else if (verdict == Verdict::Inconclusive) {
    // headline above
  } else if (!failures.empty()) {
    const GradcheckFailure& w = failures.front();
    os << "gradcheck failed for " << name << ": " << input_desc(w.input) << "\n";
    if (w.check == "fast") {
      os << "  uᵀJv along a random direction: analytic = " << num(w.analytic)
         << ", numeric = " << num(w.numeric) << "\n";
    } else {
      os << "  element " << shape_str(w.element) << ": analytic = " << num(w.analytic)
         << ", numeric = " << num(w.numeric) << "\n";
    }
    os << "  |diff| = " << sci(w.abs_err) << " > atol + rtol*|numeric| = " << sci(w.tolerance)
       << "   " << tolerances(options) << "\n";
    if (w.check == "jacobian")
      os << "  Jacobian entry d output " << w.output << " " << shape_str(w.output_element)
         << " / d input " << w.input << " " << shape_str(w.element) << "; " << num_failures
         << " of " << comparisons << " comparisons fail (" << mode << " " << jacobian_rows << " x "
         << jacobian_cols << ")\n";
    else if (w.check == "vjp")
      os << "  element of uᵀJ for a random upstream gradient u; " << num_failures << " of "
         << comparisons << " comparisons fail (" << mode << ")\n";
    else
      os << "  fast mode: rerun with fast_mode(false) on a smaller input to name the element\n";
    if (failures.size() > 1) {
      const auto t = top();
      os << "  worst " << t.size() << " of " << num_failures << ":\n";
      for (const auto& f : t) os << "    " << entry_line(f) << "\n";
    }
  } else {
    std::string first;
    for (const auto& c : checks)
      if (!c.passed) {
        first = c.name;
        break;
      }
    os << "gradcheck failed for " << name << ": " << headline_for_check(first) << "\n";
  }
  if (!inconclusive_entries.empty()) {
    const auto n = std::min<size_t>(inconclusive_entries.size(),
                                    static_cast<size_t>(std::max<int64_t>(options.top_k_, 1)));
    os << "  inconclusive: the numeric estimate is unstable here at " << inconclusive_entries.size()
       << " comparison" << (inconclusive_entries.size() == 1 ? "" : "s")
       << " (not counted as failures)"
       << (n < inconclusive_entries.size() ? "; worst " + std::to_string(n) : std::string())
       << ":\n";
    for (size_t k = 0; k < n; ++k)
      os << "    " << inconclusive_line(inconclusive_entries[k]) << "\n";
    os << "  hint: fn varies faster than eps=" << fmt("%.0e", options.eps_)
       << " resolves at this point; check it at a better conditioned point\n";
  }
  for (const auto& c : checks)
    if (!c.passed || c.inconclusive) os << "  " << c.name << ": " << c.detail << "\n";
  if (!ok && taylor.ran && taylor.passed && !std::isnan(taylor.order))
    os << "  Taylor remainder order " << fmt("%.2f", taylor.order) << " (2 expected)\n";
  for (const auto& k : kinks)
    os << "  non-differentiable point at input " << k.input << " " << shape_str(k.element) << " = "
       << fmt("%.1f", k.value) << "   (left slope " << num(k.left) << ", right slope "
       << num(k.right) << "; not counted as a failure)\n";
  for (const auto& w : warnings) os << "  warning: " << w << "\n";
  if (!options.reproduce_.empty()) os << "  reproduce: " << options.reproduce_ << "\n";
  return os.str();
}

std::string GradcheckReport::json() const {
  std::ostringstream os;
  os << "{\"ok\":" << (ok ? "true" : "false") << ",\"verdict\":";
  json_string(os, to_string(verdict));
  os << ",\"name\":";
  json_string(os, name);
  os << ",\"mode\":";
  json_string(os, mode);
  os << ",\"options\":{\"eps\":";
  json_number(os, options.eps_);
  os << ",\"atol\":";
  json_number(os, options.atol_);
  os << ",\"rtol\":";
  json_number(os, options.rtol_);
  os << ",\"nondet_tol\":";
  json_number(os, options.nondet_tol_);
  os << ",\"fast_mode\":" << (options.fast_mode_ ? "true" : "false")
     << ",\"seed\":" << options.seed_ << "}";
  os << ",\"num_inputs\":" << num_inputs << ",\"inputs\":[";
  for (size_t k = 0; k < checked_inputs.size(); ++k) {
    const int64_t i = checked_inputs[k];
    os << (k ? "," : "") << "{\"index\":" << i << ",\"shape\":";
    json_shape(os, input_shapes[i]);
    os << ",\"dtype\":";
    json_string(os, to_string(input_dtypes[i]));
    os << "}";
  }
  os << "],\"jacobian\":{\"rows\":" << jacobian_rows << ",\"cols\":" << jacobian_cols
     << "},\"comparisons\":" << comparisons << ",\"num_failures\":" << num_failures
     << ",\"num_inconclusive\":" << num_inconclusive << ",\"num_refined\":" << num_refined
     << ",\"max_abs_err\":";
  json_number(os, max_abs_err);
  auto entries = [&](const std::vector<GradcheckFailure>& t) {
    for (size_t k = 0; k < t.size(); ++k) {
      const auto& f = t[k];
      os << (k ? "," : "") << "{\"check\":";
      json_string(os, f.check);
      os << ",\"input\":" << f.input << ",\"element\":";
      json_shape(os, f.element);
      if (f.output >= 0) {
        os << ",\"output\":" << f.output << ",\"output_element\":";
        json_shape(os, f.output_element);
      }
      os << ",\"analytic\":";
      json_number(os, f.analytic);
      os << ",\"numeric\":";
      json_number(os, f.numeric);
      os << ",\"abs_err\":";
      json_number(os, f.abs_err);
      os << ",\"rel_err\":";
      json_number(os, f.rel_err);
      os << ",\"tolerance\":";
      json_number(os, f.tolerance);
      if (f.refined) {
        os << ",\"numeric_eps\":";
        json_number(os, f.numeric_eps);
        os << ",\"numeric_half\":";
        json_number(os, f.numeric_half);
        os << ",\"numeric_spread\":";
        json_number(os, f.numeric_spread);
      }
      os << "}";
    }
  };
  const auto keep = static_cast<size_t>(std::max<int64_t>(options.top_k_, 1));
  os << ",\"failures\":[";
  entries(top(static_cast<int64_t>(keep)));
  os << "],\"inconclusive\":[";
  entries(std::vector<GradcheckFailure>(
      inconclusive_entries.begin(),
      inconclusive_entries.begin() +
          static_cast<int64_t>(std::min(keep, inconclusive_entries.size()))));
  os << "],\"kinks\":[";
  for (size_t k = 0; k < kinks.size(); ++k) {
    os << (k ? "," : "") << "{\"input\":" << kinks[k].input << ",\"element\":";
    json_shape(os, kinks[k].element);
    os << ",\"value\":";
    json_number(os, kinks[k].value);
    os << ",\"left\":";
    json_number(os, kinks[k].left);
    os << ",\"right\":";
    json_number(os, kinks[k].right);
    os << "}";
  }
  os << "],\"checks\":[";
  for (size_t k = 0; k < checks.size(); ++k) {
    os << (k ? "," : "") << "{\"name\":";
    json_string(os, checks[k].name);
    os << ",\"passed\":" << (checks[k].passed ? "true" : "false")
       << ",\"inconclusive\":" << (checks[k].inconclusive ? "true" : "false") << ",\"detail\":";
    json_string(os, checks[k].detail);
    os << "}";
  }
  os << "],\"taylor\":{\"ran\":" << (taylor.ran ? "true" : "false")
     << ",\"passed\":" << (taylor.passed ? "true" : "false")
     << ",\"inconclusive\":" << (taylor.inconclusive ? "true" : "false") << ",\"order\":";
  json_number(os, taylor.order);
  os << ",\"noise\":";
  json_number(os, taylor.noise);
  os << ",\"h\":[";
  for (size_t k = 0; k < taylor.h.size(); ++k) {
    os << (k ? "," : "");
    json_number(os, taylor.h[k]);
  }
  os << "],\"remainder\":[";
  for (size_t k = 0; k < taylor.remainder.size(); ++k) {
    os << (k ? "," : "");
    json_number(os, taylor.remainder[k]);
  }
  os << "]},\"warnings\":[";
  for (size_t k = 0; k < warnings.size(); ++k) {
    os << (k ? "," : "");
    json_string(os, warnings[k]);
  }
  os << "],\"reproduce\":";
  json_string(os, options.reproduce_);
  os << "}";
  return os.str();
}

GradcheckError::GradcheckError(GradcheckReport report)
    : AutogradError(report.text()), report_(std::move(report)) {}

// ---- entry points ----------------------------------------------------------------------------

GradcheckReport gradcheck(const TensorFn& fn, const TensorList& inputs,
                          const GradcheckOptions& options) {
  GRADLAB_CHECK(options.eps_ > 0, ValueError, "gradcheck", "eps must be positive", "eps > 0",
                fmt("%g", options.eps_));
  // CUDA inputs: the checker perturbs CPU copies, and fn gets them moved back to their device
  // (a differentiable copy), its outputs moved to the CPU. So fn's CUDA kernels are what both
  // the numerical and the analytical Jacobian measure.
  bool any_cuda = false;
  for (const Tensor& t : inputs) any_cuda = any_cuda || (t.defined() && t.is_cuda());
  if (any_cuda) {
    TensorList host;
    std::vector<Device> where;
    for (const Tensor& t : inputs) {
      where.push_back(t.defined() ? t.device() : Device());
      host.push_back(t.defined() ? t.detach().cpu().requires_grad_(t.requires_grad()) : t);
    }
    TensorFn on_device = [fn, where](const TensorList& xs) {
      TensorList moved;
      for (size_t i = 0; i < xs.size(); ++i)
        moved.push_back(xs[i].defined() ? xs[i].to(where[i]) : xs[i]);
      TensorList outs = fn(moved);
      for (Tensor& o : outs)
        if (o.defined()) o = o.cpu();
      return outs;
    };
    GradcheckReport r = Checker(on_device, host, options).run();
    if (!r.ok && options.raise_exception_) throw GradcheckError(std::move(r));
    return r;
  }
  GradcheckReport r = Checker(fn, inputs, options).run();
  if (!r.ok && options.raise_exception_) throw GradcheckError(std::move(r));
  return r;
}

GradcheckReport gradcheck(const std::function<Tensor(const TensorList&)>& fn,
                          const TensorList& inputs, const GradcheckOptions& options) {
  return gradcheck(TensorFn([&fn](const TensorList& in) { return TensorList{fn(in)}; }), inputs,
                   options);
}

GradcheckReport gradgradcheck(const TensorFn& fn, const TensorList& inputs,
                              const TensorList& grad_outputs, const GradcheckOptions& options) {
  // Which arguments fn differentiates (the perturbed copies gradcheck passes do not require grad).
  std::vector<bool> diff(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    diff[i] = inputs[i].defined() && inputs[i].is_floating_point() && inputs[i].requires_grad();
  TensorList us = grad_outputs;
  if (us.empty()) {
    TensorList outs;
    {
      NoGradGuard ng;
      outs = fn(inputs);
    }
    Generator gen(derive_seed(options.seed_, 2));
    for (const Tensor& t : outs)
      if (t.defined() && t.is_floating_point())
        us.push_back(randn(t.sizes(), TensorOptions().dtype(kFloat64), &gen).requires_grad_(true));
  }
  const size_t n = inputs.size();
  TensorFn g = [fn, n, diff](const TensorList& all) -> TensorList {
    EnableGradGuard eg;
    TensorList xs(all.begin(), all.begin() + static_cast<int64_t>(n));
    TensorList dx;
    for (size_t i = 0; i < n; ++i) {
      if (!diff[i]) continue;
      if (!xs[i].requires_grad()) xs[i] = xs[i].detach().requires_grad_(true);
      dx.push_back(xs[i]);
    }
    TensorList outs = fn(xs);
    TensorList roots, gos;
    size_t k = n;
    for (const Tensor& t : outs) {
      if (!t.defined() || !t.is_floating_point()) continue;
      if (k >= all.size()) break;
      const Tensor& u = all[k++];
      if (!t.requires_grad()) continue;
      roots.push_back(t);
      gos.push_back(u.to(t.device()).to(t.dtype()));
    }
    TensorList r(dx.size());
    if (!roots.empty())
      r = autograd::grad(roots, dx, gos, true, /*create_graph=*/true, /*allow_unused=*/true);
    for (size_t i = 0; i < r.size(); ++i)
      if (!r[i].defined()) r[i] = zeros_like(dx[i]);
    return r;
  };
  TensorList all = inputs;
  all.insert(all.end(), us.begin(), us.end());
  GradcheckOptions o = options;
  o.name_ = "gradgrad of " + (options.name_.empty() ? std::string("fn") : options.name_);
  o.check_undefined_grad_ =
      false;  // the gradient function's outputs are all defined by construction
  return gradcheck(g, all, o);
}

GradcheckReport gradgradcheck(const std::function<Tensor(const TensorList&)>& fn,
                              const TensorList& inputs, const TensorList& grad_outputs,
                              const GradcheckOptions& options) {
  return gradgradcheck(TensorFn([&fn](const TensorList& in) { return TensorList{fn(in)}; }), inputs,
                       grad_outputs, options);
}

}  // namespace gradlab::testing
