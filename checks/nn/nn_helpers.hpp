#pragma once
// Helpers for the nn and optim checks: float64 tensors from recorded vectors, gradcheck wrappers.

#include <gradlab/nn/nn.hpp>
#include <gradlab/optim/optim.hpp>
#include <gradlab/testing/gradcheck.hpp>

#include "common/check_helpers.hpp"

namespace gradlab::checks {

/// A float64 tensor of `shape` from row-major values.
inline Tensor d64(const std::vector<double>& v, const Shape& shape, bool rg = false) {
  Tensor t = from_vector(v, shape, TensorOptions().dtype(kFloat64));
  if (rg) t.requires_grad_();
  return t;
}

/// gradcheck in float64 (full Jacobian for small inputs) that reports the failing entries.
inline ::testing::AssertionResult grad_ok(const std::function<Tensor(const TensorList&)>& fn,
                                          const TensorList& in, const std::string& name) {
  auto r =
      testing::gradcheck(fn, in, testing::GradcheckOptions().raise_exception(false).name(name));
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.text();
}

/// Same, for second derivatives.
inline ::testing::AssertionResult gradgrad_ok(const std::function<Tensor(const TensorList&)>& fn,
                                              const TensorList& in, const std::string& name) {
  auto r = testing::gradgradcheck(fn, in, {},
                                  testing::GradcheckOptions().raise_exception(false).name(name));
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.text();
}

/// Random float64 leaf requiring grad.
inline Tensor rnd64(const Shape& shape, uint64_t seed) {
  Generator g(seed);
  return randn(shape, TensorOptions().dtype(kFloat64), &g).requires_grad_();
}

}  // namespace gradlab::checks

namespace gradlab::checks {

/// Central differences of loss() with respect to every element of `param` (a leaf, changed in
/// place and restored), compared with the gradient backward() leaves in param.grad().
inline ::testing::AssertionResult param_grad_ok(const std::function<Tensor()>& loss, Tensor param,
                                                double eps = 1e-6, double tol = 1e-6) {
  param.zero_grad();
  loss().backward();
  if (!param.grad().defined())
    return ::testing::AssertionFailure() << "no gradient reached the parameter";
  const std::vector<double> analytic = param.grad().to_vector<double>();
  Tensor flat = param.detach().reshape({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    NoGradGuard ng;
    const double v = flat[i].item<double>();
    flat[i].fill_(v + eps);
    const double up = loss().item<double>();
    flat[i].fill_(v - eps);
    const double down = loss().item<double>();
    flat[i].fill_(v);
    const double numeric = (up - down) / (2 * eps);
    if (std::abs(numeric - analytic[static_cast<size_t>(i)]) > tol * (1 + std::abs(numeric)))
      return ::testing::AssertionFailure()
             << "element " << i << ": analytic " << analytic[static_cast<size_t>(i)] << ", numeric "
             << numeric;
  }
  param.zero_grad();
  return ::testing::AssertionSuccess();
}

/// The message of the exception `f` throws as E; "wrong exception type: ..." or "no exception"
/// otherwise, so an EXPECT_THAT(error_of<E>(...), HasSubstr(...)) names what happened.
template <class E, class Fn>
std::string error_of(Fn f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

}  // namespace gradlab::checks
