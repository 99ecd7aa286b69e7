// jit::compile's runtime: trace once per input signature, plan it (planner.cpp), then run that
// plan on every call; a fused region records one FusedNode, whose backward runs the region's
// symbolic backward (symbolic_backward.cpp). See compile.hpp for the rules.

#include "gradlab/jit/compile.hpp"

#include "gradlab/jit/plan.hpp"

#include <sstream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/backend/fused.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::jit {

using kern::FusedOutput;
using kern::FusedProgram;
using Reduce = FusedOutput::Reduce;

namespace {

// The fused backward node of one region call.
class FusedNode : public autograd::Node {
 public:
  FusedNode(std::shared_ptr<const Region> r, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& values)
      : region_(std::move(r)), saved_(inputs.size()), values_(values.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      saved_[i].save(inputs[i], this, /*is_output=*/false);
      register_saved(&saved_[i]);
      shapes_.push_back(inputs[i].sizes());
    }
    for (size_t j = 0; j < values.size(); ++j) {
      values_[j].save(values[j], this, /*is_output=*/false);
      register_saved(&values_[j]);
    }
  }
  std::string name() const override { return "FusedBackward0"; }
  autograd::GradList apply(autograd::GradList&& grads) override {
    GRADLAB_CHECK(!GradMode::is_enabled(), AutogradError, "jit::compile",
                  "double backward (create_graph) through a fused region is not supported",
                  "backward without create_graph", "create_graph=true",
                  "call the function uncompiled for higher derivatives");
    const FusedProgram& fwd = region_->program;
    std::vector<Tensor> ins;
    for (auto& s : saved_) ins.push_back(s.unpack().expand(fwd.shape));
    for (size_t k = 0; k < grads.size(); ++k) {
      Tensor g = grads[k].contiguous();
      if (fwd.outputs[k].reduce == Reduce::All) g = g.reshape({}).expand(fwd.shape);
      else if (fwd.outputs[k].reduce == Reduce::LastDim) {
        Shape s = fwd.shape;
        s.back() = 1;
        g = g.reshape(s).expand(fwd.shape);
      }
      ins.push_back(g);
    }
    std::vector<size_t> wanted;
    for (size_t i = 0; i < saved_.size(); ++i)
      if (needs_input_grad(i)) wanted.push_back(i);
    for (auto& v : values_) ins.push_back(v.unpack());
    std::vector<Tensor> dx = kern::run_fused(backward_program(*region_, saved_.size(), wanted), ins);
    autograd::GradList out(saved_.size());
    for (size_t k = 0; k < wanted.size(); ++k) {
      const size_t i = wanted[k];
      out[i] = dx[k].sizes() == shapes_[i] ? dx[k] : sum_to(dx[k], shapes_[i]);
    }
    return out;
  }

 private:
  std::shared_ptr<const Region> region_;
  std::vector<autograd::SavedTensor> saved_, values_;
  std::vector<Shape> shapes_;
};

std::string signature(const std::vector<Tensor>& in) {
  std::ostringstream os;
  os << (GradMode::is_enabled() ? "g" : "n");
  for (const auto& t : in)
    os << "|" << to_string(t.dtype()) << shape_str(t.sizes()) << t.device().str()
       << (t.requires_grad() ? "r" : "");
  return os.str();
}

std::vector<Tensor> run_region(const Region& r, const std::shared_ptr<const Region>& shared,
                               std::vector<Tensor>& env, const Graph& G) {
  std::vector<Tensor> ins, expanded;
  bool need_grad = false;
  for (int v : r.inputs) {
    ins.push_back(env[v]);
    need_grad = need_grad || env[v].requires_grad();
  }
  need_grad = need_grad && GradMode::is_enabled();
  std::vector<Tensor> outs, values;
  {
    NoGradGuard no_grad;
    for (const auto& t : ins) expanded.push_back(t.sizes() == r.program.shape ? t : t.expand(r.program.shape));
    outs = kern::run_fused(need_grad ? r.train_program : r.program, expanded);
    values.assign(outs.begin() + static_cast<std::ptrdiff_t>(r.outputs.size()), outs.end());
    outs.resize(r.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].sizes() != G.values[r.outputs[k]].shape) outs[k] = outs[k].reshape(G.values[r.outputs[k]].shape);
  }
  if (need_grad) {
    auto node = std::make_shared<FusedNode>(shared, ins, values);
    std::vector<const Tensor*> in_ptrs;
    for (const auto& t : ins) in_ptrs.push_back(&t);
    std::vector<Tensor*> out_ptrs;
    for (auto& t : outs) out_ptrs.push_back(&t);
    autograd::connect(node, in_ptrs, out_ptrs);
  }
  return outs;
}

std::vector<Tensor> run_plan(const Plan& p, const std::vector<Tensor>& inputs) {
  const Graph& G = p.graph;
  std::vector<Tensor> env(G.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[G.inputs[i]] = inputs[i];
  for (size_t i = 0; i < G.values.size(); ++i)
    if (G.values[i].kind == Value::Kind::Constant) env[i] = G.values[i].constant;
  for (const auto& item : p.items) {
    if (item.region) {
      std::vector<Tensor> outs = run_region(*item.region, item.region, env, G);
      for (size_t k = 0; k < outs.size(); ++k) env[item.region->outputs[k]] = outs[k];
      continue;
    }
    const Node& n = G.nodes[item.node];
    std::vector<Tensor> args;
    for (int id : n.inputs) args.push_back(env[id]);
    std::vector<Tensor> outs = n.replay(args);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::vector<Tensor> out;
  for (int id : G.outputs) out.push_back(env[id]);
  return out;
}

}  // namespace

CompiledFunction::CompiledFunction(TracedFn fn, CompileOptions options)
    : fn_(std::move(fn)), options_(options) {}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) {
  const std::string key = signature(inputs);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    TraceOptions topt;
    topt.print_warnings = false;
    it = plans_.emplace(key, build_plan(trace(fn_, inputs, topt), options_)).first;
  }
  last_ = it->second;
  if (last_->eager) return fn_(inputs);
  return run_plan(*last_, inputs);
}

Tensor CompiledFunction::operator()(const Tensor& input) {
  std::vector<Tensor> r = (*this)(std::vector<Tensor>{input});
  GRADLAB_CHECK(r.size() == 1, ValueError, "CompiledFunction", "the function has several outputs",
                "1 output", std::to_string(r.size()), "call it with a list of inputs");
  return r[0];
}

int CompiledFunction::fused_regions() const {
  if (!last_) return 0;
  int n = 0;
  for (const auto& item : last_->items) n += item.region ? 1 : 0;
  return n;
}

std::string CompiledFunction::report() const {
  if (!last_) return "not called yet\n";
  if (last_->eager) return "eager: " + last_->eager_reason + "\n";
  std::ostringstream os;
  int k = 0;
  for (const auto& item : last_->items) {
    if (!item.region) continue;
    const Region& r = *item.region;
    os << "fused region " << k++ << ": " << r.compute_ops << " ops (" << r.kinds << ") in one pass over "
       << to_string(r.program.dtype) << shape_str(r.program.shape) << ", " << r.inputs.size()
       << " input(s), " << r.outputs.size() << " output(s)\n";
  }
  for (const auto& n : last_->notes) os << n << "\n";
  return os.str();
}

CompiledFunction compile(TracedFn fn, CompileOptions options) {
  return CompiledFunction(std::move(fn), options);
}

CompiledFunction compile(std::function<Tensor(const Tensor&)> fn, CompileOptions options) {
  return CompiledFunction(
      [f = std::move(fn)](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in.at(0))}; },
      options);
}

}  // namespace gradlab::jit
