// gradcheck and gradgradcheck: the entry points. The engine is gradcheck/checker.hpp (one
// Checker per run, split by concern over gradcheck/*.cpp), the report gradcheck/report.cpp.

#include "gradlab/testing/gradcheck.hpp"

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing {

Shape unravel_index(int64_t flat, const Shape& shape) {
  Shape c(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    c[k] = shape[k] == 0 ? 0 : flat % shape[k];
    flat = shape[k] == 0 ? 0 : flat / shape[k];
  }
  return c;
}

// ---- entry points ----------------------------------------------------------------------------

GradcheckReport gradcheck(const TensorFn& fn, const TensorList& inputs,
                          const GradcheckOptions& options) {
  GRADLAB_CHECK(options.eps_ > 0, ValueError, "gradcheck", "eps must be positive", "eps > 0",
                gradcheck_detail::fmt("%g", options.eps_));
  // CUDA inputs: the checker perturbs CPU copies, and fn gets them moved back to their device
  // (a differentiable copy), its outputs moved to the CPU. So fn's CUDA kernels are what both
  // the numerical and the analytical Jacobian measure.
  bool any_cuda = false;
  for (const Tensor& t : inputs) any_cuda = any_cuda || (t.defined() && t.is_cuda());
  if (any_cuda) {
    TensorList host;
    std::vector<Device> where;
    for (const Tensor& t : inputs) {
      where.push_back(t.defined() ? t.device() : Device());
      host.push_back(t.defined() ? t.detach().cpu().requires_grad_(t.requires_grad()) : t);
    }
    TensorFn on_device = [fn, where](const TensorList& xs) {
      TensorList moved;
      for (size_t i = 0; i < xs.size(); ++i)
        moved.push_back(xs[i].defined() ? xs[i].to(where[i]) : xs[i]);
      TensorList outs = fn(moved);
      for (Tensor& o : outs)
        if (o.defined()) o = o.cpu();
      return outs;
    };
    GradcheckReport r = gradcheck_detail::Checker(on_device, host, options).run();
    if (!r.ok && options.raise_exception_) throw GradcheckError(std::move(r));
    return r;
  }
  GradcheckReport r = gradcheck_detail::Checker(fn, inputs, options).run();
  if (!r.ok && options.raise_exception_) throw GradcheckError(std::move(r));
  return r;
}

GradcheckReport gradcheck(const std::function<Tensor(const TensorList&)>& fn,
                          const TensorList& inputs, const GradcheckOptions& options) {
  return gradcheck(TensorFn([&fn](const TensorList& in) { return TensorList{fn(in)}; }), inputs,
                   options);
}

GradcheckReport gradgradcheck(const TensorFn& fn, const TensorList& inputs,
                              const TensorList& grad_outputs, const GradcheckOptions& options) {
  // Which arguments fn differentiates (the perturbed copies gradcheck passes do not require grad).
  std::vector<bool> diff(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    diff[i] = inputs[i].defined() && inputs[i].is_floating_point() && inputs[i].requires_grad();
  TensorList us = grad_outputs;
  if (us.empty()) {
    TensorList outs;
    {
      NoGradGuard ng;
      outs = fn(inputs);
    }
    Generator gen(derive_seed(options.seed_, 2));
    for (const Tensor& t : outs)
      if (t.defined() && t.is_floating_point())
        us.push_back(randn(t.sizes(), TensorOptions().dtype(kFloat64), &gen).requires_grad_(true));
  }
  const size_t n = inputs.size();
  TensorFn g = [fn, n, diff](const TensorList& all) -> TensorList {
    EnableGradGuard eg;
    TensorList xs(all.begin(), all.begin() + static_cast<int64_t>(n));
    TensorList dx;
    for (size_t i = 0; i < n; ++i) {
      if (!diff[i]) continue;
      if (!xs[i].requires_grad()) xs[i] = xs[i].detach().requires_grad_(true);
      dx.push_back(xs[i]);
    }
    TensorList outs = fn(xs);
    TensorList roots, gos;
    size_t k = n;
    for (const Tensor& t : outs) {
      if (!t.defined() || !t.is_floating_point()) continue;
      if (k >= all.size()) break;
      const Tensor& u = all[k++];
      if (!t.requires_grad()) continue;
      roots.push_back(t);
      gos.push_back(u.to(t.device()).to(t.dtype()));
    }
    TensorList r(dx.size());
    if (!roots.empty())
      r = autograd::grad(roots, dx, gos, true, /*create_graph=*/true, /*allow_unused=*/true);
    for (size_t i = 0; i < r.size(); ++i)
      if (!r[i].defined()) r[i] = zeros_like(dx[i]);
    return r;
  };
  TensorList all = inputs;
  all.insert(all.end(), us.begin(), us.end());
  GradcheckOptions o = options;
  o.name_ = "gradgrad of " + (options.name_.empty() ? std::string("fn") : options.name_);
  o.check_undefined_grad_ =
      false;  // the gradient function's outputs are all defined by construction
  return gradcheck(g, all, o);
}

GradcheckReport gradgradcheck(const std::function<Tensor(const TensorList&)>& fn,
                              const TensorList& inputs, const TensorList& grad_outputs,
                              const GradcheckOptions& options) {
  return gradgradcheck(TensorFn([&fn](const TensorList& in) { return TensorList{fn(in)}; }), inputs,
                       grad_outputs, options);
}

}  // namespace gradlab::testing
