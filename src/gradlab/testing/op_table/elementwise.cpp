// Op-table rows of ops/elementwise.cpp: binary ops (a tensor or a number as the second operand),
// where, masked_fill, the unary maps, leaky_relu, softplus and clamp.

#include <numbers>

#include "gradlab/testing/op_table/support.hpp"

namespace gradlab::testing::table {

namespace {

// Elementwise binary op with broadcasting; a "scalar" parameter takes the place of b.
template <class FT, class FS, class G>
OpSpec binary(std::string name, FT ft, FS fs, G g, Domain da, Domain db, bool composable = false) {
  const std::string nm = name;
  OpSpec s = row(
      name, 2, "a: " + da.label + "; b: " + db.label, "broadcast pair, or a tensor and a number",
      [=](Draw& d) {
        if (d.integer(0, 3) == 0) {
          Tensor a = d.values(d.shape(), da);
          const double c = db.project(d.choose(std::vector<double>{1.5, -0.75, 2.0, 0.5}));
          return make({a}, OpParams().set("scalar", c),
                      nm + "(a " + sh(a) + ", " + std::to_string(c) + ")");
        }
        auto [sa, sb] = d.broadcast_pair();
        Tensor a = d.values(sa, da), b = d.values(sb, db);
        return make({a, b}, {}, nm + "(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [ft, fs](const TensorList& in, const OpParams& p) {
        return TensorList{p.has("scalar") ? fs(in[0], p.real("scalar")) : ft(in[0], in[1])};
      },
      binary_ref(g));
  s.composable = composable;
  return s;
}

// y = scalar - x or scalar / x.
template <class F, class G>
OpSpec reversed(std::string name, Domain dom, double c, F f, G g) {
  const std::string nm = name;
  return row(
      name, 1, "x: " + dom.label, "any shape; a number",
      [=](Draw& d) {
        Tensor x = d.values(d.shape(), dom);
        std::string cs = std::to_string(c);
        cs.erase(cs.find_last_not_of('0') + 1);  // "1.25", not "1.250000"
        return make({x}, OpParams().set("scalar", c), nm + "(x " + sh(x) + ", " + cs + ")");
      },
      [f](const TensorList& in, const OpParams& p) {
        return TensorList{f(in[0], p.real("scalar"))};
      },
      [g](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [c = p.real("scalar"), g](double x) { return g(c, x); })};
      });
}

Tensor scalar_like(double c, const Tensor& a) {
  return scalar_tensor(c, TensorOptions().dtype(kFloat64).device(a.device()));
}

}  // namespace

void add_elementwise_rows(std::vector<OpSpec>& t) {
  const Domain any = Domain::any(), pos = Domain::positive(), nz = Domain::nonzero();

  // ---- binary ----------------------------------------------------------------------------
  t.push_back(binary(
      "add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
      [](const Tensor& a, double c) { return add(a, c); }, [](double a, double b) { return a + b; },
      any, any, true));
  t.push_back(binary(
      "sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
      [](const Tensor& a, double c) { return sub(a, c); }, [](double a, double b) { return a - b; },
      any, any, true));
  t.push_back(binary(
      "mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
      [](const Tensor& a, double c) { return mul(a, c); }, [](double a, double b) { return a * b; },
      any, any, true));
  t.push_back(binary(
      "div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
      [](const Tensor& a, double c) { return div(a, c); }, [](double a, double b) { return a / b; },
      any, nz));
  t.push_back(reversed(
      "rsub", any, 1.25, [](const Tensor& x, double c) { return rsub(x, c); },
      [](double c, double x) { return c - x; }));
  t.push_back(reversed(
      "rdiv", nz, 1.5, [](const Tensor& x, double c) { return rdiv(x, c); },
      [](double c, double x) { return c / x; }));
  t.push_back(row(
      "pow", 2,
      "scalar exponent: base positive (integer exponent: any); tensor exponent: base positive",
      "any shape and a number, or a broadcast pair",
      [pos, any](Draw& d) {
        const int64_t form = d.integer(0, 2);  // 0: a real exponent, 1: an integer one, 2: a tensor
        if (form == 0) {
          const double e = d.choose(std::vector<double>{2.0, 3.0, 0.5, -1.0, 1.5, 0.0});
          Tensor x = d.values(d.shape(), pos);
          return make({x}, OpParams().set("exponent", e),
                      "pow(x " + sh(x) + ", " + std::to_string(e) + ")");
        }
        if (form == 1) {
          const int64_t e = d.choose(std::vector<int64_t>{2, 3});
          Tensor x = d.values(d.shape(), any);
          return make({x}, OpParams().set("exponent", e),
                      "pow(x " + sh(x) + ", " + std::to_string(e) + ")");
        }
        auto [sa, sb] = d.broadcast_pair();
        Tensor a = d.values(sa, pos), b = d.values(sb, any);
        return make({a, b}, {}, "pow(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        if (!p.has("exponent")) return TensorList{pow(in[0], in[1])};
        return TensorList{pow(in[0], p.is_integer("exponent") ? Scalar(p.integer("exponent"))
                                                              : Scalar(p.real("exponent")))};
      },
      [](const TensorList& in, const OpParams& p) {
        if (!p.has("exponent"))
          return TensorList{map2(in[0], in[1], [](double a, double b) { return std::pow(a, b); })};
        return TensorList{
            map1(in[0], [e = p.real("exponent")](double x) { return std::pow(x, e); })};
      }));
  t.push_back(binary(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
      [](const Tensor& a, double c) { return maximum(a, scalar_like(c, a)); },
      [](double a, double b) { return std::max(a, b); }, any.on_grid(0.2), any.on_grid(0.2, 0.1)));
  t.back().notes = "a and b on grids offset by 0.1: they never tie";
  t.push_back(binary(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
      [](const Tensor& a, double c) { return minimum(a, scalar_like(c, a)); },
      [](double a, double b) { return std::min(a, b); }, any.on_grid(0.2), any.on_grid(0.2, 0.1)));
  t.back().notes = "a and b on grids offset by 0.1: they never tie";
  t.push_back(binary(
      "logaddexp", [](const Tensor& a, const Tensor& b) { return logaddexp(a, b); },
      [](const Tensor& a, double c) { return logaddexp(a, scalar_like(c, a)); },
      [](double a, double b) { return std::max(a, b) + std::log1p(std::exp(-std::abs(a - b))); }, any, any));
  t.push_back(binary(
      "gelu_backward", [](const Tensor& a, const Tensor& b) { return gelu_backward(a, b); },
      [](const Tensor& a, double c) { return gelu_backward(a, scalar_like(c, a)); },
      [](double g, double x) {
        return g * (0.5 * std::erfc(-x / std::numbers::sqrt2) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi));
      },
      any, Domain::any(-3, 3)));
  t.back().notes = "a: the upstream gradient, b: x";
  // where(cond, input, other): "input" or "other" as a number takes the place of that tensor.
  t.push_back(row(
      "where", 2, "a, b: any; cond: bool",
      "broadcast pair; cond of the broadcast shape; or a number for a or b",
      [any](Draw& d) {
        const int64_t form = d.integer(0, 2);  // 0: two tensors, 1: other = 0.75, 2: input = -0.5
        auto [sa, sb] = d.broadcast_pair();
        const Shape out = broadcast_shapes(sa, sb, "where");
        Tensor c = d.mask(d.broadcastable_to(out));
        if (form == 1) {
          Tensor a = d.values(out, any);
          return make({c, a}, OpParams().set("other", 0.75),
                      "where(cond " + sh(c) + ", a " + sh(a) + ", 0.75)");
        }
        if (form == 2) {
          Tensor b = d.values(out, any);
          return make({c, b}, OpParams().set("input", -0.5),
                      "where(cond " + sh(c) + ", -0.5, b " + sh(b) + ")");
        }
        Tensor a = d.values(sa, any), b = d.values(sb, any);
        return make({c, a, b}, {}, "where(cond " + sh(c) + ", a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        if (p.has("other")) return TensorList{where(in[0], in[1], Scalar(p.real("other")))};
        if (p.has("input")) return TensorList{where(in[0], Scalar(p.real("input")), in[1])};
        return TensorList{where(in[0], in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor a = p.has("input") ? full(in[1].sizes(), p.real("input"), f64()) : in[1];
        Tensor b = p.has("other")   ? full(in[1].sizes(), p.real("other"), f64())
                   : p.has("input") ? in[1]
                                    : in[2];
        const Shape out =
            broadcast_shapes(broadcast_shapes(a.sizes(), b.sizes(), "ref"), in[0].sizes(), "ref");
        Tensor c = expand_ref(in[0].to(kFloat64), out);
        Vec vc = V(c), va = V(expand_ref(a, out)), vb = V(expand_ref(b, out)), r(vc.size());
        for (size_t i = 0; i < r.size(); ++i) r[i] = vc[i] != 0 ? va[i] : vb[i];
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "masked_fill", 1, "x: any; mask: bool", "x any shape; mask broadcastable to it",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        Tensor m = d.mask(d.broadcastable_to(x.sizes()));
        return make({x, m}, OpParams().set("value", 0.3),
                    "masked_fill(x " + sh(x) + ", mask " + sh(m) + ", 0.3)");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{masked_fill(in[0], in[1], p.real("value"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{masked_fill_ref(in[0], in[1], p.real("value"))};
      }));

  // ---- unary -----------------------------------------------------------------------------
  t.push_back(unary(
      "neg", neg, [](double x) { return -x; }, any, true));
  t.push_back(unary(
      "exp", exp, [](double x) { return std::exp(x); }, any, true));
  t.push_back(unary(
      "expm1", expm1, [](double x) { return std::expm1(x); }, any));
  t.push_back(unary(
      "log", log, [](double x) { return std::log(x); }, pos));
  t.push_back(unary(
      "sqrt", sqrt, [](double x) { return std::sqrt(x); }, pos));
  t.push_back(unary(
      "abs", abs, [](double x) { return std::abs(x); }, Domain::away_from({0.0})));
  t.push_back(unary(
      "sin", sin, [](double x) { return std::sin(x); }, Domain::any(-3, 3), true));
  t.push_back(unary(
      "cos", cos, [](double x) { return std::cos(x); }, Domain::any(-3, 3), true));
  t.push_back(unary(
      "tanh", tanh, [](double x) { return std::tanh(x); }, Domain::any(-3, 3), true));
  t.push_back(unary(
      "sigmoid", sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, Domain::any(-4, 4),
      true));
  t.push_back(unary(
      "erf", erf, [](double x) { return std::erf(x); }, Domain::any(-2.5, 2.5), true));
  t.push_back(unary(
      "relu", relu, [](double x) { return std::max(x, 0.0); }, Domain::away_from({0.0})));
  t.push_back(unary(
      "gelu", gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); },
      Domain::any(-3, 3), true));
  t.push_back(row(
      "leaky_relu", 1, "x: away from 0", "any shape; slope",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::away_from({0.0}));
        const double slope = d.choose(std::vector<double>{0.01, 0.2, -0.5});
        return make({x}, OpParams().set("negative_slope", slope),
                    "leaky_relu(x " + sh(x) + ", " + std::to_string(slope) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{leaky_relu(in[0], p.real("negative_slope"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{
            map1(in[0], [s = p.real("negative_slope")](double x) { return x > 0 ? x : s * x; })};
      }));
  // softplus(x, beta, threshold): beta x stays away from the threshold, where it turns into x.
  t.push_back(row(
      "softplus", 1, "x: away from threshold / beta", "any shape; beta and threshold",
      [](Draw& d) {
        const double beta = d.choose(std::vector<double>{1.0, 2.0, 0.5, -1.0}),
                     threshold = d.choose(std::vector<double>{20.0, 1.0});
        Tensor x = d.values(d.shape(), Domain::away_from({threshold / beta}, 0.1, -3, 3));
        OpParams p = OpParams().set("beta", beta).set("threshold", threshold);
        return make({x}, p, "softplus(x " + sh(x) + ", " + p.str() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{softplus(in[0], p.real("beta"), p.real("threshold"))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [b = p.real("beta"), t = p.real("threshold")](double x) {
          return b * x > t ? x : std::log1p(std::exp(b * x)) / b;
        })};
      }));
  // clamp(x, min, max) with both bounds, or only one ("min" / "max" left out).
  t.push_back(row(
      "clamp", 1, "x: away from the bounds", "any shape; min and/or max",
      [](Draw& d) {
        const int64_t form = d.integer(0, 2);  // 0: both, 1: min only, 2: max only
        const double lo = d.choose(std::vector<double>{-0.5, -1.0}),
                     hi = d.choose(std::vector<double>{0.7, 1.2});
        Tensor x = d.values(d.shape(), Domain::away_from({lo, hi}));
        OpParams p;
        if (form != 2) p.set("min", lo);
        if (form != 1) p.set("max", hi);
        return make({x}, p, "clamp(x " + sh(x) + ", " + p.str() + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        std::optional<Scalar> lo, hi;
        if (p.has("min")) lo = p.real("min");
        if (p.has("max")) hi = p.real("max");
        return TensorList{clamp(in[0], lo, hi)};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{clamp_ref(in[0], p.has("min") ? p.real("min") : -INFINITY,
                                    p.has("max") ? p.real("max") : INFINITY)};
      }));
}

}  // namespace gradlab::testing::table
