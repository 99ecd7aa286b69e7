// Port corpus: custom autograd Functions as in LibTorch's C++ autograd tutorial. LinearFunction
// takes an optional bias, so its backward returns an undefined gradient for a bias that was not
// passed; MulConstant keeps a double in ctx->saved_data. Both are checked with backward against
// the closed forms and printed.
#include <torch/torch.h>

#include <iostream>

#include "port_out.hpp"

using torch::autograd::AutogradContext;
using torch::autograd::Function;
using torch::autograd::variable_list;

// y = x wᵀ + b      dx = dy w, dw = dyᵀ x, db = Σ_rows dy
class LinearFunction : public Function<LinearFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];
    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = torch::Tensor();
    if (bias.defined()) grad_bias = grad_output.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// y = c x      dx = c dy
class MulConstant : public Function<MulConstant> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

int main() {
  auto x = port::wave({2, 3}, 1.0, 0.1).requires_grad_();
  auto weight = port::wave({4, 3}, 1.0, 0.2).requires_grad_();
  auto bias = port::wave({4}, 1.0, 0.3).requires_grad_();

  // With a bias.
  auto y = LinearFunction::apply(x, weight, bias);
  y.sum().backward();
  port::out("linear_y", y);
  port::out("linear_dx", x.grad());
  port::out("linear_dw", weight.grad());
  port::out("linear_db", bias.grad());
  const bool dx_ok = torch::allclose(x.grad(), torch::ones({2, 4}).mm(weight.detach()));
  const bool dw_ok = torch::allclose(weight.grad(), torch::ones({4, 2}).mm(x.detach()));
  const bool db_ok = torch::allclose(bias.grad(), torch::full({4}, 2.0));

  // Without a bias: the trailing gradient is undefined, and backward accepts it.
  x.grad().zero_();
  weight.grad().zero_();
  auto y2 = LinearFunction::apply(x, weight);
  (y2 * y2).sum().backward();
  port::out("nobias_y", y2);
  port::out("nobias_dx", x.grad());
  port::out("nobias_dw", weight.grad());

  // A non-tensor argument kept in saved_data.
  auto a = port::wave({5}, 1.0, 0.4).requires_grad_();
  auto b = MulConstant::apply(a, 5.5);
  b.sum().backward();
  port::out("mulconstant_grad", a.grad());
  const bool mul_ok = torch::allclose(a.grad(), torch::full({5}, 5.5));

  // Second use of the same Function in one graph.
  auto c = port::wave({3}, 1.0, 0.6).requires_grad_();
  auto d = MulConstant::apply(MulConstant::apply(c, 2.0), 3.0);
  d.sum().backward();
  port::out("chained_grad", c.grad());
  std::cout << "y2 grad_fn defined " << (y2.grad_fn() != nullptr ? 1 : 0) << "\n";
  const bool ok = dx_ok && dw_ok && db_ok && mul_ok;
  port::out_int("closed_forms_hold", ok ? 1 : 0);
  return ok ? 0 : 1;
}
