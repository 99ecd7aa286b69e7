// Reductions. sum, mean, var, std and amax/amin are ops; logsumexp and norm are composed.

#include <algorithm>
#include <cmath>

#include "gradlab/ops/internal/reduce.hpp"

namespace gradlab {
using namespace ops_detail;

namespace {

// Wrapped, sorted, unique dims; empty = all dims.
Dims normalize_dims(const char* op, const Tensor& x, const Dims& dims) {
  Dims r;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) r.push_back(d);
    return r;
  }
  for (auto d : dims) r.push_back(wrap_dim(d, x.dim(), op));
  std::sort(r.begin(), r.end());
  GRADLAB_CHECK(std::adjacent_find(r.begin(), r.end()) == r.end(), ShapeError, op,
                "dim appears multiple times in the list of dims", "distinct dims", shape_str(dims));
  if (x.dim() == 0) r.clear();
  return r;
}

// The float dtype a composite reduction runs in; float32 for half types under autocast.
Tensor float_or_self(const Tensor& x_in, const Site& site) {
  const Tensor x = autocast_float32(x_in, site);
  return cast_to(x, float_dtype(x), site);
}

}  // namespace

Tensor sum(const Tensor& x, Site site) { return sum(x, Dims{}, false, site); }
// Reductions are on autocast's float32 list: sum and mean by their structs' kAutocast, the
// composites built on them (logsumexp, norm) at their entry (float_or_self, which var and std
// also use to widen integers).
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, Site site) {
  check_defined("sum", x);
  Tensor xin = x.dtype() == kBool ? x.to(kInt64) : x;  // summing a mask counts it
  if (dims.empty() && !keepdim) return record<Sum<true>>(site, xin, normalize_dims("sum", x, dims), false);
  return record<Sum<false>>(site, xin, normalize_dims("sum", x, dims), keepdim);
}
Tensor mean(const Tensor& x, Site site) { return mean(x, Dims{}, false, site); }
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim, Site site) {
  check_defined("mean", x);
  GRADLAB_CHECK(x.is_floating_point(), DTypeError, "mean", "mean needs a floating point input",
                "float32 or float64", to_string(x.dtype()), "convert with .to(kFloat32)");
  if (dims.empty() && !keepdim) return record<Mean<true>>(site, x, normalize_dims("mean", x, dims), false);
  return record<Mean<false>>(site, x, normalize_dims("mean", x, dims), keepdim);
}
Tensor sum(const Tensor& x, int64_t dim, bool keepdim, Site site) { return sum(x, Dims{dim}, keepdim, site); }
Tensor sum(const Tensor& x, ScalarType dtype, Site site) { return sum(cast_to(x, dtype, site), site); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim, Site site) { return mean(x, Dims{dim}, keepdim, site); }
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim, Site site) {
  check_defined("amax", x);
  return record<AmaxAmin<true>>(site, x, normalize_dims("amax", x, dims), keepdim);
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim, Site site) {
  check_defined("amin", x);
  return record<AmaxAmin<false>>(site, x, normalize_dims("amin", x, dims), keepdim);
}
Tensor max(const Tensor& x, Site site) { return amax(x, {}, false, site); }
Tensor min(const Tensor& x, Site site) { return amin(x, {}, false, site); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  check_defined("max", x);
  auto r = record<MaxMinDim<true>>(site, x, x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "max"), keepdim);
  return {r[0], r[1]};
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  check_defined("min", x);
  auto r = record<MaxMinDim<false>>(site, x, x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "min"), keepdim);
  return {r[0], r[1]};
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined("argmax", x);
  if (!dim) return kern::reduce_index(kern::Reduce::Max, x.reshape({-1}), 0, false).second;
  return kern::reduce_index(kern::Reduce::Max, x, x.dim() == 0 ? 0 : wrap_dim(*dim, x.dim(), "argmax"), keepdim).second;
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined("argmin", x);
  if (!dim) return kern::reduce_index(kern::Reduce::Min, x.reshape({-1}), 0, false).second;
  return kern::reduce_index(kern::Reduce::Min, x, x.dim() == 0 ? 0 : wrap_dim(*dim, x.dim(), "argmin"), keepdim).second;
}
Tensor var(const Tensor& x, const Dims& dims, int64_t correction, bool keepdim, Site site) {
  check_defined("var", x);
  return record<VarStd<false>>(site, float_or_self(x, site), normalize_dims("var", x, dims), correction, keepdim);
}
Tensor std(const Tensor& x, const Dims& dims, int64_t correction, bool keepdim, Site site) {
  check_defined("std", x);
  return record<VarStd<true>>(site, float_or_self(x, site), normalize_dims("std", x, dims), correction, keepdim);
}
Tensor logsumexp(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  return logsumexp(x, Dims{dim}, keepdim, site);
}
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim, Site site) {
  check_defined("logsumexp", x);
  Tensor xf = float_or_self(x, site);
  Dims d = normalize_dims("logsumexp", x, dims);
  // m + log Σ exp(x - m) with m = max (detached: the result does not depend on m).
  // An infinite max (all -inf) would give inf - inf = NaN: use 0 there.
  Tensor m = amax(xf, d, /*keepdim=*/true).detach();
  m = where(isfinite(m), m, 0.0);
  Tensor r = log(sum(exp(xf - m, site), d, /*keepdim=*/true, site), site) + m;
  if (keepdim) return r;
  Shape out;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (!std::binary_search(d.begin(), d.end(), k)) out.push_back(x.size(k));
  return r.reshape(out, site);
}
Tensor norm(const Tensor& x, double p, Site site) {
  check_defined("norm", x);
  Tensor xf = float_or_self(x, site);
  if (p == 2.0) return sqrt(sum(xf * xf, site), site);
  if (p == 1.0) return sum(abs(xf, site), site);
  if (std::isinf(p)) return p > 0 ? amax(abs(xf, site), {}, false, site) : amin(abs(xf, site), {}, false, site);
  return pow(sum(pow(abs(xf, site), p, site), site), 1.0 / p, site);
}
Tensor norm(const Tensor& x, const Scalar& p, const Dims& dims, bool keepdim, Site site) {
  check_defined("norm", x);
  Tensor xf = float_or_self(x, site);
  const double q = p.to_double();
  const Dims d = normalize_dims("norm", x, dims);
  if (q == 2.0) return sqrt(sum(xf * xf, d, keepdim, site), site);
  if (q == 1.0) return sum(abs(xf, site), d, keepdim, site);
  if (std::isinf(q)) return q > 0 ? amax(abs(xf, site), d, keepdim, site) : amin(abs(xf, site), d, keepdim, site);
  return pow(sum(pow(abs(xf, site), q, site), d, keepdim, site), 1.0 / q, site);
}
Tensor norm(const Tensor& x, const Scalar& p, int64_t dim, bool keepdim, Site site) {
  return norm(x, p, Dims{dim}, keepdim, site);
}
// y_i = Σ_{j<=i} x_j along dim, by doubling (Hillis-Steele): after the step with shift k,
// y_i = Σ_{i-2k < j <= i} x_j, so ceil(log2 n) steps of y += (y shifted by k, zeros in front).
// Composed of cat / narrow / add: the backward (the reversed running sum of dy) and every higher
// order come from theirs, on any device. O(n log n) adds instead of n, in log n whole-tensor ops.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype, Site site) {
  check_defined("cumsum", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "cumsum");
  const ScalarType dt = dtype ? *dtype : is_floating_point(x.dtype()) ? x.dtype() : kInt64;
  Tensor y = cast_to(x.dim() == 0 ? x.reshape({1}, site) : x, dt, site);
  const int64_t n = y.size(d);
  for (int64_t k = 1; k < n; k *= 2) {
    Shape front = y.sizes();
    front[static_cast<size_t>(d)] = k;
    const Tensor shifted = cat({zeros(front, TensorOptions().dtype(dt).device(y.device())), narrow(y, d, 0, n - k, site)}, d, site);
    y = add(y, shifted, site);
  }
  return x.dim() == 0 ? y.reshape({}, site) : y;
}

// all / any: bool results (LibTorch's for a bool input; any dtype here reads "nonzero").
Tensor all(const Tensor& x) {
  check_defined("all", x);
  return eq(sum(ne(x, 0)), x.numel());
}
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined("all", x);
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "all");
  return eq(sum(ne(x, 0), Dims{d}, keepdim), x.dim() == 0 ? 1 : x.size(d));
}
Tensor any(const Tensor& x) {
  check_defined("any", x);
  return gt(sum(ne(x, 0)), 0);
}
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined("any", x);
  return gt(sum(ne(x, 0), Dims{x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "any")}, keepdim), 0);
}

}  // namespace gradlab
