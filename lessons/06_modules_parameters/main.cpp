// Lesson 06: modules and parameters.
//
// How a model tells the optimizer what to train: register_parameter / register_module,
// parameters() and named_parameters() with dotted names, buffers. Then the trap: a trainable
// tensor that was never registered is missing from parameters(), so the optimizer never updates
// it, even though backward gives it a gradient. Two diagnostics name the culprits:
//   nn::find_unregistered_tensors(loss, model)  leaves that feed the loss but are not parameters
//   nn::parameters_not_updated(before, after)   registered parameters an optimizer step left alone
// Finally the fix, and the same training run converging.

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
using lesson::join;

namespace {

std::vector<std::string> names_of(const nn::NamedTensors& named) {
  std::vector<std::string> r;
  for (const auto& [name, t] : named) r.push_back(name);
  return r;
}

// ---- 1. a correct model -------------------------------------------------------------------------
// class Net(nn.Module):
//     def __init__(self):
//         super().__init__()
//         self.fc1 = nn.Linear(4, 8); self.bn = nn.BatchNorm1d(8); self.fc2 = nn.Linear(8, 2)
struct NetImpl : nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 8));
    bn = register_module("bn", nn::BatchNorm1d(8));
    fc2 = register_module("fc2", nn::Linear(8, 2));
  }
  gl::Tensor forward(const gl::Tensor& x) { return fc2(gl::relu(bn(fc1(x)))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::BatchNorm1d bn{nullptr};
};

// ---- 2. the classic trap: a learnable tensor kept as a plain member ----------------------------
// PyTorch: self.offset = torch.zeros(1, requires_grad=True)   # should be
// nn.Parameter(torch.zeros(1))
struct ShiftedRegressorImpl : nn::Module {
  explicit ShiftedRegressorImpl(bool fixed) {
    fc = register_module("fc", nn::Linear(nn::LinearOptions(4, 1).bias(false)));
    if (fixed)
      offset = register_parameter("offset", gl::zeros({1}));  // the fix
    else
      offset = gl::zeros({1}).requires_grad_();  // BUG: never registered
  }
  gl::Tensor forward(const gl::Tensor& x) { return fc(x) + offset; }
  nn::Linear fc{nullptr};
  gl::Tensor offset;
};

// ---- 3. the C++ holder trap: register_module's result not kept
// -----------------------------------
struct TwoLayerImpl : nn::Module {
  explicit TwoLayerImpl(bool fixed) {
    hidden = register_module("hidden", nn::Linear(4, 16));
    if (fixed)
      out = register_module("out", nn::Linear(16, 1));  // the member IS the registered layer
    else {
      register_module("out", nn::Linear(16, 1));  // BUG: registers one layer...
      out = nn::Linear(16, 1);                    // ...and forward uses another, unregistered one
    }
  }
  gl::Tensor forward(const gl::Tensor& x) { return out(gl::tanh(hidden(x))); }
  nn::Linear hidden{nullptr}, out{nullptr};
};

// A toy regression: y = x . w_true + 5: without a learnable offset no linear map fits it.
struct Data {
  gl::Tensor x, y;
};
Data make_data() {
  gl::Generator g(6);
  gl::Tensor x = gl::randn({256, 4}, {}, &g);
  gl::Tensor w_true = gl::tensor({0.5, -1.0, 0.25, 2.0}).reshape({4, 1});
  return {x, gl::matmul(x, w_true) + 5.0};
}

// Trains with SGD on model->parameters(); returns the final loss.
template <class Model>
double train(Model& model, const Data& d, int steps, double lr) {
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(lr));
  nn::MSELoss mse;
  double last = 0;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    gl::Tensor loss = mse(model(d.x), d.y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  return last;
}

}  // namespace

GRADLAB_MODULE(Net);
GRADLAB_MODULE(ShiftedRegressor);
GRADLAB_MODULE(TwoLayer);

int main() {
  lesson::Lesson L("06", "modules and parameters");
  return L.run([&] {
    // -------------------------------------------------------------------------------------------
    L.section("1. registration: what parameters() sees");
    gl::manual_seed(0);
    Net net;
    std::cout << *net << "\n";
    const auto names = names_of(net->named_parameters());
    std::cout << "named_parameters(): " << join(names) << "\n";
    std::cout << "named_buffers():    " << join(names_of(net->named_buffers())) << "\n";
    L.check(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "bn.weight", "bn.bias",
                                              "fc2.weight", "fc2.bias"},
            "named_parameters() lists every registered tensor with a dotted path, in registration "
            "order");
    L.check(net->num_parameters() == 4 * 8 + 8 + 8 + 8 + 8 * 2 + 2,
            "the printed count is the sum of the parameter sizes (" +
                nn::group_digits(net->num_parameters()) + ")");
    bool all_leaves = true;
    for (const gl::Tensor& p : net->parameters())
      all_leaves = all_leaves && p.is_leaf() && p.requires_grad();
    L.check(all_leaves, "every parameter is a leaf that requires grad (PyTorch's nn.Parameter)");
    L.check(
        net->buffers().size() == 3 && !net->buffers()[0].requires_grad() &&
            net->state_dict().size() == 9,
        "BatchNorm's running stats are buffers: saved in state_dict() (9 entries), never trained");

    // -------------------------------------------------------------------------------------------
    L.section("2. the trap: a learnable tensor that was never registered");
    const Data data = make_data();
    gl::manual_seed(1);
    ShiftedRegressor buggy(false);
    std::cout << "parameters(): " << join(names_of(buggy->named_parameters()))
              << "   (no 'offset')\n";
    L.check(buggy->parameters().size() == 1,
            "offset is missing from parameters(): the optimizer is never told about it");

    nn::MSELoss mse;
    gl::Tensor loss = mse(buggy(data.x), data.y);
    auto found = nn::find_unregistered_tensors(loss, *buggy);
    for (const auto& f : found) std::cout << "find_unregistered_tensors: " << f.describe() << "\n";
    L.check(found.size() == 1 && found[0].tensor.impl() == buggy->offset.impl(),
            "find_unregistered_tensors names exactly one tensor, and it is offset");
    L.check(found.size() == 1 &&
                found[0].used_at.str().find("06_modules_parameters/main.cpp") != std::string::npos,
            "...and points at the line of forward() that used it");

    const double buggy_loss = train(buggy, data, 200, 0.05);
    std::cout << "after 200 SGD steps: loss " << buggy_loss
              << ", offset = " << buggy->offset.item<double>()
              << ", offset.grad = " << buggy->offset.grad().item<double>() << "\n";
    L.check(buggy->offset.item<double>() == 0.0,
            "offset is still exactly 0: the optimizer never updated it");
    L.check(buggy->offset.grad().defined() && buggy->offset.grad().item<double>() != 0.0,
            "...although backward did compute a gradient for it (it requires grad)");
    L.check(buggy_loss > 20.0,
            "the loss is stuck near 25 = 5^2: no registered parameter can produce the +5");

    // -------------------------------------------------------------------------------------------
    L.section("3. the C++ variant: register_module's result not kept");
    gl::manual_seed(2);
    TwoLayer wrong(false);
    std::cout << "parameters(): " << join(names_of(wrong->named_parameters())) << "\n";
    gl::optim::SGD opt(wrong->parameters(), gl::optim::SGDOptions(0.05));
    const auto before = nn::snapshot_parameters(*wrong);
    opt.zero_grad();
    gl::Tensor wrong_loss = mse(wrong(data.x), data.y);
    wrong_loss.backward();
    opt.step();
    const auto stuck = nn::parameters_not_updated(before, *wrong);
    std::cout << "parameters_not_updated: " << join(stuck) << "\n";
    L.check(stuck == std::vector<std::string>{"out.weight", "out.bias"},
            "parameters_not_updated names the registered 'out' layer: forward never uses it, so it "
            "never moves");
    const auto used = nn::find_unregistered_tensors(wrong_loss, *wrong);
    for (const auto& f : used) std::cout << "find_unregistered_tensors: " << f.describe() << "\n";
    bool both = used.size() == 2;
    for (const auto& f : used)
      both = both && (f.tensor.impl() == wrong->out->weight.impl() ||
                      f.tensor.impl() == wrong->out->bias.impl());
    L.check(both,
            "find_unregistered_tensors names the weight and bias of the layer forward really uses");

    // -------------------------------------------------------------------------------------------
    L.section("4. the fix: register_parameter / keep what register_module returns");
    gl::manual_seed(1);
    ShiftedRegressor fixed(true);
    std::cout << "parameters(): " << join(names_of(fixed->named_parameters())) << "\n";
    const auto before_fixed = nn::snapshot_parameters(*fixed);
    const double fixed_loss = train(fixed, data, 200, 0.05);
    // NOTE: the fit is exact, so the loss left is rounding noise (6.19e-12 with one BLAS kernel,
    // 6.17e-12 with another): printed as noise below 1e-9.
    std::cout << "after 200 SGD steps: loss " << lesson::noise(fixed_loss, 1e-9, "%g") << " (was " << buggy_loss
              << " with the bug), offset = " << fixed->offset.item<double>() << "\n";
    L.check(fixed->parameters().size() == 2, "offset now appears in parameters()");
    L.check(std::abs(fixed->offset.item<double>() - 5.0) < 1e-3,
            "the optimizer updates offset, to 5");
    L.check(nn::parameters_not_updated(before_fixed, *fixed).empty(),
            "parameters_not_updated reports nothing");
    L.check(nn::find_unregistered_tensors(mse(fixed(data.x), data.y), *fixed).empty(),
            "find_unregistered_tensors reports nothing");
    L.check(fixed_loss < 1e-6, "the same training run now fits the data (loss < 1e-6)");

    gl::manual_seed(2);
    TwoLayer right(true);
    const auto before_right = nn::snapshot_parameters(*right);
    train(right, data, 1, 0.05);
    L.check(nn::parameters_not_updated(before_right, *right).empty(),
            "with out = register_module(...) every registered parameter moves after one step");
  });
}
