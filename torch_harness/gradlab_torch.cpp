// The LibTorch bridge and checks of gradlab_torch.hpp.

#include "gradlab_torch.hpp"

#include <iostream>
#include <memory>
#include <sstream>

#include <gradlab/autograd/record.hpp>

namespace gradlab_torch {

namespace gl = gradlab;

gl::Tensor to_gradlab(const torch::Tensor& t) {
  if (!t.defined()) return {};
  torch::Tensor c = t.detach().cpu().contiguous();
  gl::Shape shape(c.sizes().begin(), c.sizes().end());
  switch (c.scalar_type()) {
    case torch::kFloat64:
    case torch::kFloat32: {
      torch::Tensor d = c.to(torch::kFloat64).contiguous();
      const double* p = d.data_ptr<double>();
      return gl::from_vector(std::vector<double>(p, p + d.numel()), shape,
                             c.scalar_type() == torch::kFloat64 ? gl::kFloat64 : gl::kFloat32);
    }
    case torch::kBool:
    case torch::kInt64: {
      torch::Tensor d = c.to(torch::kInt64).contiguous();
      const int64_t* p = d.data_ptr<int64_t>();
      gl::Tensor r = gl::from_vector(std::vector<int64_t>(p, p + d.numel()), shape);
      return c.scalar_type() == torch::kBool ? r.to(gl::kBool) : r;
    }
    default:
      throw gl::DTypeError(gl::error_message("gradlab_torch::to_gradlab", "unsupported dtype",
                                             "float32, float64, int64 or bool",
                                             std::string(c.dtype().name()), "convert with .to()"));
  }
}

torch::Tensor to_torch(const gl::Tensor& t) {
  if (!t.defined()) return {};
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (t.is_floating_point()) {
    std::vector<double> v = t.to_vector<double>();
    torch::Tensor r = torch::tensor(v, torch::kFloat64).reshape(shape);
    return t.dtype() == gl::kFloat64 ? r : r.to(torch::kFloat32);
  }
  std::vector<int64_t> v = t.to_vector<int64_t>();
  torch::Tensor r = torch::tensor(v, torch::kInt64).reshape(shape);
  return t.dtype() == gl::kBool ? r.to(torch::kBool) : r;
}

namespace {

// y = fn(x) computed by LibTorch        dx = torch::autograd::grad(y, x, dy)
// Under create_graph (gradlab's grad mode on in backward) the gradient is itself bridged:
// dx = bridge(g)(x, dy) with g = LibTorch's grad with create_graph, so it can be differentiated.
struct TorchFunctionNode : gl::autograd::Node {
  std::string name() const override { return "TorchFunctionBackward"; }
  TorchFn fn;
  std::string label;
  gl::TensorList inputs;  // gradlab inputs (with their graphs), for the bridged backward
  TorchList t_inputs, t_outputs;
  gl::autograd::GradList apply(gl::autograd::GradList&& grads) override {
    if (gl::GradMode::is_enabled()) {  // create_graph: differentiate LibTorch's backward too
      const size_t n_in = inputs.size(), n_out = grads.size();
      TorchFn f = fn;
      TorchFn g = [f, n_in, n_out](const TorchList& xs) {
        TorchList ins(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n_in));
        TorchList outs = f(ins);
        TorchList ys, us, xs_diff;
        for (size_t k = 0; k < n_out && k < outs.size(); ++k)
          if (outs[k].defined() && outs[k].requires_grad() && xs[n_in + k].defined()) {
            ys.push_back(outs[k]);
            us.push_back(xs[n_in + k]);
          }
        for (const torch::Tensor& x : ins)
          if (x.requires_grad()) xs_diff.push_back(x);
        TorchList d = ys.empty() || xs_diff.empty()
                          ? TorchList(xs_diff.size())
                          : torch::autograd::grad(ys, xs_diff, us, /*retain_graph=*/true,
                                                  /*create_graph=*/true, /*allow_unused=*/true);
        TorchList r;
        size_t j = 0;
        for (const torch::Tensor& x : ins) {
          if (!x.requires_grad()) {
            r.push_back(torch::Tensor());
            continue;
          }
          torch::Tensor dj = d[j++];
          r.push_back(dj.defined() ? dj : torch::zeros_like(x));
        }
        return r;
      };
      gl::TensorList args = inputs;
      for (gl::Tensor& dy : grads) args.push_back(dy);
      return bridge(g, args, label + " (backward)");
    }
    TorchList ys, us, xs;
    std::vector<size_t> which;
    for (size_t k = 0; k < t_outputs.size(); ++k)
      if (t_outputs[k].defined() && t_outputs[k].requires_grad() && grads[k].defined()) {
        ys.push_back(t_outputs[k]);
        us.push_back(to_torch(grads[k]).to(t_outputs[k].scalar_type()));
      }
    for (size_t i = 0; i < t_inputs.size(); ++i)
      if (t_inputs[i].defined() && t_inputs[i].requires_grad()) {
        xs.push_back(t_inputs[i]);
        which.push_back(i);
      }
    gl::autograd::GradList out(t_inputs.size());
    if (ys.empty() || xs.empty()) return out;
    TorchList d = torch::autograd::grad(ys, xs, us, /*retain_graph=*/true, /*create_graph=*/false,
                                        /*allow_unused=*/true);
    for (size_t j = 0; j < which.size(); ++j) out[which[j]] = to_gradlab(d[j]);
    return out;
  }
};

}  // namespace

gl::TensorList bridge(const TorchFn& fn, const gl::TensorList& inputs, const std::string& name) {
  TorchList t_in;
  for (const gl::Tensor& x : inputs) {
    torch::Tensor t = to_torch(x);
    if (t.defined() && x.is_floating_point() && x.requires_grad()) t.requires_grad_(true);
    t_in.push_back(t);
  }
  TorchList t_out;
  {
    torch::AutoGradMode on(true);  // LibTorch records, whatever gradlab's mode
    t_out = fn(t_in);
  }
  gl::TensorList out;
  for (const torch::Tensor& t : t_out) out.push_back(to_gradlab(t));
  std::vector<const gl::Tensor*> in_ptrs;
  for (const gl::Tensor& x : inputs) in_ptrs.push_back(&x);
  if (gl::autograd::should_record(in_ptrs)) {
    auto node = std::make_shared<TorchFunctionNode>();
    node->fn = fn;
    node->label = name;
    node->inputs = inputs;
    node->t_inputs = t_in;
    node->t_outputs = t_out;
    std::vector<gl::Tensor*> out_ptrs;
    for (gl::Tensor& o : out) out_ptrs.push_back(&o);
    gl::autograd::connect(node, in_ptrs, out_ptrs);
  }
  return out;
}

namespace {
gl::TensorList gradlab_inputs(const TorchList& inputs) {
  gl::TensorList r;
  for (const torch::Tensor& t : inputs) {
    gl::Tensor g = to_gradlab(t);
    if (t.defined() && t.is_floating_point() && t.requires_grad()) g.requires_grad_(true);
    r.push_back(g);
  }
  return r;
}
gl::testing::TensorFn bridged(const TorchFn& fn) {
  return [fn](const gl::TensorList& in) { return bridge(fn, in); };
}
}  // namespace

gl::testing::GradcheckReport gradcheck(const TorchFn& fn, const TorchList& inputs,
                                       gl::testing::GradcheckOptions options) {
  return gl::testing::gradcheck(bridged(fn), gradlab_inputs(inputs), options);
}

gl::testing::GradcheckReport gradgradcheck(const TorchFn& fn, const TorchList& inputs,
                                           gl::testing::GradcheckOptions options) {
  return gl::testing::gradgradcheck(bridged(fn), gradlab_inputs(inputs), {}, options);
}

std::vector<PropertyResult> check_ops(const std::vector<TorchOpSpec>& table, int64_t cases, uint64_t seed) {
  std::cout << "gradlab_torch::check_ops: seed=" << seed << " (rerun with check_ops(table, " << cases
            << ", " << seed << "))\n";
  std::vector<PropertyResult> results;
  for (const TorchOpSpec& spec : table) {
    PropertyResult res;
    res.name = spec.name;
    res.seed = seed;
    for (int64_t k = 0; k < cases; ++k) {
      gl::testing::GeneratorDraw draw(seed * 1000003u + static_cast<uint64_t>(k), /*allow_views=*/false);
      gl::testing::OpCase c = spec.sample(draw);
      const gl::testing::OpParams params = c.params;
      TorchList t_in;
      for (const gl::Tensor& x : c.inputs) {
        torch::Tensor t = to_torch(x);
        if (x.is_floating_point()) t.requires_grad_(true);
        t_in.push_back(t);
      }
      TorchFn fn = [op = spec.op, params](const TorchList& in) { return op(in, params); };
      std::string why;
      gl::testing::GradcheckOptions o;
      o.name(spec.name).raise_exception(false);
      gl::testing::GradcheckReport r = gradcheck(fn, t_in, o);
      if (!r.ok) why = r.text();
      if (why.empty() && spec.second_order) {
        gl::testing::GradcheckReport rr = gradgradcheck(fn, t_in, o);
        if (!rr.ok) why = "gradgradcheck: " + rr.text();
      }
      if (why.empty() && spec.reference) {
        TorchList got = fn(t_in), want = spec.reference(t_in, params);
        for (size_t i = 0; why.empty() && i < want.size(); ++i)
          if (i >= got.size() || !torch::allclose(got[i].detach(), want[i].detach(), spec.rtol, spec.atol))
            why = "output " + std::to_string(i) + " differs from the reference";
      }
      ++res.cases;
      if (!why.empty()) {
        if (res.failures++ == 0) res.first_failure = c.describe + " (case " + std::to_string(k) + "): " + why;
      }
    }
    results.push_back(res);
  }
  return results;
}

}  // namespace gradlab_torch
