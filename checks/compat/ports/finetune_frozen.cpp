// Port corpus: transfer-learning style fine-tuning. A "pretrained" backbone (its weights saved
// with torch::save and loaded back) is frozen with requires_grad_(false), a new head is trained
// on a new task with an optimizer over the trainable parameters only, and the program checks and
// prints that the backbone did not move while the head did.
#include <torch/torch.h>

#include <iostream>
#include <vector>

#include "port_out.hpp"

struct NetImpl : torch::nn::Module {
  NetImpl(int64_t classes)
      : backbone(register_module("backbone",
                                 torch::nn::Sequential(torch::nn::Linear(4, 12), torch::nn::Tanh(),
                                                       torch::nn::Linear(12, 8), torch::nn::Tanh()))),
        head(register_module("head", torch::nn::Linear(8, classes))) {}
  torch::Tensor forward(torch::Tensor x) { return head(backbone->forward(x)); }
  torch::nn::Sequential backbone;
  torch::nn::Linear head;
};
TORCH_MODULE(Net);

int main() {
  // "Pretraining": deterministic weights, saved like a downloaded checkpoint.
  Net pretrained(5);
  port::init_parameters(pretrained, 0.9);
  torch::save(pretrained->backbone, "backbone.pt");

  Net net(3);
  port::init_parameters(net, 4.0);
  torch::load(net->backbone, "backbone.pt");
  for (auto& p : net->backbone->parameters()) p.requires_grad_(false);

  std::vector<torch::Tensor> trainable;
  int64_t frozen = 0;
  for (auto& p : net->named_parameters()) {
    if (p.value().requires_grad())
      trainable.push_back(p.value());
    else
      ++frozen;
    if (p.key().rfind("head.", 0) == 0) port::out_shape("trainable_" + p.key(), p.value());
  }
  port::out_shape("head_weight_by_name", net->named_parameters()["head.weight"]);
  port::out_int("trainable", static_cast<int64_t>(trainable.size()));
  port::out_int("frozen", frozen);
  auto before = net->backbone->parameters()[0].clone();
  auto head_before = net->head->weight.clone();

  torch::optim::Adam opt(trainable, torch::optim::AdamOptions(0.05));
  auto x = port::wave({24, 4}, 1.0, 0.2);
  auto y = (x.sum(1) > 0).to(torch::kLong) + (x.select(1, 0) > 0.5).to(torch::kLong);
  for (int step = 1; step <= 40; ++step) {
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step <= 3 || step % 10 == 0) port::out(port::key("loss_", step), loss.item<double>());
  }
  const bool backbone_same = torch::equal(before, net->backbone->parameters()[0]);
  const bool head_moved = !torch::allclose(head_before, net->head->weight);
  port::out_int("backbone_unchanged", backbone_same ? 1 : 0);
  port::out_int("head_moved", head_moved ? 1 : 0);
  port::out_int("backbone_grad_defined", net->backbone->parameters()[0].grad().defined() ? 1 : 0);
  port::out("head_weight", net->head->weight);
  return backbone_same && head_moved ? 0 : 1;
}
