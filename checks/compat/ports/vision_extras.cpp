// Port corpus: the pooling, resampling and normalization layers, the losses' class weights and
// pos_weight, and the Adagrad and LBFGS optimizers (issue 27 item 3), as a LibTorch user calls
// them: torch::avg_pool2d / adaptive_avg_pool2d / group_norm, F::interpolate, nn::AvgPool2d,
// nn::AdaptiveAvgPool2d, nn::Upsample, nn::GroupNorm, F::cross_entropy / nll_loss /
// binary_cross_entropy_with_logits with weights, optim::Adagrad, optim::LBFGS (with and without
// the strong Wolfe line search). Values and input gradients at fixed inputs are compared tightly;
// a short training run, loosely; LBFGS's closure-call counts exactly.
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "port_out.hpp"

namespace F = torch::nn::functional;

namespace {

// Prints y and the gradient of sum(y * wave) with respect to x.
void value_and_grad(const std::string& key, const torch::Tensor& x_in,
                    const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  torch::Tensor x = x_in.detach().clone().requires_grad_(true);
  torch::Tensor y = f(x);
  port::out_shape(key + "_shape", y);
  port::out(key, y);
  (y * port::wave(y.sizes(), 1.0, 0.5)).sum().backward();
  port::out(key + "_grad", x.grad());
}

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)))),
        gn(register_module("gn", torch::nn::GroupNorm(torch::nn::GroupNormOptions(2, 4)))),
        pool(register_module("pool", torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(2)))),
        up(register_module("up", torch::nn::Upsample(torch::nn::UpsampleOptions()
                                                         .scale_factor(std::vector<double>{2, 2})
                                                         .mode(torch::kBilinear)
                                                         .align_corners(false)))),
        gap(register_module("gap", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 1})))),
        fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(gn->forward(conv->forward(x)));  // [N, 4, 6, 6]
    x = up->forward(pool->forward(x)) + x;           // pooled to 3x3, back to 6x6
    return fc->forward(gap->forward(x).flatten(1));  // [N, 3]
  }
  torch::nn::Conv2d conv;
  torch::nn::GroupNorm gn;
  torch::nn::AvgPool2d pool;
  torch::nn::Upsample up;
  torch::nn::AdaptiveAvgPool2d gap;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

}  // namespace

int main() {
  // ---- the ops at fixed inputs: values and input gradients ----
  const torch::Tensor img = port::wave({2, 4, 5, 7}, 1.0, 0.1);
  value_and_grad("avg_pool2d", img, [](const torch::Tensor& x) {
    return torch::avg_pool2d(x, {3, 2}, {2, 2}, {1, 1}, /*ceil_mode=*/true, /*count_include_pad=*/false);
  });
  value_and_grad("avg_pool2d_divisor", img, [](const torch::Tensor& x) {
    return F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).stride(1).divisor_override(3));
  });
  value_and_grad("adaptive_avg_pool2d", img,
                 [](const torch::Tensor& x) { return torch::adaptive_avg_pool2d(x, {3, 4}); });
  value_and_grad("adaptive_avg_pool1d", img.flatten(2), [](const torch::Tensor& x) {
    return F::adaptive_avg_pool1d(x, F::AdaptiveAvgPool1dFuncOptions(6));
  });
  value_and_grad("nearest_scale", img, [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 0.7}));
  });
  value_and_grad("nearest_size", img, [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 3}));
  });
  for (bool align : {false, true})
    value_and_grad(std::string("bilinear_") + (align ? "corners" : "centres"), img,
                   [align](const torch::Tensor& x) {
                     return F::interpolate(x, F::InterpolateFuncOptions()
                                                  .size(std::vector<int64_t>{9, 4})
                                                  .mode(torch::kBilinear)
                                                  .align_corners(align));
                   });
  value_and_grad("linear_scale", img.flatten(2), [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{1.7})
                                 .mode(torch::kLinear)
                                 .align_corners(false));
  });
  value_and_grad("area", img, [](const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 3}).mode(torch::kArea));
  });
  const torch::Tensor gw = port::wave({4}, 1.0, 2.0), gb = port::wave({4}, 0.5, 3.0);
  value_and_grad("group_norm", img, [&](const torch::Tensor& x) {
    return torch::group_norm(x, 2, gw, gb, 1e-5);
  });
  value_and_grad("group_norm_options", img, [](const torch::Tensor& x) {
    return F::group_norm(x, F::GroupNormFuncOptions(4).eps(1e-3));
  });

  // ---- weighted losses ----
  const torch::Tensor logits = port::wave({6, 4}, 2.0, 0.3);
  const torch::Tensor target = torch::tensor({0, 3, 1, 2, 3, 0}, torch::dtype(torch::kLong));
  const torch::Tensor weight = torch::tensor({0.5, 2.0, 1.0, 3.0});
  value_and_grad("ce_weight", logits, [&](const torch::Tensor& x) {
    return F::cross_entropy(x, target, F::CrossEntropyFuncOptions().weight(weight));
  });
  value_and_grad("ce_weight_smooth", logits, [&](const torch::Tensor& x) {
    return F::cross_entropy(x, target, F::CrossEntropyFuncOptions().weight(weight).label_smoothing(0.2).ignore_index(1));
  });
  value_and_grad("nll_weight_sum", logits, [&](const torch::Tensor& x) {
    return F::nll_loss(torch::log_softmax(x, 1), target,
                       F::NLLLossFuncOptions().weight(weight).reduction(torch::kSum));
  });
  torch::nn::CrossEntropyLoss ce_module(torch::nn::CrossEntropyLossOptions().weight(weight));
  port::out("ce_module", ce_module(logits, target).item<double>());
  const torch::Tensor bce_target = (port::wave({6, 4}, 1.0, 5.0) > 0).to(torch::kFloat);
  const torch::Tensor pos_weight = torch::tensor({3.0, 1.0, 0.5, 2.0});
  const torch::Tensor row_weight = port::wave({6, 1}, 0.4, 1.0) + 1.0;
  value_and_grad("bce_pos_weight", logits, [&](const torch::Tensor& x) {
    return F::binary_cross_entropy_with_logits(
        x, bce_target, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pos_weight).weight(row_weight));
  });
  torch::nn::BCEWithLogitsLoss bce_module(
      torch::nn::BCEWithLogitsLossOptions().pos_weight(pos_weight).reduction(torch::kSum));
  port::out("bce_module", bce_module(logits, bce_target).item<double>());

  // ---- a small classifier trained with Adagrad ----
  Net net;
  port::init_parameters(net, 0.7);
  const torch::Tensor x = port::wave({8, 2, 6, 6}, 1.0, 0.9);
  const torch::Tensor y = torch::tensor({0, 1, 2, 0, 1, 2, 1, 0}, torch::dtype(torch::kLong));
  port::out("net_logits", net->forward(x));
  torch::optim::Adagrad adagrad(net->parameters(), torch::optim::AdagradOptions(0.1).lr_decay(0.01));
  for (int step = 1; step <= 30; ++step) {
    adagrad.zero_grad();
    torch::Tensor loss = F::cross_entropy(net->forward(x), y, F::CrossEntropyFuncOptions().weight(weight.slice(0, 0, 3)));
    loss.backward();
    adagrad.step();
    if (step <= 3) port::out(port::key("adagrad_loss_", step), loss.item<double>());
    if (step % 10 == 0) port::out(port::key("~adagrad_loss_", step), loss.item<double>());
  }

  // ---- Adagrad and LBFGS on a fixed float64 problem: least squares with a cubic term ----
  const torch::Tensor A = port::wave({12, 3}, 1.0, 1.3).to(torch::kDouble);
  const torch::Tensor b = port::wave({12}, 1.0, 2.1).to(torch::kDouble);
  auto objective = [&](const torch::Tensor& w) {
    torch::Tensor r = torch::matmul(A, w) - b;
    return (r * r).sum() + 0.1 * (w * w * w * w).sum();
  };
  {
    torch::Tensor w = torch::zeros({3}, torch::dtype(torch::kDouble)).requires_grad_(true);
    torch::optim::Adagrad opt({w}, torch::optim::AdagradOptions(0.5).weight_decay(0.1).initial_accumulator_value(0.1));
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      objective(w).backward();
      opt.step();
    }
    port::out("adagrad_w", w);
  }
  for (bool wolfe : {false, true}) {
    torch::Tensor w = torch::zeros({3}, torch::dtype(torch::kDouble)).requires_grad_(true);
    auto options = torch::optim::LBFGSOptions(wolfe ? 1.0 : 0.2).max_iter(8).history_size(4);
    if (wolfe) options.line_search_fn("strong_wolfe");
    torch::optim::LBFGS opt({w}, options);
    int64_t calls = 0;
    const std::string name = wolfe ? "lbfgs_wolfe" : "lbfgs";
    for (int step = 1; step <= 3; ++step) {
      torch::Tensor first = opt.step([&] {
        ++calls;
        opt.zero_grad();
        torch::Tensor l = objective(w);
        l.backward();
        return l;
      });
      port::out(name + "_first_loss_" + std::to_string(step), first.item<double>());
      port::out(name + "_w_" + std::to_string(step), w);
    }
    port::out_int(name + "_closure_calls", calls);
    port::out(name + "_final_loss", objective(w).item<double>());
  }
  return 0;
}
