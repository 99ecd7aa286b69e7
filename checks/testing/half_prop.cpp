// float16 / bfloat16 against float32, over the op table: every row runs on the same inputs in a
// half type and in float32, forward and backward (gradcheck itself stays float64: half types
// are far too coarse for finite differences).
//
// The inputs are drawn in float64 and rounded once to the half type h; the float32 and float64
// runs get those very values (widened exactly), so any difference comes from the ops' roundings.
// Stated tolerance, for the output and for each input's gradient, element by element:
//
//     |y_h - y_32| <= k * (u_h * (|y_32| + max |y_32| + s) + eta_h) + |y_32 - y_64|
//
// u_h = 2^-11 (float16) or 2^-8 (bfloat16), the unit roundoff, and eta_h = 2^-25 (float16) or
// 2^-134 (bfloat16), half the smallest subnormal: one rounding of the result is at most
// u_h |y| + eta_h (the standard model with underflow: below float16's smallest normal, 6.1e-5,
// the spacing is a fixed 2^-24, so a product of 1e-6 keeps only a few bits). k = 8 covers a composite op of a few primitives (each rounds once in h).
// The max |y| term and s, the largest |input| for outputs and the largest |upstream gradient|
// for gradients, absorb the absolute error that cancellation leaves where terms of that size
// nearly cancel (x - mean(x), softmax - one_hot, 1 + erf(x) for x < 0). The last term
// is float32's own error, measured against float64: where the exact value is 0 (a gradient
// that cancels), float32 rounding noise must not count against the half run. Rows that need a
// larger k, and why, are listed in wider() (an in-place row op_ takes op's); the half run must
// return h (or what float32 does when an operand promotes past float32).

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "prop_support.hpp"

namespace {

using namespace proptest;

// Rows whose error amplification is larger than one rounding per primitive, with the reason.
const std::map<std::string, std::pair<double, const char*>>& wider() {
  static const std::map<std::string, std::pair<double, const char*>> m = {
      {"var", {32, "x - mean(x) cancels: the rounding of the mean is amplified by |x| / |x - mean|"}},
      {"std", {32, "as var, then a square root"}},
      {"pow", {64, "x^y with y up to 2 in the domain: relative error scales with |y log x|"}},
      {"tanh", {32, "the backward 1 - y^2 cancels for |y| near 1 (y already rounded to h)"}},
      {"sigmoid", {32, "the backward y (1 - y) cancels for y near 1"}},
      {"softmax", {128, "the backward y (dy - sum(dy y)) cancels; every piece is rounded in h"}},
      {"log_softmax", {64, "x - logsumexp(x), and its backward dy - softmax sum(dy): cancellations"}},
      {"cross_entropy_loss", {32, "logsumexp - x_t: a difference of rounded terms"}},
      {"nll_loss", {16, "a mean of rounded terms"}},
      {"binary_cross_entropy_with_logits", {64, "max(x,0) - x y + log(1 + exp(-|x|)): terms cancel"}},
      {"logsumexp", {16, "log of a rounded sum"}},
      {"norm", {16, "a rounded sum of rounded powers, then a root"}},
      {"div", {16, "the backward -dy a / b^2 rounds three times"}},
      {"softplus", {16, "log(1 + exp(x)) rounds the exp before the log"}},
      {"gelu", {32, "0.5 x (1 + erf(x / sqrt 2)): four primitives, and 1 + erf cancels for x < 0"}},
      {"linear", {16, "x W^T + b: the product is rounded, then the bias add rounds again"}},
  };
  return m;
}

// Rows left out, and why.
const std::map<std::string, const char*>& skipped_rows() {
  static const std::map<std::string, const char*> m = {
      {"to", "a conversion to the dtype it is given, not a half computation"},
      // The sampler draws groups of 2 values that may nearly tie: 1 / sigma then amplifies
      // the half rounding of x without bound. autocast runs both in float32 (PyTorch's policy).
      {"batch_norm", "ill-conditioned in half for nearly equal values (autocast: float32)"},
      {"layer_norm", "ill-conditioned in half for nearly equal values (autocast: float32)"},
      {"group_norm", "ill-conditioned in half for nearly equal values (autocast: float32)"},
      {"instance_norm", "group_norm with one channel per group: ill-conditioned in half as group_norm"},
      // A sum of products near 0 can change sign when rounded to half: relu's kink then moves.
      {"rnn_relu_cell", "relu of a sum that may round across 0 in half (the relu row draws away from 0)"},
  };
  return m;
}
bool skipped(const std::string& row) { return skipped_rows().count(row) > 0; }

// k for a row: its wider() entry; an in-place row "op_" without one computes op's formula into
// self, so it gets op's (div_ rounds -dy a / b^2 three times as div does); otherwise 8.
double bound_factor(const std::string& row) {
  auto w = wider().find(row);
  if (w == wider().end() && row.size() > 1 && row.back() == '_') w = wider().find(row.substr(0, row.size() - 1));
  return w == wider().end() ? 8.0 : w->second.first;
}

double unit_roundoff(ScalarType h) { return h == kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }
// The absolute error of one rounding into the subnormal range: half the smallest subnormal.
double underflow_unit(ScalarType h) { return h == kFloat16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -134); }

// %.6g: std::to_string's fixed 6 decimals print a float16 gradient of 1e-6 as 0.000001.
std::string g6(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// The largest violation of the stated bound (<= 1 passes), and where.
struct Verdict {
  double ratio = 0;
  std::string where;
};
double max_abs(const TensorList& ts) {
  double m = 0;
  for (const Tensor& t : ts)
    if (t.defined() && t.is_floating_point() && t.numel() > 0)
      for (double x : t.to(kFloat64).to_vector<double>())
        if (std::isfinite(x)) m = std::max(m, std::abs(x));
  return m;
}

void compare(const Tensor& h, const Tensor& f, const Tensor& exact, double k, double u, double eta, double s,
             const std::string& what, Verdict& v) {
  const std::vector<double> a = h.to(kFloat64).to_vector<double>(), b = f.to(kFloat64).to_vector<double>(),
                            e = exact.to(kFloat64).to_vector<double>();
  double mx = 0;
  for (double x : b)
    if (std::isfinite(x)) mx = std::max(mx, std::abs(x));
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i]) && std::isnan(a[i])) continue;
    const double bound = k * (u * (std::abs(b[i]) + mx + s) + eta) + (std::isfinite(e[i]) ? std::abs(b[i] - e[i]) : 0.0);
    const double err = std::abs(a[i] - b[i]);
    const double r = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
    if (!(r <= v.ratio)) {
      v.ratio = std::isnan(r) ? INFINITY : r;
      v.where = what + "[" + std::to_string(i) + "]: " + g6(a[i]) + " vs float32 " + g6(b[i]) + " (bound " + g6(bound) + ")";
    }
  }
}

void half_parity_property(const OpSpec& spec, ScalarType h) {
  rcgen::RcDraw d(true, 4);
  const OpCase c = spec.sample(d);
  const double k = bound_factor(spec.name), u = unit_roundoff(h), eta = underflow_unit(h);
  // Inputs rounded to h once; the float32 copies hold the same values.
  TensorList in_h, in_f, in_d;
  for (const Tensor& t : c.inputs) {
    if (t.defined() && t.is_floating_point()) {
      Tensor r = t.to(h);
      in_h.push_back(r.detach().requires_grad_(true));
      in_f.push_back(r.to(kFloat32).detach().requires_grad_(true));
      in_d.push_back(r.to(kFloat64).detach().requires_grad_(true));
    } else {
      in_h.push_back(t);
      in_f.push_back(t);
      in_d.push_back(t);
    }
  }
  const TensorList out_h = spec.op(in_h, c.params), out_f = spec.op(in_f, c.params), out_d = spec.op(in_d, c.params);
  RC_ASSERT(out_h.size() == out_f.size());
  Verdict v;
  TensorList ys_h, ys_f, ys_d, us_h, us_f, us_d;
  for (size_t i = 0; i < out_h.size(); ++i) {
    if (!out_h[i].defined() || !out_h[i].is_floating_point()) continue;
    // h itself, unless an operand of the op promotes past float32 (a float64 0-d scalar beside a
    // 0-d input): then what the float32 run returns.
    const ScalarType want = out_f[i].dtype() == kFloat32 ? h : out_f[i].dtype();
    if (out_h[i].dtype() != want)
      RC_FAIL("[half:dtype] " + spec.name + " on " + to_string(h) + " inputs returned " + to_string(out_h[i].dtype()) +
              ": " + c.describe + "\n  reproduce: " + reproduce_command());
    compare(out_h[i], out_f[i], out_d[i], k, u, eta, max_abs(in_f), "output " + std::to_string(i), v);
    if (!out_h[i].requires_grad()) continue;
    Tensor up = d.values(out_h[i].sizes(), Domain::any(-1, 1), false).to(h);
    ys_h.push_back(out_h[i]);
    ys_f.push_back(out_f[i]);
    ys_d.push_back(out_d[i]);
    us_h.push_back(up.to(out_h[i].dtype()));
    us_f.push_back(up.to(out_f[i].dtype()));
    us_d.push_back(up.to(kFloat64));
  }
  if (!ys_h.empty()) {
    TensorList xs_h, xs_f, xs_d;
    for (size_t i = 0; i < in_h.size(); ++i)
      if (in_h[i].defined() && in_h[i].requires_grad()) {
        xs_h.push_back(in_h[i]);
        xs_f.push_back(in_f[i]);
        xs_d.push_back(in_d[i]);
      }
    const TensorList g_h = autograd::grad(ys_h, xs_h, us_h, std::nullopt, false, /*allow_unused=*/true);
    const TensorList g_f = autograd::grad(ys_f, xs_f, us_f, std::nullopt, false, /*allow_unused=*/true);
    const TensorList g_d = autograd::grad(ys_d, xs_d, us_d, std::nullopt, false, /*allow_unused=*/true);
    for (size_t i = 0; i < g_h.size(); ++i) {
      RC_ASSERT(g_h[i].defined() == g_f[i].defined());
      if (!g_h[i].defined()) continue;
      if (g_h[i].dtype() != h)
        RC_FAIL("[half:dtype] the gradient of " + spec.name + " input " + std::to_string(i) + " is " +
                to_string(g_h[i].dtype()) + ", expected " + to_string(h) + "\n  reproduce: " + reproduce_command());
      compare(g_h[i], g_f[i], g_d[i], k, u, eta, max_abs(us_f), "grad of input " + std::to_string(i), v);
    }
  }
  if (v.ratio > 1)
    RC_FAIL("[half:parity] " + spec.name + " in " + to_string(h) + ": " + c.describe + "\n  " + v.where +
            " is " + g6(v.ratio) + "x the bound " + g6(k) + " (u (|y| + max|y| + s) + eta) + |y32 - y64|, u = " + g6(u) +
            ", eta = " + g6(eta) + "\n  reproduce: " + reproduce_command());
}

std::vector<std::string> all_rows() {
  std::vector<std::string> r;
  for (const auto& s : op_table())
    if (!skipped(s.name)) r.push_back(s.name);
  return r;
}

// A key of wider() or skipped() that names no row would silently leave that row at the default
// bound (a renamed row once did).
TEST(HalfParity, EveryWidenedOrSkippedKeyNamesARow) {
  std::set<std::string> rows;
  for (const auto& s : op_table()) rows.insert(s.name);
  for (const auto& [name, why] : wider()) EXPECT_TRUE(rows.count(name)) << "wider(): no row '" << name << "'";
  for (const auto& [name, why] : skipped_rows()) EXPECT_TRUE(rows.count(name)) << "skipped(): no row '" << name << "'";
}

// One test per row (both half types: a test process costs more than its cases). The quick run
// (30 cases per type) is part of the normal suite; HalfParitySlow runs 300 (ctest label slow).
class HalfParity : public ::testing::TestWithParam<std::string> {};
TEST_P(HalfParity, Float16AndBFloat16VsFloat32) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { half_parity_property(spec, kFloat16); }, 30);
  check_property([&] { half_parity_property(spec, kBFloat16); }, 30);
}
INSTANTIATE_TEST_SUITE_P(OpTable, HalfParity, ::testing::ValuesIn(all_rows()), row_param_name);

class HalfParitySlow : public ::testing::TestWithParam<std::string> {};
TEST_P(HalfParitySlow, Float16AndBFloat16VsFloat32) {
  const OpSpec& spec = op_spec(GetParam());
  check_property([&] { half_parity_property(spec, kFloat16); }, 300);
  check_property([&] { half_parity_property(spec, kBFloat16); }, 300);
}
INSTANTIATE_TEST_SUITE_P(OpTable, HalfParitySlow, ::testing::ValuesIn(all_rows()), row_param_name);

}  // namespace
