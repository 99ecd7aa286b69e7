#pragma once
// Internal to the op table: what its family files (op_table/<family>.cpp, mirroring ops/) share —
// the plain-loop reference helpers, the sampling helpers and the row builders — and the function
// by which each family adds its rows. Not a public header: tests and users include
// gradlab/testing/op_table.hpp.

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"
#include "gradlab/testing/op_table.hpp"

namespace gradlab::testing::table {

// ---- the families, in table order (op_table() calls them) -----------------------------------

void add_elementwise_rows(std::vector<OpSpec>& t);  // elementwise.cpp
void add_reduce_rows(std::vector<OpSpec>& t);       // reduce.cpp
void add_linalg_rows(std::vector<OpSpec>& t);       // linalg.cpp
void add_shape_rows(std::vector<OpSpec>& t);        // shape.cpp
void add_index_rows(std::vector<OpSpec>& t);        // index.cpp
void add_loss_rows(std::vector<OpSpec>& t);         // loss.cpp: the softmax family and losses
void add_inplace_rows(std::vector<OpSpec>& t);      // inplace.cpp
void add_nn_rows(std::vector<OpSpec>& t);           // nn_ops.cpp
void add_resample_rows(std::vector<OpSpec>& t);     // resample.cpp: pooling, upsampling, group_norm
void add_rnn_rows(std::vector<OpSpec>& t);          // rnn.cpp: the recurrent cells
void add_pool_pad_rows(std::vector<OpSpec>& t);     // pool_pad.cpp: 1-D pools, pixel shuffle, edge pads
void add_activation_rows(std::vector<OpSpec>& t);   // activation.cpp: elu, selu, ..., prelu, relu_, ...

// ---- references: plain loops over row-major values -------------------------------------------

using Vec = std::vector<double>;

inline TensorOptions f64() { return TensorOptions().dtype(kFloat64); }
inline Tensor T(const Vec& v, const Shape& s) { return from_vector(v, s, f64()); }
inline Vec V(const Tensor& t) { return t.to_vector<double>(); }

inline int64_t flat_of(const Shape& coords, const Shape& shape) {
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + coords[k];
  return f;
}

// Index into a tensor of `shape` broadcast to `out` at out-coordinates `c`.
inline int64_t bcast_flat(const Shape& c, const Shape& shape, const Shape& out) {
  const size_t lead = out.size() - shape.size();
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + (shape[k] == 1 ? 0 : c[k + lead]);
  return f;
}

template <class F>
Tensor map1(const Tensor& x, F f) {
  Vec v = V(x);
  for (double& e : v) e = f(e);
  return T(v, x.sizes());
}

template <class F>
Tensor map2(const Tensor& a, const Tensor& b, F f) {
  const Shape out = broadcast_shapes(a.sizes(), b.sizes(), "reference");
  Vec va = V(a), vb = V(b), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out);
    r[i] = f(va[bcast_flat(c, a.sizes(), out)], vb[bcast_flat(c, b.sizes(), out)]);
  }
  return T(r, out);
}

inline Tensor expand_ref(const Tensor& x, const Shape& out) {
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = v[bcast_flat(unravel_index(static_cast<int64_t>(i), out), x.sizes(), out)];
  return T(r, out);
}

inline Tensor permute_ref(const Tensor& x, const Dims& perm) {
  Shape out;
  for (auto p : perm) out.push_back(x.sizes()[p < 0 ? p + x.dim() : p]);
  Vec v = V(x), r(v.size());
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out), src(c.size());
    for (size_t k = 0; k < perm.size(); ++k) src[perm[k] < 0 ? perm[k] + x.dim() : perm[k]] = c[k];
    r[i] = v[flat_of(src, x.sizes())];
  }
  return T(r, out);
}

// Composite: (a[..., :, :, None] * b[..., None, :, :]).sum(-2), built from mul and sum.
inline Tensor matmul_ref(const Tensor& a, const Tensor& b) {
  Tensor A = a.dim() == 1 ? a.unsqueeze(0) : a, B = b.dim() == 1 ? b.unsqueeze(1) : b;
  Tensor c = mul(A.unsqueeze(-1), B.unsqueeze(-3)).sum({-2});
  if (a.dim() == 1) c = c.squeeze(-2);
  if (b.dim() == 1) c = c.squeeze(-1);
  return c.detach();
}

// The reference of a binary op g(a, b): on a broadcast pair, or with b the case's "scalar".
template <class G>
OpFn binary_ref(G g) {
  return [g](const TensorList& in, const OpParams& p) {
    if (p.has("scalar")) {
      const double c = p.real("scalar");
      return TensorList{map1(in[0], [&](double a) { return g(a, c); })};
    }
    return TensorList{map2(in[0], in[1], g)};
  };
}

inline Tensor clamp_ref(const Tensor& x, double lo, double hi) {
  return map1(x, [=](double v) { return std::min(std::max(v, lo), hi); });
}

// x with `value` where the mask (broadcast to x) is set.
inline Tensor masked_fill_ref(const Tensor& x, const Tensor& mask, double value) {
  Vec m = V(expand_ref(mask.to(kFloat64), x.sizes())), v = V(x);
  for (size_t i = 0; i < v.size(); ++i)
    if (m[i] != 0) v[i] = value;
  return T(v, x.sizes());
}

inline double sum_of(const Vec& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
inline double max_of(const Vec& g) { return *std::max_element(g.begin(), g.end()); }
inline double lse_of(const Vec& g) {
  const double m = max_of(g);
  double s = 0;
  for (double e : g) s += std::exp(e - m);
  return m + std::log(s);
}

// ---- sampling helpers ------------------------------------------------------------------------

inline std::string sh(const Tensor& t) { return shape_str(t.sizes()); }

inline std::string args(const TensorList& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + sh(ts[i]);
  return s;
}

inline OpCase make(TensorList in, OpParams p, std::string describe) {
  return {std::move(in), std::move(p), std::move(describe)};
}

// A dim of a tensor of `rank` (maybe negative; a 0-d tensor takes 0 and -1).
inline int64_t draw_dim(Draw& d, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  return d.integer(-r, r - 1);
}
inline int64_t wrap(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

// ---- rows ------------------------------------------------------------------------------------

using Sampler = std::function<OpCase(Draw&)>;

// `f` with the row's name on its parameters (a missing parameter's error then names the row).
inline OpFn named(const std::string& name, OpFn f) {
  if (!f) return f;
  return [name, f = std::move(f)](const TensorList& in, const OpParams& p) {
    if (p.row() == name) return f(in, p);
    OpParams q = p;
    return f(in, q.row(name));
  };
}

inline OpSpec row(std::string name, int arity, std::string domain, std::string shapes,
                  Sampler sample, OpFn op, OpFn reference = {}) {
  OpSpec s;
  s.name = name;
  s.arity = arity;
  s.domain = std::move(domain);
  s.shapes = std::move(shapes);
  s.sample = [name, sample = std::move(sample)](Draw& d) {
    OpCase c = sample(d);
    c.params.row(name);
    return c;
  };
  s.op = named(name, std::move(op));
  s.reference = named(name, std::move(reference));
  return s;
}

// Elementwise unary op f with its scalar reference g, on values in `dom`.
inline OpSpec unary(std::string name, Tensor (*f)(const Tensor&, Site), double (*g)(double),
                    Domain dom, bool composable = false) {
  const std::string nm = name;
  OpSpec s = row(
      name, 1, "x: " + dom.label, "any shape (rank 0-4)",
      [dom, nm](Draw& d) {
        Tensor x = d.values(d.shape(), dom);
        return make({x}, {}, nm + "(x " + sh(x) + ")");
      },
      [f](const TensorList& in, const OpParams&) { return TensorList{f(in[0], Site::current())}; },
      [g](const TensorList& in, const OpParams&) { return TensorList{map1(in[0], g)}; });
  s.composable = composable;
  return s;
}

inline OpSpec with_tol(OpSpec s, std::optional<double> eps, std::optional<double> atol,
                       std::optional<double> rtol) {
  s.eps = eps;
  s.atol = atol;
  s.rtol = rtol;
  return s;
}

}  // namespace gradlab::testing::table
