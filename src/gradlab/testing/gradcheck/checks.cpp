// gradcheck's checks beyond the Jacobian: backward is linear in the upstream gradient and
// deterministic, an undefined output gradient acts as zeros, gradients have their input's dtype,
// and fn leaves its inputs as they were.

#include <algorithm>
#include <cmath>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/storage.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing::gradcheck_detail {

void Checker::linearity() {
  const double a = 0.5 + gen_.uniform(), b = -(0.5 + gen_.uniform());
  Vec u1 = random_like_outputs(), u2 = random_like_outputs(), u12(u1.size());
  for (size_t r = 0; r < u1.size(); ++r) u12[r] = a * u1[r] + b * u2[r];
  Vec g1 = analytic_vjp(outs_, u1), g2 = analytic_vjp(outs_, u2), g12 = analytic_vjp(outs_, u12);
  double worst = 0;
  int64_t where = -1;
  double got = 0, want = 0;
  for (size_t c = 0; c < g1.size(); ++c) {
    const double rhs = a * g1[c] + b * g2[c];
    const double err = std::abs(g12[c] - rhs);
    const double tol = o_.atol_ + o_.rtol_ * std::abs(rhs);
    if (!(err <= tol) && (where < 0 || err > worst || !std::isfinite(err))) {
      worst = err;
      where = static_cast<int64_t>(c);
      got = g12[c];
      want = rhs;
    }
  }
  if (where < 0) {
    add_check("linearity", true, "");
    return;
  }
  auto [k, j] = locate(where);
  add_check("linearity", false,
            "backward is not linear in the upstream gradient: backward(a*u1 + b*u2) = " + num(got) +
                " but a*backward(u1) + b*backward(u2) = " + num(want) + " at input " +
                std::to_string(diff_[k]) + " " +
                shape_str(unravel_index(j, work_[diff_[k]].sizes())) + " (a=" + fmt("%.3g", a) +
                ", b=" + fmt("%.3g", b) + ")");
}

void Checker::nondeterminism() {
  // Same upstream gradient through the retained graph, then through a freshly built one.
  Vec again = analytic_vjp(outs_, u_);
  TensorList outs2;
  {
    EnableGradGuard eg;
    outs2 = fn_(work_);
  }
  Vec fresh = analytic_vjp(outs2, u_, false);
  double worst = 0;
  int64_t where = -1;
  for (size_t c = 0; c < vjp_.size(); ++c) {
    for (double v : {again[c], fresh[c]}) {
      const double d = std::abs(v - vjp_[c]);
      if (!(d <= o_.nondet_tol_) && (where < 0 || d > worst)) {
        worst = d;
        where = static_cast<int64_t>(c);
      }
    }
  }
  if (where < 0) {
    add_check("nondeterminism", true, "");
    return;
  }
  auto [k, j] = locate(where);
  add_check("nondeterminism", false,
            "backward is not reproducible: two runs with the same upstream gradient differ by " +
                sci(worst) + " > nondet_tol = " + fmt("%g", o_.nondet_tol_) + " at input " +
                std::to_string(diff_[k]) + " " +
                shape_str(unravel_index(j, work_[diff_[k]].sizes())));
}

void Checker::undefined_grad() {
  std::vector<size_t> d;
  for (size_t f = 0; f < float_outs_.size(); ++f)
    if (out_diff_[f]) d.push_back(f);
  if (d.size() < 2) return;  // one output: nothing can be undefined
  size_t at0 = 0;
  std::vector<size_t> offs;
  for (size_t f = 0; f < float_outs_.size(); ++f) {
    offs.push_back(at0);
    at0 += static_cast<size_t>(numel_of(out_shapes_[f]));
  }
  TensorList xs;
  for (int64_t i : diff_) xs.push_back(work_[i]);
  for (size_t f : d) {
    // Only output f gets a gradient; every other one is left undefined.
    const Tensor& t = outs_[float_outs_[f]];
    const int64_t n = numel_of(out_shapes_[f]);
    Vec part(u_.begin() + static_cast<int64_t>(offs[f]),
             u_.begin() + static_cast<int64_t>(offs[f]) + n);
    TensorList r = autograd::grad(
        {t}, xs, {from_vector(part, out_shapes_[f], TensorOptions().dtype(t.dtype()))}, true, false,
        true);
    Vec only;
    for (size_t k = 0; k < xs.size(); ++k) {
      Vec v =
          r[k].defined() ? r[k].to_vector<double>() : Vec(static_cast<size_t>(xs[k].numel()), 0.0);
      only.insert(only.end(), v.begin(), v.end());
    }
    Vec zeros_u(u_.size(), 0.0);
    std::copy(part.begin(), part.end(), zeros_u.begin() + static_cast<int64_t>(offs[f]));
    Vec with_zeros = analytic_vjp(outs_, zeros_u);
    for (size_t c = 0; c < only.size(); ++c) {
      if (std::abs(only[c] - with_zeros[c]) <= o_.atol_ + o_.rtol_ * std::abs(with_zeros[c]))
        continue;
      auto [k, j] = locate(static_cast<int64_t>(c));
      add_check("undefined_grad", false,
                "with only output " + std::to_string(float_outs_[f]) + " given a gradient, input " +
                    std::to_string(diff_[k]) + " " +
                    shape_str(unravel_index(j, work_[diff_[k]].sizes())) + " gets " + num(only[c]) +
                    " but zero gradients for the other outputs give " + num(with_zeros[c]) +
                    ": an undefined output gradient must act as zeros");
      return;
    }
  }
  add_check("undefined_grad", true, "");
}

void Checker::grad_dtypes() {
  for (size_t k = 0; k < last_grads_.size() && k < diff_.size(); ++k) {
    const Tensor& g = last_grads_[k];
    if (g.defined() && g.dtype() != work_[diff_[k]].dtype()) {
      add_check("grad_dtype", false,
                "gradient of input " + std::to_string(diff_[k]) + " is " + to_string(g.dtype()) +
                    " but the input is " + to_string(work_[diff_[k]].dtype()));
      return;
    }
  }
  add_check("grad_dtype", true, "");
}

void Checker::inputs_unchanged() {
  for (size_t i = 0; i < user_.size(); ++i) {
    const Tensor& t = user_[i];
    if (!t.defined()) continue;
    if (t.version() != versions_[i]) {
      add_check("inputs_unchanged", false,
                "fn modified input " + std::to_string(i) + " in place: version " +
                    std::to_string(versions_[i]) + " -> " + std::to_string(t.version()) +
                    ", last write at " + t.impl()->storage->last_write().str() +
                    "; hint: clone() an input before writing to it");
      return;
    }
    if (t.to_vector<double>() != values_[i] &&
        !(std::any_of(values_[i].begin(), values_[i].end(),
                      [](double v) { return std::isnan(v); }))) {
      add_check("inputs_unchanged", false,
                "the values of input " + std::to_string(i) +
                    " changed without a version bump (a raw write "
                    "through data_ptr?)");
      return;
    }
  }
  if (modified_in_eval_) {
    add_check("inputs_unchanged", false,
              "fn modified one of its inputs in place (seen on the perturbed copies gradcheck "
              "passes it)");
    return;
  }
  add_check("inputs_unchanged", true, "");
}

}  // namespace gradlab::testing::gradcheck_detail
