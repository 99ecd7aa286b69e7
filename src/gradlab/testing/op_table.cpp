#include "gradlab/testing/op_table.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <set>
#include <sstream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::testing {

// ---- Domain -----------------------------------------------------------------------------------

Domain Domain::any(double lo, double hi) {
  Domain d;
  d.label = "any";
  d.lo = lo;
  d.hi = hi;
  return d;
}
Domain Domain::positive(double lo, double hi) {
  Domain d = any(lo, hi);
  d.label = "positive";
  return d;
}
Domain Domain::away_from(std::vector<double> kinks, double margin, double lo, double hi) {
  Domain d = any(lo, hi);
  std::ostringstream os;
  os << "away from kinks at";
  for (double k : kinks) os << " " << k;
  d.label = os.str();
  d.kinks = std::move(kinks);
  d.margin = margin;
  return d;
}
Domain Domain::nonzero(double min_abs, double hi) {
  Domain d = away_from({0.0}, min_abs, -hi, hi);
  d.label = "nonzero";
  return d;
}
Domain Domain::probability() {
  Domain d = any(0.05, 0.95);
  d.label = "probability";
  return d;
}
Domain Domain::distinct_values(double gap) const {
  Domain d = *this;
  d.distinct = gap;
  d.label += ", distinct";
  return d;
}
Domain Domain::on_grid(double step, double offset) const {
  Domain d = *this;
  d.grid = step;
  d.grid_offset = offset;
  d.label += ", on a grid";
  return d;
}

bool Domain::contains(double v) const {
  if (!(v >= lo && v <= hi)) return false;
  for (double k : kinks)
    if (std::abs(v - k) < margin) return false;
  if (grid > 0) {
    const double q = (v - grid_offset) / grid;
    if (std::abs(q - std::round(q)) > 1e-9) return false;
  }
  return true;
}

double Domain::project(double v) const {
  if (!std::isfinite(v)) v = 0.5 * (lo + hi);
  v = std::clamp(v, lo, hi);
  if (grid > 0) {
    v = grid_offset + grid * std::round((v - grid_offset) / grid);
    while (v > hi + 1e-12) v -= grid;
    while (v < lo - 1e-12) v += grid;
  }
  for (double k : kinks) {
    if (std::abs(v - k) >= margin) continue;
    double up = k + margin, down = k - margin;
    v = (v >= k ? (up <= hi ? up : down) : (down >= lo ? down : up));
  }
  return v;
}

void Domain::spread(std::vector<double>& values) const {
  if (distinct <= 0 || values.size() < 2) return;
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  for (size_t i = 1; i < order.size(); ++i) {
    double& v = values[order[i]];
    const double prev = values[order[i - 1]];
    if (v < prev + distinct) v = prev + distinct;
    // Skip over kinks that spreading would step into.
    for (double k : kinks)
      if (std::abs(v - k) < margin) v = k + margin;
  }
}

std::vector<double> Domain::simple_values() const {
  std::vector<double> out;
  for (double c : {0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.25, 1.5, -1.5}) {
    const double p = project(c);
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// ---- GeneratorDraw -----------------------------------------------------------------------------

namespace {
TensorOptions f64() { return TensorOptions().dtype(kFloat64); }
}  // namespace

Tensor make_layout(const std::vector<double>& vals, const Shape& shape, int64_t layout) {
  NoGradGuard ng;
  Tensor t = from_vector(vals, shape, f64());
  if (layout == 1 && shape.size() >= 2) {
    Tensor base = t.transpose(-1, -2).contiguous();  // storage in transposed order
    return base.transpose(-1, -2).detach();
  }
  if (layout == 2 && !shape.empty()) {
    Shape wide = shape;
    wide.back() *= 2;
    Tensor base = zeros(wide, f64());
    Tensor v = base.slice(-1, 0, wide.back(), 2);
    v.copy_(t);
    return v.detach();
  }
  return t;
}

int64_t GeneratorDraw::integer(int64_t lo, int64_t hi) {
  return hi <= lo ? lo : gen_.randint(lo, hi + 1);
}

Shape GeneratorDraw::shape(int64_t min_rank, int64_t max_rank, int64_t max_size) {
  const int64_t r = integer(min_rank, max_rank);
  Shape s;
  for (int64_t k = 0; k < r; ++k) s.push_back(integer(1, max_size));
  return s;
}

std::pair<Shape, Shape> GeneratorDraw::broadcast_pair(int64_t max_rank, int64_t max_size) {
  const Shape out = shape(0, max_rank, max_size);
  auto source = [&] {
    Shape s(out.begin() + integer(0, static_cast<int64_t>(out.size())), out.end());
    for (auto& v : s)
      if (integer(0, 2) == 0) v = 1;
    return s;
  };
  Shape a = source(), b = source();
  return {a, b};
}

std::pair<Shape, Shape> GeneratorDraw::matmul_pair(int64_t max_size) {
  const int64_t ra = integer(1, 4), rb = integer(1, 4);
  const int64_t m = integer(1, max_size), k = integer(1, max_size), n = integer(1, max_size);
  const Shape batch = shape(2, 2, 3);
  auto batch_of = [&](int64_t rank) {
    Shape s(batch.end() - std::max<int64_t>(rank - 2, 0), batch.end());
    for (auto& v : s)
      if (integer(0, 2) == 0) v = 1;
    return s;
  };
  Shape a = batch_of(ra), b = batch_of(rb);
  if (ra == 1)
    a = {k};
  else
    a.insert(a.end(), {m, k});
  if (rb == 1)
    b = {k};
  else
    b.insert(b.end(), {k, n});
  return {a, b};
}

Tensor GeneratorDraw::values(const Shape& shape, const Domain& domain, bool allow_views) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (double& x : v) x = domain.project(domain.lo + (domain.hi - domain.lo) * gen_.uniform());
  domain.spread(v);
  const int64_t layout = views_ && allow_views ? integer(0, 2) : 0;
  return make_layout(v, shape, layout);
}

Tensor GeneratorDraw::indices(const Shape& shape, int64_t high) {
  std::vector<int64_t> v(static_cast<size_t>(numel_of(shape)));
  for (auto& x : v) x = integer(0, high - 1);
  return from_vector(v, shape);
}

Tensor GeneratorDraw::mask(const Shape& shape) {
  std::vector<bool> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = integer(0, 1) == 1;
  return from_vector(v, shape);
}

// ---- OpSpec ------------------------------------------------------------------------------------

TensorFn OpSpec::bind(const OpParams& p) const {
  OpFn f = op;
  return [f, p](const TensorList& in) { return f(in, p); };
}

GradcheckOptions OpSpec::options() const {
  GradcheckOptions o;
  o.name(name);
  if (eps) o.eps(*eps);
  if (atol) o.atol(*atol);
  if (rtol) o.rtol(*rtol);
  return o;
}

TensorList differentiable_inputs(const OpCase& c) {
  TensorList r;
  for (const Tensor& t : c.inputs) {
    if (t.defined() && t.is_floating_point())
      r.push_back(t.detach().requires_grad_(true));
    else
      r.push_back(t);
  }
  return r;
}

// ---- references: plain loops over row-major values -------------------------------------------

namespace {

using Vec = std::vector<double>;
using nn::functional::Reduction;

Tensor T(const Vec& v, const Shape& s) { return from_vector(v, s, f64()); }
Vec V(const Tensor& t) { return t.to_vector<double>(); }

int64_t flat_of(const Shape& coords, const Shape& shape) {
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + coords[k];
  return f;
}

// Index into a tensor of `shape` broadcast to `out` at out-coordinates `c`.
int64_t bcast_flat(const Shape& c, const Shape& shape, const Shape& out) {
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

Dims wrap_all(const Dims& dims, int64_t rank) {
  Dims d;
  if (dims.empty() || rank == 0) {
    for (int64_t k = 0; k < rank; ++k) d.push_back(k);
    return d;
  }
  for (auto k : dims) d.push_back(k < 0 ? k + rank : k);
  std::sort(d.begin(), d.end());
  return d;
}

// Groups x's elements by their coordinates outside `dims`, applies f to each group.
template <class F>
Tensor reduce_ref(const Tensor& x, const Dims& dims_in, bool keepdim, F f) {
  const Shape& s = x.sizes();
  const Dims dims = wrap_all(dims_in, x.dim());
  Shape kept = s;
  for (auto d : dims) kept[d] = 1;
  std::vector<Vec> groups(static_cast<size_t>(numel_of(kept)));
  Vec v = V(x);
  for (size_t i = 0; i < v.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), s);
    for (auto d : dims) c[d] = 0;
    groups[flat_of(c, kept)].push_back(v[i]);
  }
  Vec r;
  for (auto& g : groups) r.push_back(f(g));
  if (keepdim) return T(r, kept);
  Shape out;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (!std::binary_search(dims.begin(), dims.end(), k)) out.push_back(s[k]);
  return T(r, out);
}

// Applies f to every lane of x along `dim` (a vector -> vector of the same length).
template <class F>
Tensor lanes_ref(const Tensor& x, int64_t dim, F f) {
  const Shape& s = x.sizes();
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  Vec v = V(x), r(v.size());
  Shape kept = s;
  kept[d] = 1;
  for (int64_t l = 0; l < numel_of(kept); ++l) {
    Shape c = unravel_index(l, kept);
    Vec lane;
    std::vector<int64_t> at;
    for (int64_t k = 0; k < s[d]; ++k) {
      c[d] = k;
      at.push_back(flat_of(c, s));
      lane.push_back(v[at.back()]);
    }
    Vec out = f(lane);
    for (size_t k = 0; k < at.size(); ++k) r[at[k]] = out[k];
  }
  return T(r, s);
}

double sum_of(const Vec& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double max_of(const Vec& g) { return *std::max_element(g.begin(), g.end()); }
double min_of(const Vec& g) { return *std::min_element(g.begin(), g.end()); }
double lse_of(const Vec& g) {
  const double m = max_of(g);
  double s = 0;
  for (double e : g) s += std::exp(e - m);
  return m + std::log(s);
}
Vec softmax_of(const Vec& g) {
  const double m = max_of(g);
  Vec r(g.size());
  double s = 0;
  for (size_t i = 0; i < g.size(); ++i) s += (r[i] = std::exp(g[i] - m));
  for (double& e : r) e /= s;
  return r;
}

Tensor permute_ref(const Tensor& x, const Dims& perm) {
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

// y = x[.., start:end:step, ..] along dim (start/end already in range).
Tensor slice_ref(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Shape out = x.sizes();
  out[dim] = end > start ? (end - start + step - 1) / step : 0;
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out);
    c[dim] = start + c[dim] * step;
    r[i] = v[flat_of(c, x.sizes())];
  }
  return T(r, out);
}

Tensor expand_ref(const Tensor& x, const Shape& out) {
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = v[bcast_flat(unravel_index(static_cast<int64_t>(i), out), x.sizes(), out)];
  return T(r, out);
}

Tensor cat_ref(const TensorList& xs, int64_t dim) {
  const int64_t d = dim < 0 ? dim + xs[0].dim() : dim;
  Shape out = xs[0].sizes();
  out[d] = 0;
  for (auto& t : xs) out[d] += t.size(d);
  Vec r(static_cast<size_t>(numel_of(out)));
  int64_t at = 0;
  for (auto& t : xs) {
    Vec v = V(t);
    for (size_t i = 0; i < v.size(); ++i) {
      Shape c = unravel_index(static_cast<int64_t>(i), t.sizes());
      c[d] += at;
      r[flat_of(c, out)] = v[i];
    }
    at += t.size(d);
  }
  return T(r, out);
}

std::vector<int64_t> I(const Tensor& t) { return t.to_vector<int64_t>(); }

Tensor gather_ref(const Tensor& x, int64_t dim, const Tensor& index) {
  Vec v = V(x), r;
  auto idx = I(index);
  for (size_t i = 0; i < idx.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), index.sizes());
    if (x.dim() > 0) c[dim] = idx[i];
    r.push_back(v[x.dim() > 0 ? flat_of(c, x.sizes()) : 0]);
  }
  return T(r, index.sizes());
}

Tensor scatter_add_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Vec r = V(self), s = V(src);
  auto idx = I(index);
  for (size_t i = 0; i < idx.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), index.sizes());
    const double val = s[flat_of(c, src.sizes())];
    if (self.dim() > 0) c[dim] = idx[i];
    r[self.dim() > 0 ? flat_of(c, self.sizes()) : 0] += val;
  }
  return T(r, self.sizes());
}

Tensor index_select_ref(const Tensor& x, int64_t dim, const Tensor& index) {
  auto idx = I(index);
  Shape out = x.sizes();
  out[dim] = static_cast<int64_t>(idx.size());
  Vec v = V(x), r(static_cast<size_t>(numel_of(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), out);
    c[dim] = idx[c[dim]];
    r[i] = v[flat_of(c, x.sizes())];
  }
  return T(r, out);
}

Tensor index_add_ref(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  auto idx = I(index);
  Vec r = V(self), s = V(src);
  for (size_t i = 0; i < s.size(); ++i) {
    Shape c = unravel_index(static_cast<int64_t>(i), src.sizes());
    c[dim] = idx[c[dim]];
    r[flat_of(c, self.sizes())] += s[i];
  }
  return T(r, self.sizes());
}

Tensor reduce_loss(const Vec& l, const Shape& s, Reduction red) {
  if (red == Reduction::None) return T(l, s);
  const double total = sum_of(l);
  return T({red == Reduction::Sum ? total : total / static_cast<double>(l.size())}, {});
}

// ---- sampling helpers ------------------------------------------------------------------------

std::string sh(const Tensor& t) { return shape_str(t.sizes()); }

std::string args(const TensorList& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + sh(ts[i]);
  return s;
}

OpCase make(TensorList in, OpParams p, std::string describe) {
  return {std::move(in), std::move(p), std::move(describe)};
}

// A random subset of [0, rank) as dims (maybe negative), possibly empty.
Dims draw_dims(Draw& d, int64_t rank, bool allow_empty = true) {
  Dims dims;
  for (int64_t k = 0; k < rank; ++k)
    if (d.boolean()) dims.push_back(d.boolean() ? k : k - rank);
  if (dims.empty() && !allow_empty && rank > 0) dims.push_back(d.integer(0, rank - 1));
  return dims;
}

int64_t draw_dim(Draw& d, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  return d.integer(-r, r - 1);
}
int64_t wrap(int64_t dim, int64_t rank) { return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim; }

// A random shape with the same number of elements (a valid reshape target; one size may be -1).
Shape draw_reshape(Draw& d, const Shape& s) {
  int64_t n = numel_of(s);
  Shape out;
  const int64_t rank = d.integer(0, 4);
  for (int64_t k = 0; k + 1 < rank; ++k) {
    std::vector<int64_t> divs;
    for (int64_t q = 1; q <= n; ++q)
      if (n % q == 0) divs.push_back(q);
    const int64_t q = d.choose(divs);
    out.push_back(q);
    n /= q;
  }
  if (rank > 0 || n != 1) out.push_back(n);
  if (!out.empty() && d.integer(0, 3) == 0)
    out[d.integer(0, static_cast<int64_t>(out.size()) - 1)] = -1;
  return out;
}

Dims draw_perm(Draw& d, int64_t rank) {
  Dims p(rank);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t k = rank - 1; k > 0; --k) std::swap(p[k], p[d.integer(0, k)]);
  return p;
}

// `s` with some dims set to 1 and some leading dims dropped: a shape that broadcasts to s.
Shape draw_source(Draw& d, const Shape& s) {
  Shape r(s.begin() + d.integer(0, static_cast<int64_t>(s.size())), s.end());
  for (auto& v : r)
    if (d.integer(0, 2) == 0) v = 1;
  return r;
}

const char* red_name(int64_t r) { return r == 0 ? "mean" : r == 1 ? "sum" : "none"; }

// ---- rows ------------------------------------------------------------------------------------

using Sampler = std::function<OpCase(Draw&)>;

OpSpec row(std::string name, int arity, std::string domain, std::string shapes, Sampler sample,
           OpFn op, OpFn reference = {}) {
  OpSpec s;
  s.name = std::move(name);
  s.arity = arity;
  s.domain = std::move(domain);
  s.shapes = std::move(shapes);
  s.sample = std::move(sample);
  s.op = std::move(op);
  s.reference = std::move(reference);
  return s;
}

// Elementwise unary op f with its scalar reference g, on values in `dom`.
OpSpec unary(std::string name, Tensor (*f)(const Tensor&, Site), double (*g)(double), Domain dom,
             bool composable = false) {
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

// Elementwise binary op with broadcasting; variant 1 takes a number as the second operand.
template <class FT, class FS, class G>
OpSpec binary(std::string name, FT ft, FS fs, G g, Domain da, Domain db, bool composable = false) {
  const std::string nm = name;
  OpSpec s = row(
      name, 2, "a: " + da.label + "; b: " + db.label, "broadcast pair, or a tensor and a number",
      [=](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 3) == 0 ? 1 : 0;
        if (p.variant == 1) {
          Tensor a = d.values(d.shape(), da);
          p.reals = {db.project(d.choose(std::vector<double>{1.5, -0.75, 2.0, 0.5}))};
          return make({a}, p, nm + "(a " + sh(a) + ", " + std::to_string(p.reals[0]) + ")");
        }
        auto [sa, sb] = d.broadcast_pair();
        Tensor a = d.values(sa, da), b = d.values(sb, db);
        return make({a, b}, p, nm + "(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [ft, fs](const TensorList& in, const OpParams& p) {
        return TensorList{p.variant == 1 ? fs(in[0], p.r(0)) : ft(in[0], in[1])};
      },
      [g](const TensorList& in, const OpParams& p) {
        if (p.variant == 1) {
          const double c = p.r(0);
          return TensorList{map1(in[0], [&](double a) { return g(a, c); })};
        }
        return TensorList{map2(in[0], in[1], g)};
      });
  s.composable = composable;
  return s;
}

OpSpec with_tol(OpSpec s, std::optional<double> eps, std::optional<double> atol,
                std::optional<double> rtol) {
  s.eps = eps;
  s.atol = atol;
  s.rtol = rtol;
  return s;
}

std::vector<OpSpec> build_table() {
  std::vector<OpSpec> t;
  const Domain any = Domain::any(), pos = Domain::positive(), nz = Domain::nonzero();

  // ---- elementwise binary ----------------------------------------------------------------
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
  t.push_back(row(
      "rsub", 1, "x: any", "any shape; a number",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        return make({x}, {{}, {}, {}, {1.25}}, "rsub(x " + sh(x) + ", 1.25)");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{rsub(in[0], p.r(0))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [c = p.r(0)](double x) { return c - x; })};
      }));
  t.push_back(row(
      "rdiv", 1, "x: nonzero", "any shape; a number",
      [nz](Draw& d) {
        Tensor x = d.values(d.shape(), nz);
        return make({x}, {{}, {}, {}, {1.5}}, "rdiv(x " + sh(x) + ", 1.5)");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{rdiv(in[0], p.r(0))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [c = p.r(0)](double x) { return c / x; })};
      }));
  t.push_back(row(
      "pow", 2,
      "scalar exponent: base positive (integer exponent: any); tensor exponent: base positive",
      "any shape and a number, or a broadcast pair",
      [pos, any](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 2);
        if (p.variant == 0) {
          p.reals = {d.choose(std::vector<double>{2.0, 3.0, 0.5, -1.0, 1.5, 0.0})};
          Tensor x = d.values(d.shape(), pos);
          return make({x}, p, "pow(x " + sh(x) + ", " + std::to_string(p.reals[0]) + ")");
        }
        if (p.variant == 1) {
          p.reals = {d.choose(std::vector<double>{2.0, 3.0})};
          Tensor x = d.values(d.shape(), any);
          return make({x}, p, "pow(x " + sh(x) + ", " + std::to_string(p.reals[0]) + ")");
        }
        auto [sa, sb] = d.broadcast_pair();
        Tensor a = d.values(sa, pos), b = d.values(sb, any);
        return make({a, b}, p, "pow(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        if (p.variant == 2) return TensorList{pow(in[0], in[1])};
        return TensorList{pow(in[0], p.reals[0] == std::round(p.reals[0]) && p.variant == 1
                                         ? Scalar(static_cast<int64_t>(p.reals[0]))
                                         : Scalar(p.reals[0]))};
      },
      [](const TensorList& in, const OpParams& p) {
        if (p.variant == 2)
          return TensorList{map2(in[0], in[1], [](double a, double b) { return std::pow(a, b); })};
        return TensorList{map1(in[0], [e = p.r(0)](double x) { return std::pow(x, e); })};
      }));
  t.push_back(binary(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
      [](const Tensor& a, double c) {
        return maximum(a, scalar_tensor(c, TensorOptions().dtype(kFloat64).device(a.device())));
      },
      [](double a, double b) { return std::max(a, b); }, any.on_grid(0.2), any.on_grid(0.2, 0.1)));
  t.back().notes = "a and b on grids offset by 0.1: they never tie";
  t.push_back(binary(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
      [](const Tensor& a, double c) {
        return minimum(a, scalar_tensor(c, TensorOptions().dtype(kFloat64).device(a.device())));
      },
      [](double a, double b) { return std::min(a, b); }, any.on_grid(0.2), any.on_grid(0.2, 0.1)));
  t.back().notes = "a and b on grids offset by 0.1: they never tie";
  t.push_back(row(
      "where", 2, "a, b: any; cond: bool",
      "broadcast pair; cond of the broadcast shape; or a number for a or b",
      [any](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 2);
        auto [sa, sb] = d.broadcast_pair();
        const Shape out = broadcast_shapes(sa, sb, "where");
        Tensor c = d.mask(draw_source(d, out));
        if (p.variant == 1) {
          Tensor a = d.values(out, any);
          p.reals = {0.75};
          return make({c, a}, p, "where(cond " + sh(c) + ", a " + sh(a) + ", 0.75)");
        }
        if (p.variant == 2) {
          Tensor b = d.values(out, any);
          p.reals = {-0.5};
          return make({c, b}, p, "where(cond " + sh(c) + ", -0.5, b " + sh(b) + ")");
        }
        Tensor a = d.values(sa, any), b = d.values(sb, any);
        return make({c, a, b}, p, "where(cond " + sh(c) + ", a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        if (p.variant == 1) return TensorList{where(in[0], in[1], Scalar(p.r(0)))};
        if (p.variant == 2) return TensorList{where(in[0], Scalar(p.r(0)), in[1])};
        return TensorList{where(in[0], in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        Tensor a = p.variant == 2 ? full(in[1].sizes(), p.r(0), f64()) : in[1];
        Tensor b = p.variant == 1   ? full(in[1].sizes(), p.r(0), f64())
                   : p.variant == 2 ? in[1]
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
        Tensor m = d.mask(draw_source(d, x.sizes()));
        return make({x, m}, {{}, {}, {}, {0.3}},
                    "masked_fill(x " + sh(x) + ", mask " + sh(m) + ", 0.3)");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{masked_fill(in[0], in[1], p.r(0))};
      },
      [](const TensorList& in, const OpParams& p) {
        Vec m = V(expand_ref(in[1].to(kFloat64), in[0].sizes())), v = V(in[0]);
        for (size_t i = 0; i < v.size(); ++i)
          if (m[i] != 0) v[i] = p.r(0);
        return TensorList{T(v, in[0].sizes())};
      }));

  // ---- elementwise unary -----------------------------------------------------------------
  t.push_back(unary(
      "neg", neg, [](double x) { return -x; }, any, true));
  t.push_back(unary(
      "exp", exp, [](double x) { return std::exp(x); }, any, true));
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
        OpParams p;
        p.reals = {d.choose(std::vector<double>{0.01, 0.2, -0.5})};
        return make({x}, p, "leaky_relu(x " + sh(x) + ", " + std::to_string(p.reals[0]) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{leaky_relu(in[0], p.r(0))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [s = p.r(0)](double x) { return x > 0 ? x : s * x; })};
      }));
  t.push_back(row(
      "softplus", 1, "x: any, away from the threshold", "any shape; beta and threshold",
      [](Draw& d) {
        OpParams p;
        p.reals = {d.choose(std::vector<double>{1.0, 2.0, 0.5, -1.0}), d.choose(std::vector<double>{20.0, 1.0})};
        // keep beta x away from the threshold, where softplus switches to x (a kink)
        Tensor x = d.values(d.shape(), Domain::away_from({p.reals[1] / p.reals[0]}, 0.1, -3, 3));
        return make({x}, p, "softplus(x " + sh(x) + ", beta " + std::to_string(p.reals[0]) + ", threshold " +
                                std::to_string(p.reals[1]) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{softplus(in[0], p.r(0), p.r(1))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{map1(in[0], [b = p.r(0), t = p.r(1)](double x) {
          return b * x > t ? x : std::log1p(std::exp(b * x)) / b;
        })};
      }));
  t.push_back(row(
      "clamp", 1, "x: away from the bounds", "any shape; min and/or max",
      [](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 2);  // 0: both, 1: min only, 2: max only
        p.reals = {d.choose(std::vector<double>{-0.5, -1.0}),
                   d.choose(std::vector<double>{0.7, 1.2})};
        Tensor x = d.values(d.shape(), Domain::away_from({p.reals[0], p.reals[1]}));
        return make({x}, p, "clamp(x " + sh(x) + ", variant " + std::to_string(p.variant) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        std::optional<Scalar> lo = p.variant == 2 ? std::nullopt : std::optional<Scalar>(p.r(0));
        std::optional<Scalar> hi = p.variant == 1 ? std::nullopt : std::optional<Scalar>(p.r(1));
        return TensorList{clamp(in[0], lo, hi)};
      },
      [](const TensorList& in, const OpParams& p) {
        const double lo = p.variant == 2 ? -INFINITY : p.r(0),
                     hi = p.variant == 1 ? INFINITY : p.r(1);
        return TensorList{map1(in[0], [=](double x) { return std::min(std::max(x, lo), hi); })};
      }));

  // ---- reductions ------------------------------------------------------------------------
  auto reduction = [&](std::string name, Domain dom, auto fn, auto ref) {
    const std::string nm = name;
    return row(
        name, 1, "x: " + dom.label,
        "any shape; dims (a subset, empty = all) and keepdim, or no dims",
        [=](Draw& d) {
          Tensor x = d.values(d.shape(), dom);
          OpParams p;
          p.variant = d.integer(0, 3) == 0 ? 0 : 1;
          p.dims = draw_dims(d, x.dim());
          p.ints = {d.boolean() ? 1 : 0};
          return make({x}, p,
                      nm + "(x " + sh(x) +
                          (p.variant ? ", dims " + shape_str(p.dims) : std::string()) +
                          (p.variant && p.i(0) ? ", keepdim)" : ")"));
        },
        [fn](const TensorList& in, const OpParams& p) { return TensorList{fn(in[0], p)}; },
        [ref](const TensorList& in, const OpParams& p) {
          return TensorList{p.variant ? reduce_ref(in[0], p.dims, p.i(0) != 0, ref)
                                      : reduce_ref(in[0], {}, false, ref)};
        });
  };
  t.push_back(reduction(
      "sum", any,
      [](const Tensor& x, const OpParams& p) {
        return p.variant ? sum(x, p.dims, p.i(0) != 0) : sum(x);
      },
      sum_of));
  t.push_back(reduction(
      "mean", any,
      [](const Tensor& x, const OpParams& p) {
        return p.variant ? mean(x, p.dims, p.i(0) != 0) : mean(x);
      },
      [](const Vec& g) { return sum_of(g) / static_cast<double>(g.size()); }));
  t.push_back(reduction(
      "amax", any.distinct_values(),
      [](const Tensor& x, const OpParams& p) {
        return p.variant ? amax(x, p.dims, p.i(0) != 0) : amax(x);
      },
      max_of));
  t.push_back(reduction(
      "amin", any.distinct_values(),
      [](const Tensor& x, const OpParams& p) {
        return p.variant ? amin(x, p.dims, p.i(0) != 0) : amin(x);
      },
      min_of));
  t.push_back(reduction(
      "logsumexp", any,
      [](const Tensor& x, const OpParams& p) {
        return logsumexp(x, p.variant ? p.dims : Dims{}, p.variant && p.i(0));
      },
      lse_of));
  auto max_min = [&](std::string name, bool is_max) {
    const std::string nm = name;
    return row(
        name, 1, "x: any, distinct", "any shape; all, or one dim and keepdim",
        [nm](Draw& d) {
          Tensor x = d.values(d.shape(), Domain::any().distinct_values());
          OpParams p;
          p.variant = d.integer(0, 2) == 0 ? 0 : 1;
          p.ints = {draw_dim(d, x.dim()), d.boolean() ? 1 : 0};
          return make({x}, p,
                      nm + "(x " + sh(x) +
                          (p.variant ? ", dim " + std::to_string(p.i(0)) : std::string()) + ")");
        },
        [is_max](const TensorList& in, const OpParams& p) {
          if (!p.variant) return TensorList{is_max ? max(in[0]) : min(in[0])};
          auto [v, i] = is_max ? max(in[0], p.i(0), p.i(1) != 0) : min(in[0], p.i(0), p.i(1) != 0);
          return TensorList{v, i};
        },
        [is_max](const TensorList& in, const OpParams& p) {
          auto f = is_max ? max_of : min_of;
          if (!p.variant) return TensorList{reduce_ref(in[0], {}, false, f)};
          return TensorList{reduce_ref(in[0], {wrap(p.i(0), in[0].dim())}, p.i(1) != 0, f)};
        });
  };
  t.push_back(max_min("max", true));
  t.push_back(max_min("min", false));
  auto var_std = [&](std::string name, bool is_std) {
    const std::string nm = name;
    return row(
        name, 1, "x: any, distinct (variance away from 0)",
        "any shape (2+ reduced elements); dims; correction 0/1",
        [nm](Draw& d) {
          Shape s = d.shape(1, 4);
          OpParams p;
          p.dims = draw_dims(d, static_cast<int64_t>(s.size()));
          const Dims w = wrap_all(p.dims, static_cast<int64_t>(s.size()));
          int64_t n = 1;
          for (auto k : w) n *= s[k];
          if (n < 2) s[w[0]] = 2;
          p.ints = {d.integer(0, 1), d.boolean() ? 1 : 0};
          Tensor x = d.values(s, Domain::any().distinct_values(0.05));
          return make({x}, p,
                      nm + "(x " + sh(x) + ", dims " + shape_str(p.dims) + ", correction " +
                          std::to_string(p.i(0)) + ")");
        },
        [is_std](const TensorList& in, const OpParams& p) {
          return TensorList{is_std ? gradlab::std(in[0], p.dims, p.i(0), p.i(1) != 0)
                                   : var(in[0], p.dims, p.i(0), p.i(1) != 0)};
        },
        [is_std](const TensorList& in, const OpParams& p) {
          const int64_t c = p.i(0);
          return TensorList{reduce_ref(in[0], p.dims, p.i(1) != 0, [=](const Vec& g) {
            const double m = sum_of(g) / static_cast<double>(g.size());
            double s = 0;
            for (double e : g) s += (e - m) * (e - m);
            const double v = s / static_cast<double>(static_cast<int64_t>(g.size()) - c);
            return is_std ? std::sqrt(v) : v;
          })};
        });
  };
  t.push_back(var_std("var", false));
  t.push_back(var_std("std", true));
  t.push_back(row(
      "norm", 1, "x: away from 0 (p = inf: positive, distinct)", "any shape; p in {2, 1, 3, inf}",
      [](Draw& d) {
        OpParams p;
        p.reals = {d.choose(std::vector<double>{2.0, 1.0, 3.0, INFINITY})};
        Domain dom = std::isinf(p.reals[0]) ? Domain::positive().distinct_values()
                                            : Domain::away_from({0.0});
        Tensor x = d.values(d.shape(), dom);
        return make({x}, p, "norm(x " + sh(x) + ", p=" + std::to_string(p.reals[0]) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{norm(in[0], p.r(0))}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{reduce_ref(in[0], {}, false, [q = p.r(0)](const Vec& g) {
          if (std::isinf(q)) {
            double m = 0;
            for (double e : g) m = std::max(m, std::abs(e));
            return m;
          }
          double s = 0;
          for (double e : g) s += std::pow(std::abs(e), q);
          return std::pow(s, 1 / q);
        })};
      }));

  // ---- linear algebra --------------------------------------------------------------------
  // Composite reference: (a[..., :, :, None] * b[..., None, :, :]).sum(-2), built from mul and sum.
  auto matmul_ref = [](const Tensor& a, const Tensor& b) {
    Tensor A = a.dim() == 1 ? a.unsqueeze(0) : a, B = b.dim() == 1 ? b.unsqueeze(1) : b;
    Tensor c = mul(A.unsqueeze(-1), B.unsqueeze(-3)).sum({-2});
    if (a.dim() == 1) c = c.squeeze(-2);
    if (b.dim() == 1) c = c.squeeze(-1);
    return c.detach();
  };
  t.push_back(row(
      "matmul", 2, "any", "matmul-compatible pair (ranks 1-4, broadcast batch dims)",
      [any](Draw& d) {
        auto [sa, sb] = d.matmul_pair();
        Tensor a = d.values(sa, any), b = d.values(sb, any);
        return make({a, b}, {}, "matmul(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{matmul(in[0], in[1])}; },
      [matmul_ref](const TensorList& in, const OpParams&) {
        return TensorList{matmul_ref(in[0], in[1])};
      }));
  t.push_back(row(
      "mm", 2, "any", "[M, K] and [K, N]",
      [any](Draw& d) {
        const int64_t m = d.integer(1, 5), k = d.integer(1, 5), n = d.integer(1, 5);
        Tensor a = d.values({m, k}, any), b = d.values({k, n}, any);
        return make({a, b}, {}, "mm(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{mm(in[0], in[1])}; },
      [matmul_ref](const TensorList& in, const OpParams&) {
        return TensorList{matmul_ref(in[0], in[1])};
      }));
  t.push_back(row(
      "bmm", 2, "any", "[B, M, K] and [B, K, N]",
      [any](Draw& d) {
        const int64_t bb = d.integer(1, 4), m = d.integer(1, 5), k = d.integer(1, 5),
                      n = d.integer(1, 5);
        Tensor a = d.values({bb, m, k}, any), b = d.values({bb, k, n}, any);
        return make({a, b}, {}, "bmm(a " + sh(a) + ", b " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{bmm(in[0], in[1])}; },
      [matmul_ref](const TensorList& in, const OpParams&) {
        return TensorList{matmul_ref(in[0], in[1])};
      }));

  // ---- shapes ----------------------------------------------------------------------------
  auto reshape_like = [&](std::string name, bool views_ok) {
    const std::string nm = name;
    return row(
        name, 1, "any", "any shape; a target with as many elements",
        [any, nm, views_ok](Draw& d) {
          Tensor x = d.values(d.shape(), any, views_ok);
          OpParams p;
          p.shape = draw_reshape(d, x.sizes());
          return make({x}, p, nm + "(x " + sh(x) + ", " + shape_str(p.shape) + ")");
        },
        [nm](const TensorList& in, const OpParams& p) {
          return TensorList{nm == "view" ? view(in[0], p.shape) : reshape(in[0], p.shape)};
        },
        [](const TensorList& in, const OpParams& p) {
          Shape s = p.shape;
          int64_t known = 1;
          for (auto v : s)
            if (v != -1) known *= v;
          for (auto& v : s)
            if (v == -1) v = in[0].numel() / known;
          return TensorList{T(V(in[0]), s)};
        });
  };
  t.push_back(reshape_like("reshape", true));
  t.push_back(reshape_like("view", false));
  t.back().notes = "contiguous inputs only (a view cannot always be made of a strided tensor)";
  t.push_back(row(
      "flatten", 1, "any", "any shape; start_dim <= end_dim",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        OpParams p;
        const int64_t r = std::max<int64_t>(x.dim(), 1);
        int64_t a = d.integer(0, r - 1), b = d.integer(0, r - 1);
        if (a > b) std::swap(a, b);
        p.ints = {a, d.boolean() ? b : b - r};
        return make({x}, p,
                    "flatten(x " + sh(x) + ", " + std::to_string(p.i(0)) + ", " +
                        std::to_string(p.i(1)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{flatten(in[0], p.i(0), p.i(1))};
      },
      [](const TensorList& in, const OpParams& p) {
        const Shape& s = in[0].sizes();
        if (s.empty()) return TensorList{T(V(in[0]), {1})};
        const int64_t a = wrap(p.i(0), in[0].dim()), b = wrap(p.i(1), in[0].dim());
        Shape out(s.begin(), s.begin() + a);
        int64_t n = 1;
        for (int64_t k = a; k <= b; ++k) n *= s[k];
        out.push_back(n);
        out.insert(out.end(), s.begin() + b + 1, s.end());
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "transpose", 1, "any", "rank 1-4; two dims",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        p.ints = {draw_dim(d, x.dim()), draw_dim(d, x.dim())};
        return make({x}, p,
                    "transpose(x " + sh(x) + ", " + std::to_string(p.i(0)) + ", " +
                        std::to_string(p.i(1)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{transpose(in[0], p.i(0), p.i(1))};
      },
      [](const TensorList& in, const OpParams& p) {
        Dims perm(in[0].dim());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[wrap(p.i(0), in[0].dim())], perm[wrap(p.i(1), in[0].dim())]);
        return TensorList{permute_ref(in[0], perm)};
      }));
  t.push_back(row(
      "permute", 1, "any", "any shape; a permutation",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        OpParams p;
        p.dims = draw_perm(d, x.dim());
        return make({x}, p, "permute(x " + sh(x) + ", " + shape_str(p.dims) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{permute(in[0], p.dims)}; },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{permute_ref(in[0], p.dims)};
      }));
  t.push_back(row(
      "slice", 1, "any", "rank 1-4; dim, start < end (maybe negative), step 1-3",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        const int64_t dim = draw_dim(d, x.dim()), n = x.size(dim);
        const int64_t start = d.integer(0, n - 1), end = d.integer(start + 1, n);
        p.ints = {dim, d.boolean() ? start - n : start, end, d.integer(1, 3)};
        return make({x}, p,
                    "slice(x " + sh(x) + ", dim " + std::to_string(dim) + ", " +
                        std::to_string(p.i(1)) + ":" + std::to_string(end) + ":" +
                        std::to_string(p.i(3)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{slice(in[0], p.i(0), p.i(1), p.i(2), p.i(3))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.i(0), in[0].dim()), n = in[0].size(d);
        const int64_t start = p.i(1) < 0 ? p.i(1) + n : p.i(1);
        return TensorList{slice_ref(in[0], d, start, p.i(2), p.i(3))};
      }));
  t.push_back(row(
      "narrow", 1, "any", "rank 1-4; dim, start, length >= 1",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        const int64_t dim = draw_dim(d, x.dim()), n = x.size(dim);
        const int64_t start = d.integer(0, n - 1);
        p.ints = {dim, start, d.integer(1, n - start)};
        return make({x}, p,
                    "narrow(x " + sh(x) + ", " + std::to_string(dim) + ", " +
                        std::to_string(start) + ", " + std::to_string(p.i(2)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{narrow(in[0], p.i(0), p.i(1), p.i(2))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.i(0), in[0].dim());
        return TensorList{slice_ref(in[0], d, p.i(1), p.i(1) + p.i(2), 1)};
      }));
  t.push_back(row(
      "select", 1, "any", "rank 1-4; dim and an index (maybe negative)",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        const int64_t dim = draw_dim(d, x.dim()), n = x.size(dim);
        p.ints = {dim, d.integer(-n, n - 1)};
        return make(
            {x}, p,
            "select(x " + sh(x) + ", " + std::to_string(dim) + ", " + std::to_string(p.i(1)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{select(in[0], p.i(0), p.i(1))};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t d = wrap(p.i(0), in[0].dim()), n = in[0].size(d);
        const int64_t i = p.i(1) < 0 ? p.i(1) + n : p.i(1);
        Tensor s = slice_ref(in[0], d, i, i + 1, 1);
        Shape out = in[0].sizes();
        out.erase(out.begin() + d);
        return TensorList{T(V(s), out)};
      }));
  t.push_back(row(
      "expand", 1, "any",
      "x with some size-1 dims; a target that grows them and adds leading dims (-1 keeps a size)",
      [any](Draw& d) {
        const Shape big = d.shape();
        Shape s = draw_source(d, big);
        Tensor x = d.values(s, any);
        OpParams p;
        p.shape = big;
        const size_t lead = big.size() - s.size();
        for (size_t k = 0; k < s.size(); ++k)
          if (s[k] == big[k + lead] && d.integer(0, 2) == 0) p.shape[k + lead] = -1;
        return make({x}, p, "expand(x " + sh(x) + ", " + shape_str(p.shape) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{expand(in[0], p.shape)}; },
      [](const TensorList& in, const OpParams& p) {
        Shape out = p.shape;
        const size_t lead = out.size() - in[0].sizes().size();
        for (size_t k = 0; k < out.size(); ++k)
          if (out[k] == -1) out[k] = in[0].sizes()[k - lead];
        return TensorList{expand_ref(in[0], out)};
      }));
  t.push_back(row(
      "squeeze", 1, "any", "shape with some size-1 dims; all or one dim",
      [any](Draw& d) {
        Shape s = d.shape();
        for (auto& v : s)
          if (d.boolean()) v = 1;
        Tensor x = d.values(s, any);
        OpParams p;
        p.variant = d.integer(0, 1);
        p.ints = {draw_dim(d, x.dim())};
        return make({x}, p,
                    "squeeze(x " + sh(x) +
                        (p.variant ? ", " + std::to_string(p.i(0)) : std::string()) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{p.variant ? squeeze(in[0], p.i(0)) : squeeze(in[0])};
      },
      [](const TensorList& in, const OpParams& p) {
        Shape out;
        const Shape& s = in[0].sizes();
        for (int64_t k = 0; k < in[0].dim(); ++k) {
          const bool drop = s[k] == 1 && (!p.variant || k == wrap(p.i(0), in[0].dim()));
          if (!drop) out.push_back(s[k]);
        }
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "unsqueeze", 1, "any", "rank 0-3; a dim in [-(rank+1), rank]",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(0, 3), any);
        OpParams p;
        p.ints = {d.integer(-(x.dim() + 1), x.dim())};
        return make({x}, p, "unsqueeze(x " + sh(x) + ", " + std::to_string(p.i(0)) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{unsqueeze(in[0], p.i(0))}; },
      [](const TensorList& in, const OpParams& p) {
        Shape out = in[0].sizes();
        const int64_t dd = p.i(0) < 0 ? p.i(0) + in[0].dim() + 1 : p.i(0);
        out.insert(out.begin() + dd, 1);
        return TensorList{T(V(in[0]), out)};
      }));
  t.push_back(row(
      "sum_to", 1, "any", "x of a broadcast shape; a shape it was broadcast from",
      [any](Draw& d) {
        auto [sa, sb] = d.broadcast_pair();
        Tensor x = d.values(broadcast_shapes(sa, sb, "sum_to"), any);
        OpParams p;
        p.shape = sa;
        return make({x}, p, "sum_to(x " + sh(x) + ", " + shape_str(sa) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{sum_to(in[0], p.shape)}; },
      [](const TensorList& in, const OpParams& p) {
        Vec r(static_cast<size_t>(numel_of(p.shape)), 0.0), v = V(in[0]);
        for (size_t i = 0; i < v.size(); ++i)
          r[bcast_flat(unravel_index(static_cast<int64_t>(i), in[0].sizes()), p.shape,
                       in[0].sizes())] += v[i];
        return TensorList{T(r, p.shape)};
      }));
  t.push_back(row(
      "cat", 3, "any", "1-3 tensors, rank 1-4, equal except along dim",
      [any](Draw& d) {
        Shape s = d.shape(1, 4);
        OpParams p;
        p.ints = {draw_dim(d, static_cast<int64_t>(s.size()))};
        const int64_t dim = wrap(p.i(0), static_cast<int64_t>(s.size()));
        TensorList xs;
        const int64_t k = d.integer(1, 3);
        for (int64_t i = 0; i < k; ++i) {
          s[dim] = d.integer(1, 4);
          xs.push_back(d.values(s, any));
        }
        return make(xs, p, "cat(" + args(xs) + "; dim " + std::to_string(p.i(0)) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{cat(in, p.i(0))}; },
      [](const TensorList& in, const OpParams& p) { return TensorList{cat_ref(in, p.i(0))}; }));
  t.push_back(row(
      "stack", 3, "any", "1-3 tensors of one shape; a dim in [-(rank+1), rank]",
      [any](Draw& d) {
        Shape s = d.shape(0, 3);
        OpParams p;
        p.ints = {d.integer(-static_cast<int64_t>(s.size()) - 1, static_cast<int64_t>(s.size()))};
        TensorList xs;
        const int64_t k = d.integer(1, 3);
        for (int64_t i = 0; i < k; ++i) xs.push_back(d.values(s, any));
        return make(xs, p, "stack(" + args(xs) + "; dim " + std::to_string(p.i(0)) + ")");
      },
      [](const TensorList& in, const OpParams& p) { return TensorList{stack(in, p.i(0))}; },
      [](const TensorList& in, const OpParams& p) {
        const int64_t dd = p.i(0) < 0 ? p.i(0) + in[0].dim() + 1 : p.i(0);
        TensorList u;
        for (auto& x : in) {
          Shape s = x.sizes();
          s.insert(s.begin() + dd, 1);
          u.push_back(T(V(x), s));
        }
        return TensorList{cat_ref(u, dd)};
      }));
  t.push_back(unary(
      "clone", clone, [](double x) { return x; }, any, true));
  t.push_back(unary(
      "contiguous", contiguous, [](double x) { return x; }, any));
  t.back().notes = "inputs are often non-contiguous views: then it copies";
  t.push_back(with_tol(
      row(
          "to", 1, "any", "any shape; float64 -> float32",
          [any](Draw& d) {
            Tensor x = d.values(d.shape(), any);
            return make({x}, {}, "to(x " + sh(x) + ", float32)");
          },
          [](const TensorList& in, const OpParams&) { return TensorList{in[0].to(kFloat32)}; },
          [](const TensorList& in, const OpParams&) {
            return TensorList{in[0].detach().to(kFloat32)};
          }),
      1e-3, 1e-4, 1e-3));
  t.back().notes = "a float32 output: differences need eps=1e-3 (its rounding is ~6e-8)";

  // ---- indexing --------------------------------------------------------------------------
  t.push_back(row(
      "index_select", 1, "x: any; index: int64 in range",
      "rank 1-4; dim; a 1-D index (repeats allowed)",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        p.ints = {draw_dim(d, x.dim())};
        Tensor idx = d.indices({d.integer(1, 5)}, x.size(p.i(0)));
        return make(
            {x, idx}, p,
            "index_select(x " + sh(x) + ", " + std::to_string(p.i(0)) + ", index " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_select(in[0], p.i(0), in[1])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_select_ref(in[0], wrap(p.i(0), in[0].dim()), in[1])};
      }));
  auto gather_index = [](Draw& d, const Tensor& x, int64_t dim) {
    Shape is = x.sizes();
    for (int64_t k = 0; k < x.dim(); ++k)
      is[k] = k == dim ? d.integer(1, 5) : d.integer(1, x.size(k));
    return d.indices(is, x.size(dim));
  };
  t.push_back(row(
      "gather", 1, "x: any; index: int64 in range",
      "rank 1-4; dim; index of the same rank, no larger off dim",
      [any, gather_index](Draw& d) {
        Tensor x = d.values(d.shape(1, 4), any);
        OpParams p;
        p.ints = {draw_dim(d, x.dim())};
        Tensor idx = gather_index(d, x, wrap(p.i(0), x.dim()));
        return make(
            {x, idx}, p,
            "gather(x " + sh(x) + ", " + std::to_string(p.i(0)) + ", index " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{gather(in[0], p.i(0), in[1])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{gather_ref(in[0], wrap(p.i(0), in[0].dim()), in[1])};
      }));
  t.push_back(row(
      "scatter_add", 2, "self, src: any; index: int64 in range",
      "rank 1-4; dim; index like gather's; src of index's shape",
      [any, gather_index](Draw& d) {
        Tensor self = d.values(d.shape(1, 4), any);
        OpParams p;
        p.ints = {draw_dim(d, self.dim())};
        Tensor idx = gather_index(d, self, wrap(p.i(0), self.dim()));
        Tensor src = d.values(idx.sizes(), any);
        return make({self, idx, src}, p,
                    "scatter_add(self " + sh(self) + ", " + std::to_string(p.i(0)) + ", index " +
                        sh(idx) + ", src " + sh(src) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{scatter_add(in[0], p.i(0), in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{scatter_add_ref(in[0], wrap(p.i(0), in[0].dim()), in[1], in[2])};
      }));
  t.push_back(row(
      "index_add", 2, "self, src: any; index: int64 in range",
      "rank 1-4; dim; 1-D index; src sized by the index",
      [any](Draw& d) {
        Tensor self = d.values(d.shape(1, 4), any);
        OpParams p;
        p.ints = {draw_dim(d, self.dim())};
        const int64_t dim = wrap(p.i(0), self.dim());
        Tensor idx = d.indices({d.integer(1, 5)}, self.size(dim));
        Shape ss = self.sizes();
        ss[dim] = idx.numel();
        Tensor src = d.values(ss, any);
        return make({self, idx, src}, p,
                    "index_add(self " + sh(self) + ", " + std::to_string(p.i(0)) + ", index " +
                        sh(idx) + ", src " + sh(src) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_add(in[0], p.i(0), in[1], in[2])};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{index_add_ref(in[0], wrap(p.i(0), in[0].dim()), in[1], in[2])};
      }));
  t.push_back(row(
      "embedding", 1, "weight: any; indices: int64 in [0, V)", "weight [V, D]; indices of rank 0-2",
      [any](Draw& d) {
        Tensor w = d.values({d.integer(1, 5), d.integer(1, 4)}, any);
        Tensor idx = d.indices(d.shape(0, 2, 4), w.size(0));
        return make({w, idx}, {}, "embedding(weight " + sh(w) + ", indices " + sh(idx) + ")");
      },
      [](const TensorList& in, const OpParams&) { return TensorList{embedding(in[0], in[1])}; },
      [](const TensorList& in, const OpParams&) {
        Tensor r = index_select_ref(in[0], 0, in[1].reshape({-1}));
        Shape out = in[1].sizes();
        out.push_back(in[0].size(1));
        return TensorList{T(V(r), out)};
      }));

  // ---- softmax family and losses ---------------------------------------------------------
  auto softmax_like = [&](std::string name, bool log_form) {
    const std::string nm = name;
    return row(
        name, 1, "any", "rank 1-4; a dim",
        [any, nm](Draw& d) {
          Tensor x = d.values(d.shape(1, 4), any);
          OpParams p;
          p.ints = {draw_dim(d, x.dim())};
          return make({x}, p, nm + "(x " + sh(x) + ", " + std::to_string(p.i(0)) + ")");
        },
        [log_form](const TensorList& in, const OpParams& p) {
          return TensorList{log_form ? log_softmax(in[0], p.i(0)) : softmax(in[0], p.i(0))};
        },
        [log_form](const TensorList& in, const OpParams& p) {
          return TensorList{lanes_ref(in[0], p.i(0), [=](const Vec& g) {
            Vec s = softmax_of(g);
            if (log_form) {
              const double l = lse_of(g);
              for (size_t k = 0; k < s.size(); ++k) s[k] = g[k] - l;
            }
            return s;
          })};
        });
  };
  t.push_back(softmax_like("softmax", false));
  t.push_back(softmax_like("log_softmax", true));

  // cross_entropy / nll_loss: logits [N, C] (or [C] and a 0-d target), reduction, smoothing,
  // ignore_index.
  auto class_case = [any](Draw& d, bool allow_1d, const std::string& nm) {
    OpParams p;
    p.variant = allow_1d && d.integer(0, 4) == 0 ? 1 : 0;
    const int64_t n = d.integer(1, 5), c = d.integer(2, 5);
    Tensor x = d.values(p.variant ? Shape{c} : Shape{n, c}, any);
    Tensor target = d.indices(p.variant ? Shape{} : Shape{n}, c);
    int64_t ignore = -100;
    if (!p.variant && d.integer(0, 2) == 0) {
      // Ignore one class, unless every target is that class (the mean would be 0/0).
      auto tv = target.to_vector<int64_t>();
      const int64_t cand = d.integer(0, c - 1);
      if (std::any_of(tv.begin(), tv.end(), [&](int64_t v) { return v != cand; })) ignore = cand;
    }
    p.ints = {d.integer(0, 2), ignore};
    p.reals = {d.boolean() ? 0.1 : 0.0};
    return make({x, target}, p,
                nm + "(input " + sh(x) + ", target " + sh(target) + ", reduction " +
                    red_name(p.i(0)) + ", ignore_index " + std::to_string(ignore) +
                    ", label_smoothing " + std::to_string(p.r(0)) + ")");
  };
  auto reduction_of = [](int64_t r) {
    return r == 0 ? Reduction::Mean : r == 1 ? Reduction::Sum : Reduction::None;
  };
  // loss_i = -(1-ε) logp[i, t_i] - ε mean_c logp[i, c], 0 where t_i is ignored; mean over kept
  // rows.
  auto nll_reference = [reduction_of](const Tensor& logp2, const Tensor& target, const OpParams& p,
                                      double eps, bool one_d) {
    const int64_t n = logp2.size(0), c = logp2.size(1);
    Vec lp = V(logp2), loss;
    auto tv = target.to_vector<int64_t>();
    double kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (tv[i] == p.i(1)) {
        loss.push_back(0.0);
        continue;
      }
      kept += 1;
      double mean_c = 0;
      for (int64_t k = 0; k < c; ++k) mean_c += lp[i * c + k] / static_cast<double>(c);
      loss.push_back(-(1 - eps) * lp[i * c + tv[i]] - eps * mean_c);
    }
    const Reduction red = reduction_of(p.i(0));
    if (red == Reduction::Mean) return T({sum_of(loss) / kept}, {});
    return reduce_loss(loss, one_d ? Shape{} : Shape{n}, red);
  };
  t.push_back(row(
      "cross_entropy", 1, "logits: any; target: class indices",
      "[N, C] and [N] (or [C] and []); reduction; smoothing; ignore_index",
      [class_case](Draw& d) { return class_case(d, true, "cross_entropy"); },
      [reduction_of](const TensorList& in, const OpParams& p) {
        namespace F = nn::functional;
        return TensorList{F::cross_entropy(in[0], in[1],
                                           F::CrossEntropyFuncOptions()
                                               .reduction(reduction_of(p.i(0)))
                                               .ignore_index(p.i(1))
                                               .label_smoothing(p.r(0)))};
      },
      [nll_reference](const TensorList& in, const OpParams& p) {
        Tensor x2 = in[0].dim() == 1 ? T(V(in[0]), {1, in[0].size(0)}) : in[0];
        Tensor t2 = in[1].dim() == 0 ? in[1].reshape({1}) : in[1];
        Tensor lp = lanes_ref(x2, 1, [](const Vec& g) {
          const double l = lse_of(g);
          Vec r(g.size());
          for (size_t k = 0; k < g.size(); ++k) r[k] = g[k] - l;
          return r;
        });
        return TensorList{nll_reference(lp, t2, p, p.r(0), in[0].dim() == 1)};
      }));
  // The fused node cross_entropy runs for [N, C] logits, checked against the composite (its
  // oracle).
  auto ce_options = [reduction_of](const OpParams& p) {
    return nn::functional::CrossEntropyFuncOptions()
        .reduction(reduction_of(p.i(0)))
        .ignore_index(p.i(1))
        .label_smoothing(p.r(0));
  };
  t.push_back(row(
      "cross_entropy_fused", 1, "logits: any; target: class indices",
      "[N, C] and [N]; reduction; smoothing; ignore_index",
      [class_case](Draw& d) { return class_case(d, false, "cross_entropy_fused"); },
      [ce_options](const TensorList& in, const OpParams& p) {
        return TensorList{nn::functional::cross_entropy_fused(in[0], in[1], ce_options(p))};
      },
      [ce_options](const TensorList& in, const OpParams& p) {
        return TensorList{
            nn::functional::cross_entropy_reference(in[0].detach(), in[1], ce_options(p)).detach()};
      }));
  t.back().notes = "reference: the composite cross_entropy_reference";
  t.push_back(row(
      "cross_entropy_reference", 1, "logits: any; target: class indices",
      "[N, C] and [N]; reduction; smoothing; ignore_index",
      [class_case](Draw& d) { return class_case(d, false, "cross_entropy_reference"); },
      [ce_options](const TensorList& in, const OpParams& p) {
        return TensorList{nn::functional::cross_entropy_reference(in[0], in[1], ce_options(p))};
      },
      [nll_reference](const TensorList& in, const OpParams& p) {
        Tensor lp = lanes_ref(in[0], 1, [](const Vec& g) {
          const double l = lse_of(g);
          Vec r(g.size());
          for (size_t k = 0; k < g.size(); ++k) r[k] = g[k] - l;
          return r;
        });
        return TensorList{nll_reference(lp, in[1], p, p.r(0), false)};
      }));
  t.push_back(row(
      "nll_loss", 1, "log-probabilities: any; target: class indices",
      "[N, C] and [N]; reduction; ignore_index",
      [class_case](Draw& d) { return class_case(d, false, "nll_loss"); },
      [reduction_of](const TensorList& in, const OpParams& p) {
        namespace F = nn::functional;
        return TensorList{F::nll_loss(
            in[0], in[1],
            F::NLLLossFuncOptions().reduction(reduction_of(p.i(0))).ignore_index(p.i(1)))};
      },
      [nll_reference](const TensorList& in, const OpParams& p) {
        return TensorList{nll_reference(in[0], in[1], p, 0.0, false)};
      }));
  auto pair_loss = [&](std::string name, Domain dx, auto fn, double (*elem)(double, double),
                       bool target_offset) {
    const std::string nm = name;
    return row(
        name, 2,
        "input: " + dx.label +
            (target_offset ? "; target = input + an offset away from 0" : "; target: any"),
        "two tensors of one shape; reduction",
        [=](Draw& d) {
          Tensor x = d.values(d.shape(), dx);
          Tensor y;
          if (target_offset) {
            Tensor off = d.values(x.sizes(), Domain::nonzero(0.1, 1.0));
            NoGradGuard ng;
            y = (x + off).detach();
          } else {
            y = d.values(x.sizes(), nm == "binary_cross_entropy_with_logits" ? Domain::probability()
                                                                             : Domain::any());
          }
          OpParams p;
          p.ints = {d.integer(0, 2)};
          return make({x, y}, p,
                      nm + "(input " + sh(x) + ", target " + sh(y) + ", " + red_name(p.i(0)) + ")");
        },
        [fn, reduction_of](const TensorList& in, const OpParams& p) {
          return TensorList{fn(in[0], in[1], reduction_of(p.i(0)))};
        },
        [elem, reduction_of](const TensorList& in, const OpParams& p) {
          Vec a = V(in[0]), b = V(in[1]), l;
          for (size_t i = 0; i < a.size(); ++i) l.push_back(elem(a[i], b[i]));
          return TensorList{reduce_loss(l, in[0].sizes(), reduction_of(p.i(0)))};
        });
  };
  t.push_back(pair_loss(
      "mse_loss", Domain::any(),
      [](const Tensor& x, const Tensor& y, Reduction r) {
        return nn::functional::mse_loss(x, y, r);
      },
      [](double a, double b) { return (a - b) * (a - b); }, false));
  t.push_back(pair_loss(
      "l1_loss", Domain::any(),
      [](const Tensor& x, const Tensor& y, Reduction r) {
        return nn::functional::l1_loss(x, y, r);
      },
      [](double a, double b) { return std::abs(a - b); }, true));
  t.push_back(pair_loss(
      "binary_cross_entropy_with_logits", Domain::any(-4, 4),
      [](const Tensor& x, const Tensor& y, Reduction r) {
        return nn::functional::binary_cross_entropy_with_logits(x, y, r);
      },
      [](double x, double y) {
        return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
      },
      false));

  // ---- in place (on a non-leaf copy, so the graph is rebased) ------------------------------
  auto inplace_binary = [&](std::string name, Domain db, auto fn, double (*g)(double, double)) {
    const std::string nm = name;
    return row(
        name, 2, "self: any; other: " + db.label,
        "self any shape; other broadcastable to it, or a number",
        [=](Draw& d) {
          Tensor x = d.values(d.shape(), Domain::any());
          OpParams p;
          p.variant = d.integer(0, 3) == 0 ? 1 : 0;
          if (p.variant == 1) {
            p.reals = {db.project(1.5)};
            return make({x}, p, nm + "(self " + sh(x) + ", 1.5)");
          }
          Tensor o = d.values(draw_source(d, x.sizes()), db);
          return make({x, o}, p, nm + "(self " + sh(x) + ", other " + sh(o) + ")");
        },
        [fn](const TensorList& in, const OpParams& p) {
          Tensor y = in[0] * 1.0;  // a non-leaf copy that may be written
          if (p.variant == 1)
            fn(y, scalar_tensor(p.r(0), TensorOptions().dtype(kFloat64).device(y.device())));
          else
            fn(y, in[1]);
          return TensorList{y};
        },
        [g](const TensorList& in, const OpParams& p) {
          if (p.variant == 1)
            return TensorList{map1(in[0], [&](double a) { return g(a, p.r(0)); })};
          return TensorList{map2(in[0], in[1], g)};
        });
  };
  t.push_back(inplace_binary(
      "add_", Domain::any(), [](Tensor& y, const Tensor& o) { y.add_(o); },
      [](double a, double b) { return a + b; }));
  t.push_back(inplace_binary(
      "sub_", Domain::any(), [](Tensor& y, const Tensor& o) { y.sub_(o); },
      [](double a, double b) { return a - b; }));
  t.push_back(inplace_binary(
      "mul_", Domain::any(), [](Tensor& y, const Tensor& o) { y.mul_(o); },
      [](double a, double b) { return a * b; }));
  t.push_back(inplace_binary(
      "div_", Domain::nonzero(), [](Tensor& y, const Tensor& o) { y.div_(o); },
      [](double a, double b) { return a / b; }));
  auto fill_like = [&](std::string name, bool zero) {
    const std::string nm = name;
    return row(
        name, 1, "any", "any shape; the result is constant (its gradient is zero)",
        [nm](Draw& d) {
          Tensor x = d.values(d.shape(), Domain::any());
          return make({x}, {}, nm + "(self " + sh(x) + ")");
        },
        [zero](const TensorList& in, const OpParams&) {
          Tensor y = in[0] * 1.0;
          if (zero)
            y.zero_();
          else
            y.fill_(0.25);
          return TensorList{y, in[0] * 2.0};  // the second output keeps a path to x
        },
        [zero](const TensorList& in, const OpParams&) {
          return TensorList{full(in[0].sizes(), zero ? 0.0 : 0.25, f64()),
                            map1(in[0], [](double x) { return 2 * x; })};
        });
  };
  t.push_back(fill_like("fill_", false));
  t.push_back(fill_like("zero_", true));
  t.push_back(row(
      "copy_", 2, "any", "self any shape; src broadcastable to it",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        Tensor s = d.values(draw_source(d, x.sizes()), Domain::any());
        return make({x, s}, {}, "copy_(self " + sh(x) + ", src " + sh(s) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.copy_(in[1]);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams&) {
        return TensorList{expand_ref(in[1], in[0].sizes())};
      }));
  t.push_back(row(
      "clamp_", 1, "x: away from the bounds -0.5 and 0.7", "any shape",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::away_from({-0.5, 0.7}));
        return make({x}, {}, "clamp_(self " + sh(x) + ", -0.5, 0.7)");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.clamp_(-0.5, 0.7);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams&) {
        return TensorList{map1(in[0], [](double x) { return std::min(std::max(x, -0.5), 0.7); })};
      }));
  t.push_back(row(
      "masked_fill_", 1, "x: any; mask: bool", "any shape; a mask broadcastable to it",
      [](Draw& d) {
        Tensor x = d.values(d.shape(), Domain::any());
        Tensor m = d.mask(draw_source(d, x.sizes()));
        return make({x, m}, {}, "masked_fill_(self " + sh(x) + ", mask " + sh(m) + ", -1.5)");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.masked_fill_(in[1], -1.5);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams&) {
        Vec m = V(expand_ref(in[1].to(kFloat64), in[0].sizes())), v = V(in[0]);
        for (size_t i = 0; i < v.size(); ++i)
          if (m[i] != 0) v[i] = -1.5;
        return TensorList{T(v, in[0].sizes())};
      }));
  t.push_back(row(
      "index_put_", 2, "self, values: any",
      "a bool mask of self's shape, or distinct int64 rows; values broadcast",
      [](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 1);
        Tensor x = d.values(d.shape(1, 4), Domain::any());
        if (p.variant == 0) {
          Tensor m = d.mask(x.sizes());
          Tensor v = d.values(draw_source(d, x.sizes()), Domain::any());
          return make({x, m, v}, p,
                      "index_put_(self " + sh(x) + ", mask " + sh(m) + ", values " + sh(v) + ")");
        }
        Dims perm = draw_perm(d, x.size(0));
        const int64_t k = d.integer(1, x.size(0));
        Tensor rows = from_vector(std::vector<int64_t>(perm.begin(), perm.begin() + k), {k});
        Shape vs = x.sizes();
        vs[0] = k;
        Tensor v = d.values(draw_source(d, vs), Domain::any());
        return make({x, rows, v}, p,
                    "index_put_(self " + sh(x) + ", rows " + sh(rows) + ", values " + sh(v) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        Tensor y = in[0] * 1.0;
        y.index_put_(in[1], in[2]);
        return TensorList{y};
      },
      [](const TensorList& in, const OpParams& p) {
        Vec v = V(in[0]);
        if (p.variant == 0) {
          Vec m = V(in[1].to(kFloat64)), vals = V(expand_ref(in[2], in[0].sizes()));
          for (size_t i = 0; i < v.size(); ++i)
            if (m[i] != 0) v[i] = vals[i];
          return TensorList{T(v, in[0].sizes())};
        }
        auto rows = in[1].to_vector<int64_t>();
        Shape vs = in[0].sizes();
        vs[0] = static_cast<int64_t>(rows.size());
        Vec vals = V(expand_ref(in[2], vs));
        for (size_t i = 0; i < vals.size(); ++i) {
          Shape c = unravel_index(static_cast<int64_t>(i), vs);
          c[0] = rows[c[0]];
          v[flat_of(c, in[0].sizes())] = vals[i];
        }
        return TensorList{T(v, in[0].sizes())};
      }));

  // ---- nn ops (ops/nn_ops.hpp) ------------------------------------------------------------
  t.push_back(row(
      "linear", 3, "any", "x [..., in] (rank 1-3); weight [out, in]; bias [out] or none",
      [any](Draw& d) {
        Shape xs = d.shape(1, 3, 4);
        const int64_t out = d.integer(1, 4);
        Tensor x = d.values(xs, any), w = d.values({out, xs.back()}, any);
        OpParams p;
        p.variant = d.integer(0, 1);
        if (p.variant == 1) return make({x, w}, p, "linear(x " + sh(x) + ", weight " + sh(w) + ")");
        Tensor b = d.values({out}, any);
        return make({x, w, b}, p,
                    "linear(x " + sh(x) + ", weight " + sh(w) + ", bias " + sh(b) + ")");
      },
      [](const TensorList& in, const OpParams&) {
        return TensorList{linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
      },
      [matmul_ref](const TensorList& in, const OpParams&) {
        Tensor y = matmul_ref(in[0], permute_ref(in[1], {1, 0}));
        if (in.size() > 2) y = map2(y, in[2], [](double a, double b) { return a + b; });
        return TensorList{y};
      }));

  t.push_back(row(
      "threshold_backward", 2, "grad: any; y: away from the threshold",
      "grad and y of one shape; threshold 0 or 0.5",
      [any](Draw& d) {
        OpParams p;
        p.reals = {d.choose(std::vector<double>{0.0, 0.5})};
        Tensor g = d.values(d.shape(), any);
        Tensor y = d.values(g.sizes(), Domain::away_from({p.reals[0]}));
        return make({g, y}, p,
                    "threshold_backward(grad " + sh(g) + ", y, " + std::to_string(p.r(0)) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{threshold_backward(in[0], in[1], p.r(0))};
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{
            map2(in[0], in[1], [t = p.r(0)](double g, double y) { return y > t ? g : 0.0; })};
      }));
  t.back().notes = "y is a mask: its gradient is zero (checked, away from the threshold)";

  // A 2-D window that fits an input of H x W: kernel, dilation, padding (<= kernel / 2), stride.
  struct Win {
    int64_t kh, kw, dh, dw, ph, pw, sh, sw;
    int64_t out(int64_t n, int64_t k, int64_t dd, int64_t pp, int64_t ss) const {
      return (n + 2 * pp - dd * (k - 1) - 1) / ss + 1;
    }
    int64_t oh(int64_t h) const { return out(h, kh, dh, ph, sh); }
    int64_t ow(int64_t w) const { return out(w, kw, dw, pw, sw); }
    std::vector<int64_t> ints() const { return {kh, kw, dh, dw, ph, pw, sh, sw}; }
    static Win of(const OpParams& p) {
      return {p.i(0), p.i(1), p.i(2), p.i(3), p.i(4), p.i(5), p.i(6), p.i(7)};
    }
  };
  auto draw_win = [](Draw& d, bool pool) {
    Win w{};
    w.kh = d.integer(1, 3), w.kw = d.integer(1, 3);
    w.dh = d.integer(1, 2), w.dw = d.integer(1, 2);
    w.ph = d.integer(0, w.kh / 2), w.pw = d.integer(0, w.kw / 2);
    w.sh = d.integer(1, pool ? 3 : 2), w.sw = d.integer(1, pool ? 3 : 2);
    return w;
  };
  // H (or W) so that the window fits at least once: n + 2p >= d (k - 1) + 1.
  auto fit = [](Draw& d, int64_t k, int64_t dd, int64_t pp) {
    return std::max<int64_t>(1, dd * (k - 1) + 1 - 2 * pp) + d.integer(0, 3);
  };
  auto win_text = [](const Win& w) {
    return "kernel [" + std::to_string(w.kh) + ", " + std::to_string(w.kw) + "], dilation [" +
           std::to_string(w.dh) + ", " + std::to_string(w.dw) + "], padding [" +
           std::to_string(w.ph) + ", " + std::to_string(w.pw) + "], stride [" +
           std::to_string(w.sh) + ", " + std::to_string(w.sw) + "]";
  };
  t.push_back(row(
      "unfold", 1, "any", "[N, C, H, W] or [C, H, W]; a window that fits",
      [any, draw_win, fit, win_text](Draw& d) {
        Win w = draw_win(d, false);
        Shape s = {d.integer(1, 2), d.integer(1, 3), fit(d, w.kh, w.dh, w.ph),
                   fit(d, w.kw, w.dw, w.pw)};
        OpParams p;
        p.variant = d.integer(0, 3) == 0 ? 1 : 0;  // 1: unbatched
        if (p.variant == 1) s.erase(s.begin());
        p.ints = w.ints();
        Tensor x = d.values(s, any);
        return make({x}, p, "unfold(x " + sh(x) + ", " + win_text(w) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        return TensorList{unfold(in[0], {w.kh, w.kw}, {w.dh, w.dw}, {w.ph, w.pw}, {w.sh, w.sw})};
      }));
  t.push_back(row(
      "fold", 1, "any", "[N, C*kh*kw, L] or 2-D; output_size and a window that fits it",
      [any, draw_win, fit, win_text](Draw& d) {
        Win w = draw_win(d, false);
        const int64_t H = fit(d, w.kh, w.dh, w.ph), W = fit(d, w.kw, w.dw, w.pw),
                      C = d.integer(1, 2);
        OpParams p;
        p.variant = d.integer(0, 3) == 0 ? 1 : 0;
        p.ints = w.ints();
        p.shape = {H, W};
        Shape s = {d.integer(1, 2), C * w.kh * w.kw, w.oh(H) * w.ow(W)};
        if (p.variant == 1) s.erase(s.begin());
        Tensor x = d.values(s, any);
        return make(
            {x}, p,
            "fold(x " + sh(x) + ", output_size " + shape_str(p.shape) + ", " + win_text(w) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        return TensorList{fold(in[0], {p.shape[0], p.shape[1]}, {w.kh, w.kw}, {w.dh, w.dw},
                               {w.ph, w.pw}, {w.sh, w.sw})};
      }));
  t.push_back(row(
      "conv2d", 3, "any",
      "input [N, C, H, W] or [C, H, W]; weight [O, C, kh, kw]; bias [O] or none; stride, padding, "
      "dilation",
      [any, draw_win, fit, win_text](Draw& d) {
        Win w = draw_win(d, false);
        const int64_t C = d.integer(1, 3), O = d.integer(1, 3);
        Shape s = {d.integer(1, 2), C, fit(d, w.kh, w.dh, w.ph), fit(d, w.kw, w.dw, w.pw)};
        OpParams p;
        p.variant = d.integer(0, 3);  // bit 0: no bias, bit 1: unbatched
        if (p.variant & 2) s.erase(s.begin());
        p.ints = w.ints();
        Tensor x = d.values(s, any), wt = d.values({O, C, w.kh, w.kw}, any);
        if (p.variant & 1)
          return make({x, wt}, p,
                      "conv2d(x " + sh(x) + ", weight " + sh(wt) + ", " + win_text(w) + ")");
        Tensor b = d.values({O}, any);
        return make({x, wt, b}, p,
                    "conv2d(x " + sh(x) + ", weight " + sh(wt) + ", bias, " + win_text(w) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        return TensorList{conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), {w.sh, w.sw},
                                 {w.ph, w.pw}, {w.dh, w.dw})};
      },
      [](const TensorList& in, const OpParams& p) {
        // out[n, o, i, j] = b[o] + Σ_c,a,b x[n, c, i*s - p + a*d, j*s - p + b*d] * w[o, c, a, b]
        const Win w = Win::of(p);
        Tensor x = in[0].dim() == 3 ? T(V(in[0]), {1, in[0].size(0), in[0].size(1), in[0].size(2)})
                                    : in[0];
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), O = in[1].size(0);
        const int64_t oh = w.oh(H), ow = w.ow(W);
        Vec xv = V(x), wv = V(in[1]),
            bv = in.size() > 2 ? V(in[2]) : Vec(static_cast<size_t>(O), 0.0), r;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                double acc = bv[o];
                for (int64_t c = 0; c < C; ++c)
                  for (int64_t a = 0; a < w.kh; ++a)
                    for (int64_t b = 0; b < w.kw; ++b) {
                      const int64_t y = i * w.sh - w.ph + a * w.dh, z = j * w.sw - w.pw + b * w.dw;
                      if (y < 0 || y >= H || z < 0 || z >= W) continue;
                      acc += xv[((n * C + c) * H + y) * W + z] *
                             wv[((o * C + c) * w.kh + a) * w.kw + b];
                    }
                r.push_back(acc);
              }
        Shape out = {N, O, oh, ow};
        if (in[0].dim() == 3) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "max_pool2d", 1, "any, distinct (no ties inside a window)",
      "[N, C, H, W] or [C, H, W]; kernel, stride (default = kernel), padding <= kernel / 2, "
      "dilation",
      [draw_win, fit, win_text](Draw& d) {
        Win w = draw_win(d, true);
        // NOTE: with dilation > 1 and padding a window can fall entirely in the padding; the
        // kernel then outputs -inf and sends the gradient to element 0 (reported, not covered).
        if (w.dh > 1) w.ph = 0;
        if (w.dw > 1) w.pw = 0;
        OpParams p;
        p.variant = d.integer(0, 3);  // bit 0: default stride, bit 1: unbatched
        if (p.variant & 1) w.sh = w.kh, w.sw = w.kw;
        Shape s = {d.integer(1, 2), d.integer(1, 2), fit(d, w.kh, w.dh, w.ph),
                   fit(d, w.kw, w.dw, w.pw)};
        if (p.variant & 2) s.erase(s.begin());
        p.ints = w.ints();
        Tensor x = d.values(s, Domain::any().distinct_values());
        return make({x}, p, "max_pool2d(x " + sh(x) + ", " + win_text(w) + ")");
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        std::optional<IntPair> stride;
        if (!(p.variant & 1)) stride = IntPair(w.sh, w.sw);
        return TensorList{max_pool2d(in[0], {w.kh, w.kw}, stride, {w.ph, w.pw}, {w.dh, w.dw})};
      },
      [](const TensorList& in, const OpParams& p) {
        const Win w = Win::of(p);
        Tensor x = in[0].dim() == 3 ? T(V(in[0]), {1, in[0].size(0), in[0].size(1), in[0].size(2)})
                                    : in[0];
        const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), oh = w.oh(H),
                      ow = w.ow(W);
        Vec xv = V(x), r;
        for (int64_t n = 0; n < N * C; ++n)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double m = -INFINITY;
              for (int64_t a = 0; a < w.kh; ++a)
                for (int64_t b = 0; b < w.kw; ++b) {
                  const int64_t y = i * w.sh - w.ph + a * w.dh, z = j * w.sw - w.pw + b * w.dw;
                  if (y >= 0 && y < H && z >= 0 && z < W) m = std::max(m, xv[(n * H + y) * W + z]);
                }
              r.push_back(m);
            }
        Shape out = {N, C, oh, ow};
        if (in[0].dim() == 3) out.erase(out.begin());
        return TensorList{T(r, out)};
      }));
  t.push_back(row(
      "dropout", 1, "any",
      "any shape; p in {0, 0.3, 0.5, 1}; train or not; a fixed generator seed per case",
      [any](Draw& d) {
        Tensor x = d.values(d.shape(), any);
        OpParams p;
        p.reals = {d.choose(std::vector<double>{0.3, 0.5, 0.0, 1.0})};
        p.ints = {static_cast<int64_t>(d.seed() >> 1), d.integer(0, 4) == 0 ? 0 : 1};
        return make({x}, p,
                    "dropout(x " + sh(x) + ", p=" + std::to_string(p.r(0)) +
                        (p.i(1) ? ", train)" : ", eval)"));
      },
      [](const TensorList& in, const OpParams& p) {
        Generator g(
            static_cast<uint64_t>(p.i(0)));  // the same mask on every call: fn stays a function
        return TensorList{dropout(in[0], p.r(0), p.i(1) != 0, &g)};
      }));
  t.back().notes = "the mask is drawn from a generator reseeded on every call";
  t.push_back(row(
      "batch_norm", 5, "input: any, distinct; running_var: positive",
      "[N, C], [N, C, L] or [N, C, H, W]; training (batch stats) or eval (running stats); "
      "weight/bias or none",
      [any](Draw& d) {
        OpParams p;
        p.variant = d.integer(0, 3);  // bit 0: eval (running stats), bit 1: no weight/bias
        Shape s = d.shape(2, 4, 3);
        if (!(p.variant & 1) && numel_of(s) / s[1] < 2) s[0] = 2;
        const int64_t C = s[1];
        Tensor x = d.values(s, any.distinct_values(0.05));
        TensorList in{x};
        if (p.variant & 1)
          in.push_back(d.values({C}, any)), in.push_back(d.values({C}, Domain::positive(0.5, 2.0)));
        if (!(p.variant & 2)) in.push_back(d.values({C}, any)), in.push_back(d.values({C}, any));
        return make(in, p,
                    "batch_norm(x " + sh(x) + ((p.variant & 1) ? ", eval" : ", training") +
                        ((p.variant & 2) ? ")" : ", weight, bias)"));
      },
      [](const TensorList& in, const OpParams& p) {
        const bool eval = p.variant & 1, affine = !(p.variant & 2);
        Tensor rm = eval ? in[1] : Tensor(), rv = eval ? in[2] : Tensor();
        const size_t k = eval ? 3 : 1;
        return TensorList{batch_norm(in[0], rm, rv, affine ? in[k] : Tensor(),
                                     affine ? in[k + 1] : Tensor(), !eval)};
      },
      [](const TensorList& in, const OpParams& p) {
        const bool eval = p.variant & 1, affine = !(p.variant & 2);
        const Tensor& x = in[0];
        const int64_t C = x.size(1);
        Vec mu(static_cast<size_t>(C)), var(static_cast<size_t>(C));
        if (eval) {
          mu = V(in[1]);
          var = V(in[2]);
        } else {
          Tensor xt = permute_ref(x, [&] {
            Dims perm{1, 0};
            for (int64_t k = 2; k < x.dim(); ++k) perm.push_back(k);
            return perm;
          }());
          Vec xv = V(xt);
          const int64_t per = x.numel() / C;
          for (int64_t c = 0; c < C; ++c) {
            double s = 0, q = 0;
            for (int64_t i = 0; i < per; ++i) s += xv[c * per + i];
            mu[c] = s / static_cast<double>(per);
            for (int64_t i = 0; i < per; ++i)
              q += (xv[c * per + i] - mu[c]) * (xv[c * per + i] - mu[c]);
            var[c] = q / static_cast<double>(per);
          }
        }
        const size_t k = eval ? 3 : 1;
        Vec wv = affine ? V(in[k]) : Vec(static_cast<size_t>(C), 1.0),
            bv = affine ? V(in[k + 1]) : Vec(static_cast<size_t>(C), 0.0);
        Vec xv = V(x), r(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          const int64_t c = unravel_index(static_cast<int64_t>(i), x.sizes())[1];
          r[i] = (xv[i] - mu[c]) / std::sqrt(var[c] + 1e-5) * wv[c] + bv[c];
        }
        return TensorList{T(r, x.sizes())};
      }));
  t.push_back(row(
      "layer_norm", 3, "input: any, distinct",
      "rank 1-4; normalized_shape = the last 1+ dims; weight/bias or none",
      [any](Draw& d) {
        Shape s = d.shape(1, 4, 4);
        const int64_t k = d.integer(1, static_cast<int64_t>(s.size()));
        OpParams p;
        p.shape = Shape(s.end() - k, s.end());
        if (numel_of(p.shape) < 2) s.back() = p.shape.back() = 2;
        p.variant = d.integer(0, 1);  // 1: no weight/bias
        Tensor x = d.values(s, any.distinct_values(0.05));
        if (p.variant)
          return make({x}, p, "layer_norm(x " + sh(x) + ", " + shape_str(p.shape) + ")");
        Tensor w = d.values(p.shape, any), b = d.values(p.shape, any);
        return make({x, w, b}, p,
                    "layer_norm(x " + sh(x) + ", " + shape_str(p.shape) + ", weight, bias)");
      },
      [](const TensorList& in, const OpParams& p) {
        return TensorList{layer_norm(in[0], p.shape, in.size() > 1 ? in[1] : Tensor(),
                                     in.size() > 1 ? in[2] : Tensor())};
      },
      [](const TensorList& in, const OpParams& p) {
        const int64_t per = numel_of(p.shape);
        Vec xv = V(in[0]), r(xv.size());
        Vec wv = in.size() > 1 ? V(in[1]) : Vec(static_cast<size_t>(per), 1.0);
        Vec bv = in.size() > 1 ? V(in[2]) : Vec(static_cast<size_t>(per), 0.0);
        for (size_t g = 0; g < xv.size(); g += static_cast<size_t>(per)) {
          double m = 0, q = 0;
          for (int64_t i = 0; i < per; ++i) m += xv[g + i];
          m /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i) q += (xv[g + i] - m) * (xv[g + i] - m);
          q /= static_cast<double>(per);
          for (int64_t i = 0; i < per; ++i)
            r[g + i] = (xv[g + i] - m) / std::sqrt(q + 1e-5) * wv[i] + bv[i];
        }
        return TensorList{T(r, in[0].sizes())};
      }));
  return t;
}

}  // namespace

const std::vector<OpSpec>& op_table() {
  static const std::vector<OpSpec> table = build_table();
  return table;
}

const OpSpec& op_spec(const std::string& name) {
  for (const auto& s : op_table())
    if (s.name == name) return s;
  throw ValueError(
      error_message("op_spec", "no row named '" + name + "' in the op table", "a row name", name));
}

const std::map<std::string, std::string>& op_table_exemptions() {
  static const std::map<std::string, std::string> m = {
      {"sign", "no gradient (piecewise constant)"},
      {"gt", "comparison: bool result"},
      {"lt", "comparison: bool result"},
      {"ge", "comparison: bool result"},
      {"le", "comparison: bool result"},
      {"eq", "comparison: bool result"},
      {"ne", "comparison: bool result"},
      {"logical_and", "logic: bool result"},
      {"logical_or", "logic: bool result"},
      {"logical_not", "logic: bool result"},
      {"isfinite", "predicate: bool result"},
      {"isnan", "predicate: bool result"},
      {"argmax", "int64 result"},
      {"argmin", "int64 result"},
      {"detach", "cuts the graph: no gradient by design"},
      {"detach_", "cuts the graph: no gradient by design"},
      {"requires_grad_", "sets a flag"},
      {"mutable_grad", "the .grad slot, not an op"},
      {"t", "transpose(0, 1): the transpose row"},
      {"expand_as", "expand(other.sizes()): the expand row"},
      {"max_pool2d_with_indices", "max_pool2d plus its indices: the max_pool2d row"},
      {"cuda", "to(Device(kCUDA)): every row runs through it in the CUDA parity checks (checks/cuda)"},
      {"cpu", "to(Device(kCPU)): every row runs through it in the CUDA parity checks (checks/cuda)"},
  };
  return m;
}

}  // namespace gradlab::testing
