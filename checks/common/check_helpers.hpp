#pragma once
// Small helpers shared by the unit checks: values as doubles, tolerance matchers, error matchers.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

// The engine's own headers (not the umbrella): these checks cover core, autograd and ops.
#include <gradlab/autograd/anomaly.hpp>
#include <gradlab/autograd/engine.hpp>
#include <gradlab/autograd/function.hpp>
#include <gradlab/autograd/grad_mode.hpp>
#include <gradlab/autograd/graph.hpp>
#include <gradlab/autograd/node.hpp>
#include <gradlab/core/factories.hpp>
#include <gradlab/core/generator.hpp>
#include <gradlab/core/tensor.hpp>
#include <gradlab/nn/functional.hpp>
#include <gradlab/ops/ops.hpp>

namespace gradlab::checks {

/// All elements of t, row-major, as doubles.
inline std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
/// All elements of an int64 / bool tensor, row-major.
inline std::vector<int64_t> ivals(const Tensor& t) { return t.to_vector<int64_t>(); }

/// Matches a container of doubles elementwise within `tol` of `expected`.
inline auto Near(const std::vector<double>& expected, double tol = 1e-6) {
  return ::testing::Pointwise(::testing::DoubleNear(tol), expected);
}

/// A float64 tensor from nested braces, optionally requiring grad.
inline Tensor f64(std::initializer_list<double> v, bool rg = false) {
  return tensor(v, TensorOptions().dtype(kFloat64).requires_grad(rg));
}
inline Tensor f64(std::initializer_list<std::initializer_list<double>> v, bool rg = false) {
  return tensor(v, TensorOptions().dtype(kFloat64).requires_grad(rg));
}
/// An int64 tensor (indices, labels).
inline Tensor i64(std::initializer_list<int64_t> v) { return tensor(v); }

/// Matches an exception message that contains every one of `parts`.
inline auto MessageHas(const std::vector<std::string>& parts) {
  std::vector<::testing::Matcher<std::string>> ms;
  for (const auto& p : parts) ms.push_back(::testing::HasSubstr(p));
  return ::testing::AllOfArray(ms);
}

}  // namespace gradlab::checks

/// EXPECT that `stmt` throws exception type `Kind` whose what() contains every string listed.
#define EXPECT_THROW_MSG(stmt, Kind, ...)                                                     \
  EXPECT_THAT([&] { (void)(stmt); },                                                          \
              ::testing::ThrowsMessage<Kind>(::gradlab::checks::MessageHas({__VA_ARGS__})))
