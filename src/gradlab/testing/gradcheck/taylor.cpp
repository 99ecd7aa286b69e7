// gradcheck's Taylor-remainder test. With L = uᵀfn (u the random upstream gradient) and v a
// random unit direction, r(h) = |L(x+hv) - L(x) - h ∇L·v|. A right gradient leaves
// r(h) ≈ |vᵀHv| h²/2 (order 2 as h halves); a wrong one r(h) ≈ |dv - ∇L·v| h (order 1), where dv
// is the true directional derivative. No relative tolerance is involved (a 0.5% wrong factor
// shows as order 1), but an order-1 trend whose slope |dv - ∇L·v| is within the absolute
// tolerance atol·max(Σ|u|, 1) is not a failure: it is what a function that rounds to a constant
// leaves (gelu(x) = 0.5 x (1 + erf(x/√2)) is -0 in float64 for x < -8.4 while its gradient there
// is not: about -2e-15 at -8.4, -2e-26 at -11: ComposedGraphSlow, seed 17690064307483740343).

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing::gradcheck_detail {

namespace {

// The Taylor test halves h from 1e-3 this many times at least, and at most (down to ~1e-12).
constexpr int kTaylorSteps = 7;
constexpr int kTaylorMaxSteps = 30;

}  // namespace

// One Taylor run: its direction, its reference and what the halving found.
struct Checker::TaylorRun {
  enum class Fit { Open, Pass, Fail, WithinAtol };

  std::vector<Vec> dir;     // the direction v, one vector per differentiable input
  double l0 = 0;            // L(x)
  double gv = 0;            // the analytic ∇L·v
  double noise = 0;         // the rounding floor of r(h)
  double dv_tol = 0;        // the tolerance of the directional derivative
  double abs_tol = 0;       // its absolute part, atol·max(Σ|u|, 1)
  double err1 = 0;          // |dv - ∇L·v|: what a wrong gradient leaves as r(h) / h
  std::vector<double> run;  // orders of consecutive remainders above the floor
  int64_t num_orders = 0, below = 0;
  double floor_h = 0;             // the first of two consecutive remainders below the floor
  double last_r = 0, last_h = 1;  // the last remainder above the floor
  Fit fit = Fit::Open;

  // Settled when the last w orders agree (within 0.6): at 2 or more a pass, at 1 with the slope
  // r/h of a wrong gradient a failure, unless that error is within the absolute tolerance.
  // `order` gets their median.
  Fit settle(size_t w, double& order) const {
    if (run.size() < w) return Fit::Open;
    std::vector<double> last(run.end() - static_cast<int64_t>(w), run.end());
    std::sort(last.begin(), last.end());
    if (last.back() - last.front() > 0.6) return Fit::Open;
    const double m = last[last.size() / 2];
    order = m;
    if (m >= 1.7) return Fit::Pass;
    const double slope = last_r / last_h;
    if (std::abs(m - 1) <= 0.3 && slope >= 0.5 * err1 && slope <= 2 * err1)
      return err1 <= abs_tol ? Fit::WithinAtol : Fit::Fail;
    return Fit::Open;
  }
};

void Checker::taylor() {
  if (!report_.kinks.empty()) {
    add_check("taylor", true, "skipped: non-differentiable points in the input");
    return;
  }
  report_.taylor.ran = true;
  TaylorRun tr;
  tr.dir = random_direction();
  size_t at = 0;
  for (const auto& d : tr.dir)
    for (double v : d) tr.gv += vjp_[at++] * v;
  tr.l0 = dot(u_, y0_);
  tr.noise = taylor_noise(tr);
  report_.taylor.noise = tr.noise;
  if (!taylor_reference(tr)) return;
  taylor_halve(tr);
  taylor_verdict(tr);
}

double Checker::taylor_noise(const TaylorRun& tr) {
  double scale = std::abs(tr.gv) * 1e-3;
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
    measured =
        std::max(measured, std::abs(dot(u_, eval_along(tr.dir, tiny)) - tr.l0 - tiny * tr.gv));
  return std::max(rel * std::max(scale, 1e-300), 4 * measured);
}

bool Checker::taylor_reference(TaylorRun& tr) {
  // If the central difference along v moves by more than the tolerance when eps halves, fn is
  // not resolved at eps along v, let alone at h >= 1e-3 / 2^k.
  double su = 0;
  for (double v : u_) su += std::abs(v);
  auto dv_at = [&](double h) {
    return (dot(u_, eval_along(tr.dir, h)) - dot(u_, eval_along(tr.dir, -h))) / (2 * h);
  };
  const double dv1 = dv_at(o_.eps_), dv2 = dv_at(o_.eps_ / 2), dv = (4 * dv2 - dv1) / 3;
  tr.abs_tol = o_.atol_ * std::max(su, 1.0);
  tr.dv_tol = tr.abs_tol + o_.rtol_ * std::abs(dv);
  if (!(std::abs(dv1 - dv2) <= tr.dv_tol)) {
    taylor_inconclusive(
        "the numeric estimate is unstable here: the directional differences along v "
        "at eps and eps/2 differ by " +
        sci(std::abs(dv1 - dv2)) + " > tolerance " + sci(tr.dv_tol) + " (analytic " + num(tr.gv) +
        ")");
    return false;
  }
  tr.err1 = std::abs(dv - tr.gv);
  return true;
}

void Checker::taylor_inconclusive(const std::string& why) {
  report_.taylor.inconclusive = true;
  report_.taylor.order = std::numeric_limits<double>::quiet_NaN();
  report_.checks.push_back({"taylor", true, true, "inconclusive: " + why});
}

void Checker::taylor_halve(TaylorRun& tr) {
  // Halve h until the last three orders agree (within 0.6) at 2 or more, or at 1 with the slope
  // of a wrong gradient; stop at two consecutive remainders below the floor.
  TaylorResult& t = report_.taylor;
  double h = 1e-3;
  for (int k = 0; k < kTaylorMaxSteps; ++k, h /= 2) {
    const double r = std::abs(dot(u_, eval_along(tr.dir, h)) - tr.l0 - h * tr.gv);
    const bool prev_above = !t.remainder.empty() && t.remainder.back() > tr.noise;
    t.h.push_back(h);
    t.remainder.push_back(r);
    if (!(r > tr.noise)) {
      if (++tr.below == 1) tr.floor_h = h;
      if (tr.below == 2) break;  // at rounding level: halving further only adds noise
      continue;
    }
    if (tr.below > 0) tr.run.clear();  // a new run starts after a remainder below the floor
    tr.below = 0;
    tr.last_r = r;
    tr.last_h = h;
    if (prev_above) {
      tr.run.push_back(std::log2(t.remainder[t.remainder.size() - 2] / r));
      ++tr.num_orders;
    }
    if (k >= kTaylorSteps - 1 && (tr.fit = tr.settle(3, t.order)) != TaylorRun::Fit::Open) break;
  }
  if (tr.fit == TaylorRun::Fit::Open && tr.run.size() >= 2)
    tr.fit = tr.settle(std::min<size_t>(tr.run.size(), 3), t.order);
}

void Checker::taylor_verdict(const TaylorRun& tr) {
  TaylorResult& t = report_.taylor;
  const bool open = tr.fit == TaylorRun::Fit::Open;
  // Below the floor F at h_f and h_f/2: |δh_f + c h_f²/2| <= F and |δh_f/2 + c h_f²/8| <= F, so
  // (4·second - first) |δ| <= 5F/h_f: the gradient along v is right to that bound. Without two
  // orders above the floor (fn linear along v, or its remainder at rounding level from the
  // start) that bound is all there is: within the tolerance a pass, else too few points.
  const double bound =
      tr.below == 2 ? 5 * tr.noise / tr.floor_h : std::numeric_limits<double>::infinity();
  if (open && tr.below == 2 && bound <= tr.dv_tol) {
    t.order = std::numeric_limits<double>::quiet_NaN();
    t.passed = true;
    add_check("taylor", true,
              (tr.num_orders < 2 ? std::string("remainder at rounding level ") + sci(tr.noise) +
                                       " from h = " + sci(tr.floor_h) + " (fn is linear along v)"
                                 : "the remainder reaches the rounding floor " + sci(tr.noise) +
                                       " at h = " + sci(tr.floor_h) + " and h/2") +
                  ": the gradient along v is right to " + sci(bound) + " <= tolerance " +
                  sci(tr.dv_tol));
    return;
  }
  if (open && tr.num_orders < 2) {
    taylor_inconclusive(
        "only " + std::to_string(tr.num_orders) +
        " halving(s) of h keep the remainder above the rounding floor " + sci(tr.noise) +
        " (too few to fit an order), and the floor bounds the error along v only by " + sci(bound) +
        " > tolerance " + sci(tr.dv_tol));
    return;
  }
  if (open) {
    std::string os;
    for (size_t k = 0; k < tr.run.size(); ++k) {
      // NOTE: not `(k ? " " : "") + fmt(...)`: GCC 12 warns about that insert (-Wrestrict).
      if (k) os += ' ';
      os += fmt("%.2f", tr.run[k]);
    }
    taylor_inconclusive(
        "the Taylor remainder does not settle at order 1 or 2 above the rounding floor " +
        sci(tr.noise) + " as h halves from 1e-03 to " + sci(t.h.back()) +
        (os.empty() ? std::string() : " (last orders " + os + ")"));
    return;
  }
  if (tr.fit == TaylorRun::Fit::WithinAtol) {
    t.passed = true;
    add_check("taylor", true,
              "Taylor remainder shrinks at order " + fmt("%.2f", t.order) +
                  ", but the gradient along v differs from the numeric one by only " +
                  sci(tr.err1) + " <= atol*max(sum|u|, 1) = " + sci(tr.abs_tol) +
                  " (fn rounds to a constant along v while its gradient is tiny, not zero)");
    return;
  }
  t.passed = tr.fit == TaylorRun::Fit::Pass;
  add_check("taylor", t.passed,
            "Taylor remainder |L(x+hv) - L(x) - h*grad.v| shrinks at order " +
                fmt("%.2f", t.order) + " as h halves from 1e-03 to " + sci(t.h.back()) +
                " (expected 2; order 1 means the gradient is wrong along a random direction v)");
}

}  // namespace gradlab::testing::gradcheck_detail
