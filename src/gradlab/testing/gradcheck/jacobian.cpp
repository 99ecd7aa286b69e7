// gradcheck's Jacobian checks: the full Jacobian (every entry, and uᵀJ with a random u), fast
// mode (uᵀJv along random directions) with its element-by-element localization, and the
// classification of failures at non-differentiable points (kinks).

#include <algorithm>
#include <cmath>

#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing::gradcheck_detail {

void Checker::full_jacobian() {
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
      keep(std::move(g), unstable, static_cast<int64_t>(c));
    }
    if (bad_vjp) refine_vjp(c, vjp_num[c], jn[c], jn2, vjp_num2);
  }
}

void Checker::fast_mode() {
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

void Checker::localize(size_t k, size_t col0) {
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
    refine_vjp(c, n, col, col2, n2);
  }
}

void Checker::classify_kinks() {
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
  std::vector<GradcheckFailure> kept;
  std::vector<int64_t> keep_cols;
  for (size_t i = 0; i < report_.failures.size(); ++i) {
    const int64_t c = failure_cols_[i];
    if (c >= 0 && std::find(kink_cols.begin(), kink_cols.end(), c) != kink_cols.end()) continue;
    kept.push_back(report_.failures[i]);
    keep_cols.push_back(c);
  }
  // A fast-mode product over a kink says nothing either.
  if (fast_) {
    std::vector<GradcheckFailure> k2;
    for (auto& f : kept)
      if (f.check != "fast" || std::none_of(report_.kinks.begin(), report_.kinks.end(),
                                            [&](const Kink& kk) { return kk.input == f.input; }))
        k2.push_back(f);
    kept = std::move(k2);
  }
  report_.failures = std::move(kept);
  failure_cols_ = std::move(keep_cols);
}

}  // namespace gradlab::testing::gradcheck_detail
