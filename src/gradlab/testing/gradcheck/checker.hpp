#pragma once
// gradcheck's engine (internal): one Checker per run, its work split by concern over
//   checker.cpp   setup, evaluation of fn, the analytic vjp, bookkeeping and the verdict
//   numeric.cpp   the numeric reference and how far to trust it (comparison, eps/2 refinement)
//   jacobian.cpp  the full Jacobian, fast mode (uᵀJv) and its localization, kinks
//   taylor.cpp    the Taylor-remainder test along a random direction
//   checks.cpp    linearity, determinism, undefined output gradients, dtypes, inputs unchanged
// and the report (text and JSON) in report.cpp, the entry points in ../gradcheck.cpp.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/generator.hpp"
#include "gradlab/testing/gradcheck.hpp"

namespace gradlab::testing::gradcheck_detail {

using Vec = std::vector<double>;

/// printf-style formatting of one double ("%.7g" in num, "%.1e" in sci).
std::string fmt(const char* f, double v);
inline std::string num(double v) { return fmt("%.7g", v); }
inline std::string sci(double v) { return fmt("%.1e", v); }

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// Everything one gradcheck run needs.
class Checker {
 public:
  Checker(const TensorFn& fn, const TensorList& inputs, const GradcheckOptions& o);
  GradcheckReport run();

 private:
  // ---- setup and evaluation (checker.cpp) ---------------------------------------------------
  void prepare();
  void snapshot_inputs();
  // fn at the perturbed copies (pert_), without a graph; floating outputs flattened and joined.
  Vec eval();
  // fn with element j of differentiable input k moved by delta.
  Vec eval_at(size_t k, int64_t j, double delta);
  // fn with every differentiable input moved by h * dir (dir holds one vector per input).
  Vec eval_along(const std::vector<Vec>& dir, double h);
  // The analytic forward: outputs with a graph, their shapes and the random upstream gradient u.
  void analytic_forward();
  Vec flatten_outputs(const TensorList& outs) const;
  Vec random_like_outputs();
  // A random unit direction: one vector per differentiable input, of length 1 over all of them.
  std::vector<Vec> random_direction();
  // uᵀJ for the flattened upstream gradient u (joined over floating outputs), joined over the
  // differentiable inputs. Outputs without a graph contribute nothing.
  Vec analytic_vjp(const TensorList& outs, const Vec& u, bool keep_graph = true);
  bool use_fast_mode();
  // Which differentiable input and element a flat column belongs to.
  std::pair<size_t, int64_t> locate(int64_t col) const;
  std::pair<size_t, int64_t> locate_output(int64_t row) const;
  // Fills f's input, shape, dtype and element from the flat column `col`.
  void place(GradcheckFailure& f, int64_t col) const;
  void record(GradcheckFailure f, int64_t col);
  void record_unstable(GradcheckFailure f, int64_t col);
  // record or record_unstable, as refine decided.
  void keep(GradcheckFailure f, bool unstable, int64_t col);
  void add_check(std::string name, bool passed, std::string detail);
  void finish();

  // ---- the numeric reference (numeric.cpp) --------------------------------------------------
  // Compares analytic a with numeric n under tol; fills `f` (kept by the caller when off).
  bool compare(double a, double n, double tol, GradcheckFailure& f);
  static void fill(double a, double n, double tol, GradcheckFailure& f);
  void note_err(double err);
  // A comparison that failed at eps, redone with d2 = D(eps/2): inconclusive when the two
  // differences disagree by more than the tolerance (the reference is not trustworthy here),
  // else judged against the Richardson value (4·D(eps/2) - D(eps)) / 3. `tol_at(n)` is the
  // tolerance for a numeric value n. Returns true when it passes; else `f` is filled and
  // `unstable` says which list it belongs to.
  bool refine(double a, double d1, double d2, const std::function<double(double)>& tol_at,
              GradcheckFailure& f, bool& unstable);
  // Numeric column c (d y / d input element c) and u·column, by central differences with step h.
  void numeric_column(size_t c, double h, Vec& col, double& vjp_num);
  // uᵀJ with the random u: the tolerance is what the entry tolerances add up to over the
  // column's nonzero entries (atol Σ|u_r| + rtol Σ|u_r J_rc|).
  double vjp_tol(const Vec& col) const;
  // A failed uᵀJ element c (numeric n1 from column col1 at eps, n2 from col2 at eps/2): judged
  // against the Richardson column; recorded (as a failure or inconclusive) unless it passes.
  void refine_vjp(size_t c, double n1, const Vec& col1, const Vec& col2, double n2);

  // ---- Jacobian, fast mode, kinks (jacobian.cpp) --------------------------------------------
  void full_jacobian();
  void fast_mode();
  // After a fast-mode failure: uᵀJ element by element for input k, to name the entries.
  void localize(size_t k, size_t col0);
  // A failing column is a kink when the one-sided slopes of the checked scalar disagree and the
  // jump does not shrink with the step (a smooth function's jump is eps * f'' and does).
  void classify_kinks();

  // ---- Taylor remainder (taylor.cpp) --------------------------------------------------------
  struct TaylorRun;
  // L(x + hv) - L(x) - h ∇L·v for L = uᵀfn and a random unit v must shrink like h² as h halves.
  void taylor();
  // The rounding floor of the remainder (below it, halving h only adds noise).
  double taylor_noise(const TaylorRun& tr);
  // The numeric directional derivative along v, resolved at eps? false (and inconclusive) if not.
  bool taylor_reference(TaylorRun& tr);
  void taylor_inconclusive(const std::string& why);
  // Halves h from 1e-3 until the orders of the remainder settle or it reaches the floor.
  void taylor_halve(TaylorRun& tr);
  void taylor_verdict(const TaylorRun& tr);

  // ---- the other checks (checks.cpp) --------------------------------------------------------
  void linearity();
  void nondeterminism();
  void undefined_grad();
  void grad_dtypes();
  void inputs_unchanged();

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

}  // namespace gradlab::testing::gradcheck_detail
