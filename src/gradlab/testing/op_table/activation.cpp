// Op-table rows of ops/activation.cpp: elu, selu, celu, silu, mish, hardtanh, relu6, log_sigmoid,
// hardswish, hardsigmoid, glu, threshold, prelu, and the in-place forms (relu_, ..., written into
// a non-leaf copy x * 1.0, so the graph is rebased). References are scalar formulas in double.

#include <algorithm>
#include <cmath>

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

double elu_ref(double x, double a, double s, double is) { return x > 0 ? s * x : s * a * std::expm1(is * x); }
double clamp_d(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }

// A one-input activation with real parameters drawn from `params` (each a list of choices);
// x keeps away from the kinks that `kinks(p)` names.
using Params = std::vector<std::pair<std::string, std::vector<double>>>;
template <class Op, class Ref, class Kinks>
OpSpec param_row(std::string name, Params params, Kinks kinks, Op op, Ref ref, double lo = -3,
                 double hi = 3) {
  const std::string nm = name;
  return row(
      name, 1, "x: away from the kinks", "any shape; " + std::to_string(params.size()) + " parameters",
      [=](Draw& d) {
        OpParams p;
        for (const auto& [k, choices] : params) p.set(k, d.choose(choices));
        Tensor x = d.values(d.shape(), Domain::away_from(kinks(p), 0.1, lo, hi));
        return make({x}, p, nm + "(x " + sh(x) + ", " + p.str() + ")");
      },
      [op](const TensorList& in, const OpParams& p) { return TensorList{op(in[0], p)}; },
      [ref](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [&](double x) { return ref(x, p); })};
      });
}

// The in-place twin of a row: y = x * 1.0; f_(y); y.
template <class Op, class Ref, class Kinks>
OpSpec inplace_row(std::string name, Params params, Kinks kinks, Op op_, Ref ref, double lo = -3,
                   double hi = 3) {
  return param_row(
      std::move(name), std::move(params), kinks,
      [op_](const Tensor& x, const OpParams& p) {
        Tensor y = x * 1.0;  // a non-leaf copy that may be written
        op_(y, p);
        return y;
      },
      ref, lo, hi);
}

}  // namespace

void add_activation_rows(std::vector<OpSpec>& t) {
  const auto at0 = [](const OpParams&) { return std::vector<double>{0.0}; };
  const Params elu_p{{"alpha", {1.0, 0.5, 2.0}}, {"scale", {1.0, 1.5}}, {"input_scale", {1.0, 0.5}}};
  const Params celu_p{{"alpha", {1.0, 0.5, 2.0}}};
  const Params ht_p{{"min_val", {-1.0, -0.5}}, {"max_val", {1.0, 0.7}}};
  const Params th_p{{"threshold", {0.3, -0.6}}, {"value", {-2.0, 0.5}}};
  const Params leaky_p{{"negative_slope", {0.01, 0.2}}};
  const auto ht_kinks = [](const OpParams& p) { return std::vector<double>{p.real("min_val"), p.real("max_val")}; };
  const auto th_kinks = [](const OpParams& p) { return std::vector<double>{p.real("threshold")}; };

  t.push_back(param_row(
      "elu", elu_p, at0,
      [](const Tensor& x, const OpParams& p) {
        return elu(x, p.real("alpha"), p.real("scale"), p.real("input_scale"));
      },
      [](double x, const OpParams& p) {
        return elu_ref(x, p.real("alpha"), p.real("scale"), p.real("input_scale"));
      }));
  t.push_back(unary(
      "selu", selu, [](double x) { return elu_ref(x, kSeluAlpha, kSeluScale, 1.0); }, Domain::away_from({0.0}, 0.1, -3, 3)));
  t.push_back(param_row(
      "celu", celu_p, at0, [](const Tensor& x, const OpParams& p) { return celu(x, p.real("alpha")); },
      [](double x, const OpParams& p) { return elu_ref(x, p.real("alpha"), 1.0, 1.0 / p.real("alpha")); }));
  t.push_back(unary(
      "silu", silu, [](double x) { return x / (1 + std::exp(-x)); }, Domain::any(-4, 4), true));
  t.push_back(unary(
      "mish", mish, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, Domain::any(-4, 4), true));
  t.push_back(param_row(
      "hardtanh", ht_p, ht_kinks,
      [](const Tensor& x, const OpParams& p) { return hardtanh(x, p.real("min_val"), p.real("max_val")); },
      [](double x, const OpParams& p) { return clamp_d(x, p.real("min_val"), p.real("max_val")); }));
  t.push_back(unary(
      "relu6", relu6, [](double x) { return clamp_d(x, 0.0, 6.0); }, Domain::away_from({0.0, 6.0}, 0.1, -2, 8)));
  // log σ(x), written both ways so neither exp overflows
  t.push_back(unary(
      "log_sigmoid", log_sigmoid,
      [](double x) { return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)); },
      Domain::any(-6, 6), true));
  t.push_back(unary(
      "hardswish", hardswish, [](double x) { return x * clamp_d(x + 3, 0, 6) / 6; },
      Domain::away_from({-3.0, 3.0}, 0.1, -5, 5)));
  t.push_back(unary(
      "hardsigmoid", hardsigmoid, [](double x) { return clamp_d(x + 3, 0, 6) / 6; },
      Domain::away_from({-3.0, 3.0}, 0.1, -5, 5)));
  const Params shrink_p{{"lambd", {0.5, 0.3, 1.2}}};
  const auto shrink_kinks = [](const OpParams& p) { return std::vector<double>{-p.real("lambd"), p.real("lambd")}; };
  t.push_back(param_row(
      "hardshrink", shrink_p, shrink_kinks,
      [](const Tensor& x, const OpParams& p) { return hardshrink(x, p.real("lambd")); },
      [](double x, const OpParams& p) { return std::abs(x) > p.real("lambd") ? x : 0.0; }));
  t.push_back(param_row(
      "softshrink", shrink_p, shrink_kinks,
      [](const Tensor& x, const OpParams& p) { return softshrink(x, p.real("lambd")); },
      [](double x, const OpParams& p) {
        const double l = p.real("lambd");
        return x > l ? x - l : x < -l ? x + l : 0.0;
      }));
  t.push_back(param_row(
      "threshold", th_p, th_kinks,
      [](const Tensor& x, const OpParams& p) { return threshold(x, p.real("threshold"), p.real("value")); },
      [](double x, const OpParams& p) { return x > p.real("threshold") ? x : p.real("value"); }));

  // glu(x, dim): dim of even size 2h; out = x[..h) * σ(x[h..))
  t.push_back(row(
      "glu", 1, "x: any", "rank 1-4 with an even size along dim",
      [](Draw& d) {
        Shape s = d.shape(1, 4, 4);
        const int64_t dim = d.integer(0, static_cast<int64_t>(s.size()) - 1);
        s[static_cast<size_t>(dim)] = 2 * d.integer(1, 2);
        Tensor x = d.values(s, Domain::any(-3, 3));
        const int64_t given = d.boolean() ? dim - static_cast<int64_t>(s.size()) : dim;  // negative dims too
        return make({x}, OpParams().set("dim", given), "glu(x " + sh(x) + ", " + std::to_string(given) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{glu(in[0], p.integer("dim"))}; },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap_dim(p.integer("dim"), in[0].dim(), "glu reference");
        const int64_t h = in[0].size(d) / 2;
        NoGradGuard ng;
        Tensor a = in[0].narrow(d, 0, h).contiguous(), b = in[0].narrow(d, h, h).contiguous();
        return TensorList{map2(a, b, [](double u, double v) { return u / (1 + std::exp(-v)); })};
      }));

  // prelu(x, w): x [N, C, ...] with w [C], or any x with w [1]
  t.push_back(row(
      "prelu", 2, "x: away from 0; weight: any", "x rank 2-4 with weight [C = x.size(1)], or any x with weight [1]",
      [](Draw& d) {
        const bool per_channel = d.boolean();
        Shape s = d.shape(per_channel ? 2 : 0, 4, 4);
        Tensor x = d.values(s, Domain::away_from({0.0}));
        Tensor w = d.values({per_channel ? s[1] : 1}, Domain::any(-1, 1), false);
        return make({x, w}, {}, "prelu(x " + sh(x) + ", weight " + sh(w) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{prelu(in[0], in[1])}; },
      [](const TensorList& in, const OpParams&) {
        const Shape& s = in[0].sizes();
        const Vec vx = V(in[0]), vw = V(in[1]);
        int64_t inner = 1;
        for (size_t k = 2; k < s.size(); ++k) inner *= s[k];
        const int64_t C = static_cast<int64_t>(vw.size());
        Vec r(vx.size());
        for (size_t i = 0; i < r.size(); ++i) {
          const double w = C == 1 ? vw[0] : vw[static_cast<size_t>((static_cast<int64_t>(i) / inner) % C)];
          r[i] = vx[i] > 0 ? vx[i] : w * vx[i];
        }
        return TensorList{T(r, s)};
      }));

  // ---- in place ----------------------------------------------------------------------------------
  t.push_back(inplace_row(
      "relu_", {}, at0, [](const Tensor& y, const OpParams&) { relu_(y); },
      [](double x, const OpParams&) { return std::max(x, 0.0); }));
  t.push_back(inplace_row(
      "leaky_relu_", leaky_p, at0,
      [](const Tensor& y, const OpParams& p) { leaky_relu_(y, p.real("negative_slope")); },
      [](double x, const OpParams& p) { return x > 0 ? x : p.real("negative_slope") * x; }));
  t.push_back(inplace_row(
      "elu_", elu_p, at0,
      [](const Tensor& y, const OpParams& p) { elu_(y, p.real("alpha"), p.real("scale"), p.real("input_scale")); },
      [](double x, const OpParams& p) {
        return elu_ref(x, p.real("alpha"), p.real("scale"), p.real("input_scale"));
      }));
  t.push_back(inplace_row(
      "selu_", {}, at0, [](const Tensor& y, const OpParams&) { selu_(y); },
      [](double x, const OpParams&) { return elu_ref(x, kSeluAlpha, kSeluScale, 1.0); }));
  t.push_back(inplace_row(
      "celu_", celu_p, at0, [](const Tensor& y, const OpParams& p) { celu_(y, p.real("alpha")); },
      [](double x, const OpParams& p) { return elu_ref(x, p.real("alpha"), 1.0, 1.0 / p.real("alpha")); }));
  t.push_back(inplace_row(
      "hardtanh_", ht_p, ht_kinks,
      [](const Tensor& y, const OpParams& p) { hardtanh_(y, p.real("min_val"), p.real("max_val")); },
      [](double x, const OpParams& p) { return clamp_d(x, p.real("min_val"), p.real("max_val")); }));
  t.push_back(inplace_row(
      "relu6_", {}, [](const OpParams&) { return std::vector<double>{0.0, 6.0}; },
      [](const Tensor& y, const OpParams&) { relu6_(y); },
      [](double x, const OpParams&) { return clamp_d(x, 0.0, 6.0); }, -2, 8));
  t.push_back(inplace_row(
      "threshold_", th_p, th_kinks,
      [](const Tensor& y, const OpParams& p) { threshold_(y, p.real("threshold"), p.real("value")); },
      [](double x, const OpParams& p) { return x > p.real("threshold") ? x : p.real("value"); }));
}

}  // namespace gradlab::testing::table
