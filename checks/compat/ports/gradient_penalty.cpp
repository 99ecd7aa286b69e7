// Port corpus: a WGAN-GP style gradient penalty. The critic's gradient with respect to its input
// comes from torch::autograd::grad with create_graph = true, so the penalty
// ((‖∂D/∂x‖₂ - 1)²).mean() is itself differentiated into the critic's parameters (a second
// derivative through Linear, tanh and mm). Trains the critic a few Adam steps on the penalty plus
// the Wasserstein term and prints every value.
#include <torch/torch.h>

#include <iostream>

#include "port_out.hpp"

struct CriticImpl : torch::nn::Module {
  CriticImpl()
      : fc1(register_module("fc1", torch::nn::Linear(3, 8))),
        fc2(register_module("fc2", torch::nn::Linear(8, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Critic);

int main() {
  Critic critic;
  port::init_parameters(critic);
  torch::optim::Adam opt(critic->parameters(), torch::optim::AdamOptions(1e-2).betas({0.5, 0.9}));

  auto real = port::wave({6, 3}, 1.0, 0.7);
  auto fake = port::wave({6, 3}, 1.0, 2.1) * 0.5;
  const double lambda = 10.0;
  for (int step = 0; step < 5; ++step) {
    auto alpha = (port::wave({6, 1}, 0.5, 0.3 * step) + 0.5);
    auto interp = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(true);
    auto d_interp = critic(interp);
    auto grads = torch::autograd::grad({d_interp}, {interp}, {torch::ones_like(d_interp)},
                                       /*retain_graph=*/true, /*create_graph=*/true)[0];
    auto penalty = (grads.norm(2, 1) - 1).pow(2).mean();
    auto loss = critic(fake).mean() - critic(real).mean() + lambda * penalty;
    opt.zero_grad();
    loss.backward();
    if (step == 0) {
      port::out("input_grad", grads);
      port::out("fc1_weight_grad", critic->fc1->weight.grad());
      port::out("fc2_weight_grad", critic->fc2->weight.grad());
    }
    opt.step();
    port::out(port::key("step_", step), {loss.item<double>(), penalty.item<double>()});
  }
  port::out("fc2_weight", critic->fc2->weight);
  return 0;
}
