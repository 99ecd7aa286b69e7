#include "gradlab/autograd/checkpoint.hpp"

#include <memory>
#include <string>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/flags.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/core/generator.hpp"

namespace gradlab {

namespace {

using autograd::GradList;

// The autocast state of both device types, captured at forward and set again for the rerun.
struct AutocastSnapshot {
  bool cpu_on, cuda_on;
  ScalarType cpu_dt, cuda_dt;
  static AutocastSnapshot now() {
    return {AutocastMode::is_enabled(kCPU), AutocastMode::is_enabled(DeviceType::CUDA), AutocastMode::dtype(kCPU),
            AutocastMode::dtype(DeviceType::CUDA)};
  }
  void apply() const {
    AutocastMode::set(kCPU, cpu_on, cpu_dt);
    AutocastMode::set(DeviceType::CUDA, cuda_on, cuda_dt);
  }
};

// y = fn(x...)     dx = backward of a recomputed fn(x...) with upstream dy
class CheckpointBackward final : public autograd::Node {
 public:
  std::string name() const override { return "CheckpointBackward"; }

  GradList apply(GradList&& grads) override {
    // Fresh leaves holding the saved inputs' values; the rerun builds its graph on them.
    TensorList xs;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      Tensor x = inputs_[i].unpack().detach();
      if (needs_input_grad(i)) x.requires_grad_(true);
      xs.push_back(x);
    }
    Tensor y;
    {
      EnableGradGuard grad_on;
      // The rerun is a forward pass: autocast applies again and anomaly mode checks it as one.
      bool& in_backward = autograd::detail::running_backward();
      const bool was_in_backward = in_backward;
      in_backward = false;
      const AutocastSnapshot outer = AutocastSnapshot::now();
      autocast_.apply();
      Generator& g = default_generator();
      const std::string outer_rng = g.get_state();
      g.set_state(rng_state_);
      try {
        y = fn_(xs);
      } catch (...) {
        g.set_state(outer_rng);
        outer.apply();
        in_backward = was_in_backward;
        throw;
      }
      g.set_state(outer_rng);
      outer.apply();
      in_backward = was_in_backward;
    }
    GRADLAB_CHECK(y.defined() && y.requires_grad(), AutogradError, "checkpoint",
                  "the recomputed output does not require grad", "fn's output to depend on its inputs or parameters",
                  "an output without a graph", "fn must give the same computation in backward as in forward");
    autograd::backward({y}, {grads[0]});
    GradList out;
    for (size_t i = 0; i < xs.size(); ++i) out.push_back(needs_input_grad(i) ? xs[i].grad() : Tensor());
    return out;
  }

  void release_variables() override {
    for (auto& s : inputs_) s.reset();
    fn_ = nullptr;
    released_ = true;
  }

  std::function<Tensor(const TensorList&)> fn_;
  std::vector<autograd::SavedTensor> inputs_;
  std::string rng_state_;
  AutocastSnapshot autocast_{};
};

}  // namespace

Tensor checkpoint(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs, Site site) {
  GRADLAB_CHECK(static_cast<bool>(fn), ValueError, "checkpoint", "fn is empty", "a callable", "an empty std::function");
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs) {
    GRADLAB_CHECK(t.defined(), ValueError, "checkpoint", "an input is an undefined tensor", "defined tensors",
                  "Tensor()");
    ins.push_back(&t);
  }
  const std::string rng = default_generator().get_state();
  const AutocastSnapshot autocast = AutocastSnapshot::now();
  Tensor y;
  {
    NoGradGuard no_grad;  // nothing inside fn is recorded: no activation is kept
    y = fn(inputs);
  }
  GRADLAB_CHECK(y.defined(), ValueError, "checkpoint", "fn returned an undefined tensor", "a tensor", "Tensor()");
  if (!GradMode::is_enabled()) return y;
  // The graph must also reach parameters fn captured, which `inputs` does not name: record when
  // grad mode is on, even if no input requires grad (as PyTorch's checkpoint with parameters).
  auto node = std::make_shared<CheckpointBackward>();
  node->site = site;
  node->module_site = ModuleCallScope::current();
  node->fn_ = fn;
  node->rng_state_ = rng;
  node->autocast_ = autocast;
  node->inputs_.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->inputs_[i].save(inputs[i], node.get(), /*is_output=*/false);
    node->register_saved(&node->inputs_[i]);
    node->mutable_next_edges().push_back(autograd::gradient_edge(inputs[i]));
  }
  for (const Tensor& t : inputs)
    if (y.impl() == t.impl()) y = y.detach();  // an input returned as is gets a new handle
  std::vector<Tensor*> outs{&y};
  autograd::connect(node, ins, outs);
  return y;
}

}  // namespace gradlab
