// Elementwise ops. Binary ops see same-shaped, same-dtype inputs: prepare_binary has promoted
// and expanded them (so their backward never has to "unbroadcast": Expand's backward does).

#include <cmath>
#include <numbers>

#include "gradlab/ops/internal/elementwise.hpp"

namespace gradlab {
namespace ops_detail {

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() == b.device()) return;
  throw DeviceError(error_message(op, "expected all tensors to be on the same device, but found two devices",
                                  "both on one device",
                                  a.device().str() + " and " + b.device().str(),
                                  "move one with .to(device) before combining them"));
}

void check_defined(const char* op, const Tensor& x, const char* arg) {
  GRADLAB_CHECK(x.defined(), ValueError, op, std::string(arg) + " is an undefined tensor",
                "a defined tensor", "Tensor()");
}

ScalarType float_dtype(const Tensor& x) { return x.is_floating_point() ? x.dtype() : default_dtype(); }

Tensor wrap_scalar(const Scalar& s, const Tensor& like, const char* op) {
  check_defined(op, like);
  return scalar_tensor(s, TensorOptions().dtype(result_type(like.dtype(), s)).device(like.device()));
}

std::pair<Tensor, Tensor> prepare_binary(const char* op, const Tensor& a, const Tensor& b, const Site& site,
                                         bool to_float) {
  check_defined(op, a, "a");
  check_defined(op, b, "b");
  check_same_device(op, a, b);
  ScalarType dt = promote_types(a.dtype(), b.dtype());
  // PyTorch's result_type: beside a tensor with dims, a 0-d tensor only raises the category
  // (bool < integer < floating): float32 [3] * float64 0-d stays float32.
  if ((a.dim() == 0) != (b.dim() == 0)) {
    const ScalarType d = a.dim() == 0 ? b.dtype() : a.dtype(), z = a.dim() == 0 ? a.dtype() : b.dtype();
    auto category = [](ScalarType t) { return is_floating_point(t) ? 2 : t == kBool ? 0 : 1; };
    if (category(z) <= category(d)) dt = d;
  }
  if (to_float && !is_floating_point(dt)) dt = default_dtype();
  const Shape shape = a.sizes() == b.sizes() ? a.sizes() : broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor x = cast_to(a, dt, site), y = cast_to(b, dt, site);
  if (x.sizes() != shape) x = expand(x, shape, site);
  if (y.sizes() != shape) y = expand(y, shape, site);
  return {x, y};
}

}  // namespace ops_detail

using namespace ops_detail;

namespace {

// Scalars keep the tensor's dtype: wrap them at the tensor's dtype category.
Tensor scalar_like(const Scalar& s, const Tensor& t, const char* op) { return wrap_scalar(s, t, op); }

template <class OpT, class... P>
Tensor float_unary(const char* name, const Tensor& x, const Site& site, P... params) {
  check_defined(name, x);
  return record<OpT>(site, cast_to(x, float_dtype(x), site), params...);
}

Tensor compare(Binary op, const char* name, const Tensor& a, const Tensor& b) {
  check_defined(name, a, "a");
  check_defined(name, b, "b");
  AutoGradMode off(false);
  auto [x, y] = prepare_binary(name, a, b, Site::unknown());
  return kern::binary(op, x, y);
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("add", a, b, site);
  return record<Add>(site, x, y);
}
Tensor add(const Tensor& a, const Scalar& b, Site site) { return add(a, scalar_like(b, a, "add"), site); }
Tensor sub(const Tensor& a, const Tensor& b, Site site) {
  GRADLAB_CHECK(a.dtype() != kBool || b.dtype() != kBool, DTypeError, "sub",
                "subtraction of bool tensors is not supported", "number dtypes", "bool and bool",
                "use logical_xor-like logic, or convert with .to(kInt64)");
  auto [x, y] = prepare_binary("sub", a, b, site);
  return record<Sub>(site, x, y);
}
Tensor sub(const Tensor& a, const Scalar& b, Site site) { return sub(a, scalar_like(b, a, "sub"), site); }
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha, Site site) {
  return alpha.to_double() == 1.0 ? add(a, b, site) : add(a, mul(b, alpha, site), site);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha, Site site) {
  return alpha.to_double() == 1.0 ? sub(a, b, site) : sub(a, mul(b, alpha, site), site);
}
Tensor rsub(const Tensor& a, const Scalar& b, Site site) { return sub(scalar_like(b, a, "rsub"), a, site); }
Tensor mul(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("mul", a, b, site);
  return record<Mul>(site, x, y);
}
Tensor mul(const Tensor& a, const Scalar& b, Site site) { return mul(a, scalar_like(b, a, "mul"), site); }
Tensor div(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("div", a, b, site, /*to_float=*/true);
  return record<Div>(site, x, y);
}
Tensor div(const Tensor& a, const Scalar& b, Site site) {
  check_defined("div", a);
  Tensor s = scalar_tensor(b, TensorOptions().dtype(is_floating_point(a.dtype()) ? a.dtype() : default_dtype()).device(a.device()));
  return div(a, s, site);
}
Tensor rdiv(const Tensor& a, const Scalar& b, Site site) {
  check_defined("rdiv", a);
  Tensor s = scalar_tensor(b, TensorOptions().dtype(is_floating_point(a.dtype()) ? a.dtype() : default_dtype()).device(a.device()));
  return div(s, a, site);
}
Tensor neg(const Tensor& x, Site site) {
  check_defined("neg", x);
  GRADLAB_CHECK(x.dtype() != kBool, DTypeError, "neg", "negation of a bool tensor is not supported",
                "a number dtype", "bool", "use logical_not (operator~) instead");
  return record<Neg>(site, x);
}
namespace {
// An integer power stays integer and is exact (math::pow for int64: repeated squaring). Integer
// tensors never require grad, so nothing is recorded.
Tensor integer_pow(const Tensor& x, const Tensor& e) {
  Tensor a = x.dtype() == kInt64 ? x : x.to(kInt64), b = e.dtype() == kInt64 ? e : e.to(kInt64);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "pow");
  NoGradGuard no_grad;
  return kern::binary(Binary::Pow, a.expand(shape), b.expand(shape));
}
}  // namespace

Tensor pow(const Tensor& x, const Scalar& e, Site site) {
  check_defined("pow", x);
  if (!x.is_floating_point() && !e.is_floating_point()) {
    GRADLAB_CHECK(e.to_long() >= 0, ValueError, "pow", "integers to negative integer powers are not allowed",
                  "an exponent >= 0", std::to_string(e.to_long()),
                  "use a float exponent (x.pow(-1.0)) or a float tensor (x.to(kFloat32))");
    return integer_pow(x, scalar_tensor(e.to_long(), TensorOptions().dtype(kInt64).device(x.device())));
  }
  return float_unary<PowScalar>("pow", x, site, e.to_double());
}
Tensor pow(const Tensor& x, const Tensor& e, Site site) {
  check_defined("pow", x);
  check_defined("pow", e, "exponent");
  // int ^ int stays int64, as in PyTorch (a negative exponent gives 0, or ±1 for a base of ±1).
  if (!x.is_floating_point() && !e.is_floating_point() && !(x.dtype() == kBool && e.dtype() == kBool)) {
    check_same_device("pow", x, e);
    return integer_pow(x, e);
  }
  auto [a, b] = prepare_binary("pow", x, e, site, /*to_float=*/true);
  return record<Pow>(site, a, b);
}
Tensor exp(const Tensor& x, Site site) { return float_unary<Exp>("exp", x, site); }
Tensor log(const Tensor& x, Site site) { return float_unary<Log>("log", x, site); }
Tensor expm1(const Tensor& x, Site site) { return float_unary<Expm1>("expm1", x, site); }
Tensor sqrt(const Tensor& x, Site site) { return float_unary<Sqrt>("sqrt", x, site); }
Tensor abs(const Tensor& x, Site site) {
  check_defined("abs", x);
  if (!x.is_floating_point()) return kern::unary(Unary::Abs, x);
  return record<Abs>(site, x);
}
Tensor sin(const Tensor& x, Site site) { return float_unary<Sin>("sin", x, site); }
Tensor cos(const Tensor& x, Site site) { return float_unary<Cos>("cos", x, site); }
Tensor tanh(const Tensor& x, Site site) { return float_unary<Tanh>("tanh", x, site); }
Tensor sigmoid(const Tensor& x, Site site) { return float_unary<Sigmoid>("sigmoid", x, site); }
Tensor erf(const Tensor& x, Site site) { return float_unary<Erf>("erf", x, site); }
Tensor relu(const Tensor& x, Site site) { return float_unary<Relu>("relu", x, site); }
Tensor leaky_relu(const Tensor& x, double slope, Site site) { return float_unary<LeakyRelu>("leaky_relu", x, site, slope); }
Tensor softplus(const Tensor& x, double beta, double threshold, Site site) {
  GRADLAB_CHECK(beta != 0 && std::isfinite(beta), ValueError, "softplus", "beta must be a finite nonzero number",
                "beta != 0", std::to_string(beta), "softplus(x) = log(1 + exp(beta x)) / beta divides by beta");
  return float_unary<Softplus>("softplus", x, site, beta, threshold);
}
Tensor gelu(const Tensor& x, Site site) {
  // gelu(x) = 0.5 x (1 + erf(x / √2)) in one pass (the composite of mul, add and erf took five
  // passes over memory and five allocations; it stays the op table's reference).
  return float_unary<Gelu>("gelu", x, site);
}
Tensor gelu_backward(const Tensor& grad, const Tensor& self, Site site) {
  auto [g, x] = prepare_binary("gelu_backward", grad, self, site, /*to_float=*/true);
  return record<GeluBackward>(site, g, x);
}
Tensor sign(const Tensor& x) {
  check_defined("sign", x);
  return kern::unary(Unary::Sign, x);
}
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max, Site site) {
  check_defined("clamp", x);
  GRADLAB_CHECK(min || max, ValueError, "clamp", "at least one of min and max must be given",
                "min or max", "neither");
  const double lo = min ? min->to_double() : -INFINITY, hi = max ? max->to_double() : INFINITY;
  if (!x.is_floating_point()) return kern::unary(Unary::Clamp, x, lo, hi);
  return record<Clamp>(site, x, lo, hi);
}
Tensor maximum(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("maximum", a, b, site);
  return record<Maximum>(site, x, y);
}
Tensor minimum(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("minimum", a, b, site);
  return record<Minimum>(site, x, y);
}
Tensor max(const Tensor& a, const Tensor& b, Site site) { return maximum(a, b, site); }
Tensor min(const Tensor& a, const Tensor& b, Site site) { return minimum(a, b, site); }
Tensor logaddexp(const Tensor& a, const Tensor& b, Site site) {
  auto [x, y] = prepare_binary("logaddexp", a, b, site, /*to_float=*/true);
  return record<LogAddExp>(site, x, y);
}
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Site site) {
  check_defined("where", cond, "condition");
  GRADLAB_CHECK(cond.dtype() == kBool, DTypeError, "where", "condition must be a bool tensor", "bool",
                to_string(cond.dtype()), "build it with a comparison, e.g. x > 0");
  auto [x, y] = prepare_binary("where", a, b, site);
  check_same_device("where", cond, x);
  const Shape shape = broadcast_shapes(cond.sizes(), x.sizes(), "where");
  Tensor c = cond.sizes() == shape ? cond : cond.expand(shape);
  if (x.sizes() != shape) {
    x = expand(x, shape, site);
    y = expand(y, shape, site);
  }
  return record<Where>(site, c, x, y);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, Site site) {
  return where(cond, a, scalar_like(b, a, "where"), site);
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, Site site) {
  return where(cond, scalar_like(a, b, "where"), b, site);
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value, Site site) {
  check_defined("masked_fill", x);
  check_defined("masked_fill", mask, "mask");
  GRADLAB_CHECK(mask.dtype() == kBool, DTypeError, "masked_fill", "mask must be a bool tensor", "bool",
                to_string(mask.dtype()), "build it with a comparison, e.g. x > 0");
  Shape s = broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill");
  GRADLAB_CHECK(s == x.sizes(), ShapeError, "masked_fill", "mask must broadcast to the input's shape",
                shape_str(x.sizes()), shape_str(mask.sizes()));
  return where(mask, scalar_like(value, x, "masked_fill"), x, site);
}

Tensor gt(const Tensor& a, const Tensor& b) { return compare(Binary::Gt, "gt", a, b); }
Tensor gt(const Tensor& a, const Scalar& b) { return gt(a, scalar_like(b, a, "gt")); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(Binary::Lt, "lt", a, b); }
Tensor lt(const Tensor& a, const Scalar& b) { return lt(a, scalar_like(b, a, "lt")); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(Binary::Ge, "ge", a, b); }
Tensor ge(const Tensor& a, const Scalar& b) { return ge(a, scalar_like(b, a, "ge")); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(Binary::Le, "le", a, b); }
Tensor le(const Tensor& a, const Scalar& b) { return le(a, scalar_like(b, a, "le")); }
Tensor eq(const Tensor& a, const Tensor& b) { return compare(Binary::Eq, "eq", a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return eq(a, scalar_like(b, a, "eq")); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(Binary::Ne, "ne", a, b); }
Tensor ne(const Tensor& a, const Scalar& b) { return ne(a, scalar_like(b, a, "ne")); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return compare(Binary::And, "logical_and", a.to(kBool), b.to(kBool));
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return compare(Binary::Or, "logical_or", a.to(kBool), b.to(kBool));
}
Tensor logical_not(const Tensor& a) {
  check_defined("logical_not", a);
  return kern::unary(Unary::LogicalNot, a.to(kBool));
}
Tensor isfinite(const Tensor& x) {
  check_defined("isfinite", x);
  return kern::unary(Unary::IsFinite, x);
}
Tensor isnan(const Tensor& x) { return ne(x, x); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.sizes() != b.sizes()) return false;
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isinf(x[i]) || std::isinf(y[i])) {
      if (x[i] != y[i]) return false;
      continue;
    }
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]))) return false;
  }
  return true;
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  return a.to_vector<double>() == b.to_vector<double>();
}

// ---- operators ------------------------------------------------------------------------------

namespace {
template <class FT, class FS>
Tensor binop(const Tensor& a, const Operand& b, FT on_tensor, FS on_scalar) {
  return b.tensor ? on_tensor(a, *b.tensor, b.site) : on_scalar(a, b.scalar, b.site);
}
}  // namespace

Tensor operator+(const Tensor& a, const Operand& b) {
  return binop(a, b, [](auto& x, auto& y, auto s) { return add(x, y, s); }, [](auto& x, auto& y, auto s) { return add(x, y, s); });
}
Tensor operator-(const Tensor& a, const Operand& b) {
  return binop(a, b, [](auto& x, auto& y, auto s) { return sub(x, y, s); }, [](auto& x, auto& y, auto s) { return sub(x, y, s); });
}
Tensor operator*(const Tensor& a, const Operand& b) {
  return binop(a, b, [](auto& x, auto& y, auto s) { return mul(x, y, s); }, [](auto& x, auto& y, auto s) { return mul(x, y, s); });
}
Tensor operator/(const Tensor& a, const Operand& b) {
  return binop(a, b, [](auto& x, auto& y, auto s) { return div(x, y, s); }, [](auto& x, auto& y, auto s) { return div(x, y, s); });
}
Tensor operator+(const LeftScalar& a, const Tensor& b) { return add(b, a.scalar, a.site); }
Tensor operator-(const LeftScalar& a, const Tensor& b) { return rsub(b, a.scalar, a.site); }
Tensor operator*(const LeftScalar& a, const Tensor& b) { return mul(b, a.scalar, a.site); }
Tensor operator/(const LeftScalar& a, const Tensor& b) { return rdiv(b, a.scalar, a.site); }
Tensor operator-(const Tensor& a) { return neg(a); }
// NOTE: the in-place methods return const Tensor& (LibTorch's handle semantics); the compound
// operators return the caller's own handle.
Tensor& operator+=(Tensor& a, const Operand& b) {
  if (b.tensor)
    a.add_(*b.tensor, 1, b.site);
  else
    a.add_(b.scalar, b.site);
  return a;
}
Tensor& operator-=(Tensor& a, const Operand& b) {
  if (b.tensor)
    a.sub_(*b.tensor, 1, b.site);
  else
    a.sub_(b.scalar, b.site);
  return a;
}
Tensor& operator*=(Tensor& a, const Operand& b) {
  if (b.tensor)
    a.mul_(*b.tensor, b.site);
  else
    a.mul_(b.scalar, b.site);
  return a;
}
Tensor& operator/=(Tensor& a, const Operand& b) {
  if (b.tensor)
    a.div_(*b.tensor, b.site);
  else
    a.div_(b.scalar, b.site);
  return a;
}
Tensor operator>(const Tensor& a, const Operand& b) { return b.tensor ? gt(a, *b.tensor) : gt(a, b.scalar); }
Tensor operator<(const Tensor& a, const Operand& b) { return b.tensor ? lt(a, *b.tensor) : lt(a, b.scalar); }
Tensor operator>=(const Tensor& a, const Operand& b) { return b.tensor ? ge(a, *b.tensor) : ge(a, b.scalar); }
Tensor operator<=(const Tensor& a, const Operand& b) { return b.tensor ? le(a, *b.tensor) : le(a, b.scalar); }
Tensor operator==(const Tensor& a, const Operand& b) { return b.tensor ? eq(a, *b.tensor) : eq(a, b.scalar); }
Tensor operator!=(const Tensor& a, const Operand& b) { return b.tensor ? ne(a, *b.tensor) : ne(a, b.scalar); }
Tensor operator~(const Tensor& a) { return logical_not(a); }
Tensor operator&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return logical_or(a, b); }

}  // namespace gradlab
