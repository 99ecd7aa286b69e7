#include "gradlab/testing/op_table.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/testing/op_table/support.hpp"

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

// ---- make_layout -------------------------------------------------------------------------------

using table::f64;

Tensor to_layout(const Tensor& t, int64_t layout) {
  NoGradGuard ng;
  if (layout == 1 && t.dim() >= 2) return t.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == 2 && t.dim() >= 1) {
    Shape wide = t.sizes();
    wide.back() *= 2;
    Tensor v = zeros(wide, t.options()).slice(-1, 0, wide.back(), 2);
    v.copy_(t);
    return v;
  }
  return t;
}

Tensor make_layout(const std::vector<double>& vals, const Shape& shape, int64_t layout) {
  Tensor t = from_vector(vals, shape, f64());
  return layout == 0 ? t : to_layout(t, layout).detach();
}

// ---- Draw: shapes made of integer() and shape() --------------------------------------------

Shape Draw::broadcastable_to(const Shape& s) {
  Shape r(s.begin() + integer(0, static_cast<int64_t>(s.size())), s.end());
  for (auto& v : r)
    if (integer(0, 2) == 2) v = 1;
  return r;
}

std::pair<Shape, Shape> Draw::broadcast_pair(int64_t max_rank, int64_t max_size) {
  const Shape out = shape(0, max_rank, max_size);
  Shape a = broadcastable_to(out);
  Shape b = broadcastable_to(out);
  return {a, b};
}

std::array<int64_t, 3> Draw::matmul_sizes(int64_t max_size) {
  return {integer(1, max_size), integer(1, max_size), integer(1, max_size)};
}

std::pair<Shape, Shape> Draw::matmul_pair(int64_t max_size) {
  const int64_t ra = integer(1, 4), rb = integer(1, 4);
  const auto [m, k, n] = matmul_sizes(max_size);
  const Shape batch = matmul_batch();
  auto batch_of = [&](int64_t rank) {  // the trailing rank - 2 batch dims, some set to 1
    Shape s(batch.end() - std::max<int64_t>(rank - 2, 0), batch.end());
    for (auto& v : s)
      if (integer(0, 2) == 2) v = 1;
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

Dims Draw::permutation(int64_t rank) {
  Dims p(static_cast<size_t>(rank));
  std::iota(p.begin(), p.end(), 0);
  for (int64_t k = rank - 1; k > 0; --k) std::swap(p[k], p[integer(0, k)]);
  return p;
}

Shape Draw::factors(int64_t n, int64_t rank) {
  Shape out;
  for (int64_t k = 0; k + 1 < rank; ++k) {
    std::vector<int64_t> divs;
    for (int64_t q = 1; q <= n; ++q)
      if (n % q == 0) divs.push_back(q);
    out.push_back(choose(divs));
    n /= out.back();
  }
  if (rank > 0) out.push_back(n);
  return out;
}

// ---- GeneratorDraw -----------------------------------------------------------------------------

int64_t GeneratorDraw::integer(int64_t lo, int64_t hi) {
  return hi <= lo ? lo : gen_.randint(lo, hi + 1);
}

Shape GeneratorDraw::shape(int64_t min_rank, int64_t max_rank, int64_t max_size) {
  const int64_t r = integer(min_rank, max_rank);
  Shape s;
  for (int64_t k = 0; k < r; ++k) s.push_back(integer(1, max_size));
  return s;
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

// ---- OpParams ----------------------------------------------------------------------------------

namespace {

const char* kind_of(const OpParams::Value& v) {
  switch (v.index()) {
    case 0:
      return "a flag";
    case 1:
      return "an integer";
    case 2:
      return "a real";
    case 3:
      return "a list of integers";
    default:
      return "a word";
  }
}

std::string value_str(const OpParams::Value& v) {
  std::ostringstream os;
  os.precision(6);
  if (const bool* b = std::get_if<bool>(&v))
    os << (*b ? "true" : "false");
  else if (const int64_t* i = std::get_if<int64_t>(&v))
    os << *i;
  else if (const double* r = std::get_if<double>(&v))
    os << *r;
  else if (const auto* l = std::get_if<Dims>(&v))
    os << shape_str(*l);
  else
    os << std::get<std::string>(v);
  return os.str();
}

}  // namespace

OpParams& OpParams::put(const std::string& name, Value v) {
  values_[name] = std::move(v);
  return *this;
}

std::string OpParams::str() const {
  std::string s;
  for (const auto& [name, v] : values_) s += (s.empty() ? "" : ", ") + name + "=" + value_str(v);
  return s;
}

template <class V>
const V& OpParams::get(const std::string& name, const char* kind) const {
  const std::string op = row_.empty() ? std::string("OpParams") : "op table row '" + row_ + "'";
  auto it = values_.find(name);
  if (it == values_.end())
    throw ValueError(
        error_message(op, "the case has no parameter '" + name + "'",
                      "one of the case's parameters", empty() ? std::string("none") : str(),
                      "the row's sampler sets them: OpParams().set(\"" + name + "\", ...)"));
  const V* v = std::get_if<V>(&it->second);
  if (!v)
    throw ValueError(error_message(
        op, "parameter '" + name + "' is read as " + kind, kind,
        std::string(kind_of(it->second)) + " (" + name + "=" + value_str(it->second) + ")"));
  return *v;
}

bool OpParams::flag(const std::string& name) const { return get<bool>(name, "a flag"); }
int64_t OpParams::integer(const std::string& name) const {
  return get<int64_t>(name, "an integer");
}
double OpParams::real(const std::string& name) const {
  if (is_integer(name)) return static_cast<double>(integer(name));
  return get<double>(name, "a real");
}
bool OpParams::is_integer(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && std::holds_alternative<int64_t>(it->second);
}
const Dims& OpParams::dims(const std::string& name) const {
  return get<Dims>(name, "a list of integers");
}
const std::string& OpParams::text(const std::string& name) const {
  return get<std::string>(name, "a word");
}

// ---- the table -------------------------------------------------------------------------------

const std::vector<OpSpec>& op_table() {
  static const std::vector<OpSpec> rows = [] {
    std::vector<OpSpec> t;
    table::add_elementwise_rows(t);
    table::add_reduce_rows(t);
    table::add_linalg_rows(t);
    table::add_shape_rows(t);
    table::add_index_rows(t);
    table::add_loss_rows(t);
    table::add_inplace_rows(t);
    table::add_nn_rows(t);
    table::add_resample_rows(t);
    table::add_rnn_rows(t);
    table::add_activation_rows(t);
    table::add_pool_pad_rows(t);
    return t;
  }();
  return rows;
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
      {"all", "reduction to bool: no gradient"},
      {"any", "reduction to bool: no gradient"},
      {"detach", "cuts the graph: no gradient by design"},
      {"detach_", "cuts the graph: no gradient by design"},
      {"requires_grad_", "sets a flag"},
      {"mutable_grad", "the .grad slot, not an op"},
      {"grad", "the .grad slot, not an op"},
      {"uniform_", "a random fill: no gradient to its values (the write is copy_'s; checks/core tests it)"},
      {"normal_", "a random fill: no gradient to its values (the write is copy_'s; checks/core tests it)"},
      {"t", "transpose(0, 1): the transpose row"},
      {"expand_as", "expand(other.sizes()): the expand row"},
      {"sum_to_size", "sum_to(x, shape) as a Tensor method (LibTorch's name): the sum_to row"},
      {"max_pool2d_with_indices", "max_pool2d plus its indices: the max_pool2d row"},
      {"dropout2d",
       "nn::functional::dropout2d runs feature_dropout on [N, C, H, W] (an unbatched input given a "
       "batch dim): the feature_dropout row"},
      {"dropout3d",
       "nn::functional::dropout3d runs feature_dropout on [N, C, D, H, W] (an unbatched input "
       "given a batch dim): the feature_dropout row"},
      {"cross_entropy",
       "nn::functional::cross_entropy forwards to cross_entropy_loss (LibTorch's top-level name): "
       "that row"},
      {"interpolate",
       "nn::functional::interpolate picks upsample_nearest1d / 2d, upsample_linear1d, "
       "upsample_bilinear2d or adaptive_avg_pool1d / 2d (kArea) by mode and rank: those rows "
       "(the choice itself: checks/nn/resample_test.cpp)"},
      {"logsigmoid", "nn::functional::logsigmoid forwards to log_sigmoid (LibTorch's top-level name): that row"},
      {"softsign",
       "nn::functional::softsign = x / (1 + |x|), composed in nn/ (testing/ may not include nn/): "
       "gradchecked in float64 in checks/nn/activation_parity_test.cpp"},
      {"tanhshrink",
       "nn::functional::tanhshrink = x - tanh(x), composed in nn/: gradchecked in float64 in "
       "checks/nn/activation_parity_test.cpp"},
      {"softmin",
       "nn::functional::softmin = softmax(-x, dim): the softmax and neg rows (and "
       "checks/nn/activation_parity_test.cpp)"},
      {"one_hot", "int64 result: no gradient (checks/nn/activation_parity_test.cpp checks its values and errors)"},
      {"normalize",
       "nn::functional::normalize = x / clamp(norm(x, p, dim), eps), composed in nn/: the norm, clamp and div rows, "
       "and a float64 gradcheck in checks/nn/activation_parity_test.cpp"},
      {"cosine_similarity",
       "nn::functional::cosine_similarity, composed in nn/ from norm, clamp, div, mul, sum: gradchecked in "
       "float64 in checks/nn/activation_parity_test.cpp"},
      {"pairwise_distance",
       "nn::functional::pairwise_distance = norm(x1 - x2 + eps, p, -1): the norm row, and a float64 gradcheck "
       "in checks/nn/activation_parity_test.cpp"},
      {"pad",
       "nn::functional::pad (constant mode) is narrow + cat with constant blocks: those rows, and a float64 "
       "gradcheck in checks/nn/activation_parity_test.cpp"},
      {"max_pool1d_with_indices", "max_pool1d plus its indices: the max_pool1d row"},
      {"adaptive_max_pool2d_with_indices",
       "nn::functional's name for adaptive_max_pool2d (values and indices): the adaptive_max_pool2d row"},
      {"adaptive_max_pool1d_with_indices",
       "nn::functional's name for adaptive_max_pool1d (values and indices): the adaptive_max_pool1d row"},
      {"cuda",
       "to(Device(kCUDA)): every row runs through it in the CUDA parity checks (checks/cuda)"},
      {"cpu",
       "to(Device(kCPU)): every row runs through it in the CUDA parity checks (checks/cuda)"},
  };
  return m;
}

}  // namespace gradlab::testing
