#pragma once
// Central differences in float64, local to the checks (the full gradcheck lives in
// src/gradlab/testing). f maps the inputs to any tensor; it is reduced with a fixed random
// weight w, so one check covers every output element: L = Σ w ⊙ f(inputs).
//   numeric  dL/dx_j ≈ (L(x + ε e_j) - L(x - ε e_j)) / 2ε      (error O(ε²))
//   analytic dL/dx   = autograd::grad(L, x)

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
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
#include <gradlab/ops/ops.hpp>

namespace gradlab::checks {

using TensorFn = std::function<Tensor(const TensorList&)>;

/// Compares autograd's gradient of Σ w ⊙ f(inputs) with central differences for every input
/// that requires grad (each must be a contiguous float64 leaf). f may itself call
/// autograd::grad(create_graph=true): then this checks second derivatives.
inline ::testing::AssertionResult grads_match_finite_diff(const TensorFn& f, const TensorList& inputs,
                                                          double eps = 1e-6, double atol = 1e-6,
                                                          double rtol = 1e-5) {
  Tensor out = f(inputs);
  Generator gen(20240607);
  const Tensor w = randn(out.sizes(), dtype(kFloat64), &gen);
  TensorList wrt;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) wrt.push_back(t);
  if (wrt.empty()) return ::testing::AssertionFailure() << "no input requires grad";
  const Tensor loss = (out.to(kFloat64) * w).sum();
  const TensorList analytic =
      autograd::grad({loss}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
  auto eval = [&] { return (f(inputs).detach().to(kFloat64) * w).sum().item<double>(); };
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& x = wrt[k];
    if (x.dtype() != kFloat64 || !x.is_contiguous() || !x.is_leaf())
      return ::testing::AssertionFailure() << "input " << k << " must be a contiguous float64 leaf";
    const std::vector<double> an =
        analytic[k].defined() ? analytic[k].to_vector<double>() : std::vector<double>(x.numel(), 0.0);
    double* p = x.data_ptr<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double orig = p[j];
      p[j] = orig + eps;
      const double fp = eval();
      p[j] = orig - eps;
      const double fm = eval();
      p[j] = orig;
      const double num = (fp - fm) / (2 * eps);
      if (!(std::abs(num - an[j]) <= atol + rtol * std::abs(num))) {
        return ::testing::AssertionFailure()
               << "input " << k << " element " << j << ": autograd " << an[j] << ", central difference "
               << num << " (|diff| " << std::abs(num - an[j]) << ")";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace gradlab::checks
