// gradcheck's numeric reference and how far to trust it: central differences, the comparison
// with the analytic value, and the eps/2 refinement (Richardson) that tells a wrong gradient from
// an unstable reference.

#include <algorithm>
#include <cmath>

#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing::gradcheck_detail {

bool Checker::compare(double a, double n, double tol, GradcheckFailure& f) {
  ++report_.comparisons;
  fill(a, n, tol, f);
  const bool pass = f.abs_err <= tol;  // NaN compares false: a failure
  if (pass) note_err(f.abs_err);
  return pass;
}

void Checker::fill(double a, double n, double tol, GradcheckFailure& f) {
  const double err = std::abs(a - n);
  f.analytic = a;
  f.numeric = n;
  f.abs_err = err;
  f.rel_err = err / std::max(std::abs(n), 1e-300);
  f.tolerance = tol;
}

void Checker::note_err(double err) {
  if (std::isfinite(err)) report_.max_abs_err = std::max(report_.max_abs_err, err);
}

bool Checker::refine(double a, double d1, double d2, const std::function<double(double)>& tol_at,
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

void Checker::numeric_column(size_t c, double h, Vec& col, double& vjp_num) {
  auto [k, j] = locate(static_cast<int64_t>(c));
  Vec yp = eval_at(k, j, h), ym = eval_at(k, j, -h);
  col.resize(yp.size());
  for (size_t r = 0; r < yp.size(); ++r) col[r] = (yp[r] - ym[r]) / (2 * h);
  vjp_num = (dot(u_, yp) - dot(u_, ym)) / (2 * h);
}

double Checker::vjp_tol(const Vec& col) const {
  double scale = 0, support = 0;
  for (size_t r = 0; r < col.size(); ++r) {
    scale += std::abs(u_[r] * col[r]);
    if (col[r] != 0) support += std::abs(u_[r]);
  }
  return o_.atol_ * std::max(support, 1.0) + o_.rtol_ * scale;
}

void Checker::refine_vjp(size_t c, double n1, const Vec& col1, const Vec& col2, double n2) {
  Vec rich(col1.size());
  for (size_t r = 0; r < col1.size(); ++r) rich[r] = (4 * col2[r] - col1[r]) / 3;
  const double tol = vjp_tol(rich);
  GradcheckFailure f;
  bool unstable = false;
  if (refine(
          vjp_[c], n1, n2, [tol](double) { return tol; }, f, unstable))
    return;
  f.check = "vjp";
  keep(std::move(f), unstable, static_cast<int64_t>(c));
}

}  // namespace gradlab::testing::gradcheck_detail
