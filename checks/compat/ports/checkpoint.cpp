// Port corpus: checkpoint save and resume. Trains a model with Adam and a StepLR schedule for 10
// steps, saves model and optimizer with torch::save, trains 10 more; then a fresh model and
// optimizer load the checkpoint with torch::load and train the same 10 steps. The resumed run must
// equal the uninterrupted one (Adam's moments included), and both are printed.
#include <torch/torch.h>

#include <iostream>

#include "port_out.hpp"

struct ModelImpl : torch::nn::Module {
  ModelImpl() : fc1(register_module("fc1", torch::nn::Linear(3, 6))), fc2(register_module("fc2", torch::nn::Linear(6, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Model);

torch::Tensor batch_x(int step) { return port::wave({8, 3}, 1.0, 0.25 * step); }
torch::Tensor batch_y(int step) { return batch_x(step).pow(2).sum(1, true) - 1; }

double train_step(Model& model, torch::optim::Adam& opt, int step) {
  auto loss = torch::mse_loss(model->forward(batch_x(step)), batch_y(step));
  opt.zero_grad();
  loss.backward();
  opt.step();
  return loss.item<double>();
}

int main() {
  Model model;
  port::init_parameters(model);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.02));
  for (int step = 0; step < 10; ++step) train_step(model, opt, step);
  torch::save(model, "model.pt");
  torch::save(opt, "optimizer.pt");
  double last = 0;
  for (int step = 10; step < 20; ++step) last = train_step(model, opt, step);
  port::out("uninterrupted_loss", last);

  Model resumed;
  torch::optim::Adam opt2(resumed->parameters(), torch::optim::AdamOptions(0.02));
  torch::load(resumed, "model.pt");
  torch::load(opt2, "optimizer.pt");
  double last2 = 0;
  for (int step = 10; step < 20; ++step) last2 = train_step(resumed, opt2, step);
  port::out("resumed_loss", last2);
  port::out("resumed_fc2_weight", resumed->fc2->weight);
  const bool same = torch::allclose(model->fc1->weight, resumed->fc1->weight, 1e-6, 1e-7) &&
                    torch::allclose(model->fc2->weight, resumed->fc2->weight, 1e-6, 1e-7);
  port::out_int("resume_equals_uninterrupted", same ? 1 : 0);

  // A fresh optimizer without the loaded state drifts away: the state really was restored.
  Model fresh;
  torch::load(fresh, "model.pt");
  torch::optim::Adam opt3(fresh->parameters(), torch::optim::AdamOptions(0.02));
  for (int step = 10; step < 20; ++step) train_step(fresh, opt3, step);
  const bool differs = !torch::allclose(model->fc2->weight, fresh->fc2->weight, 1e-6, 1e-7);
  port::out_int("fresh_optimizer_differs", differs ? 1 : 0);
  return same && differs ? 0 : 1;
}
