// Lesson 06: modules and parameters.
//
// How a model tells the optimizer what to train: register_parameter / register_module,
// parameters() and named_parameters() with dotted names, buffers. Then the trap: a trainable
// tensor that was never registered is missing from parameters(), so the optimizer never updates
// it, even though backward gives it a gradient. Two diagnostics name the culprits:
//   nn::find_unregistered_tensors(loss, model)  leaves that feed the loss but are not parameters
//   nn::parameters_not_updated(before, after)   registered parameters an optimizer step left alone
// Then the fix, and the same training run converging. Last, what a parameter starts as:
// nn::Linear's default init, and why the scale of the initial weights decides whether a signal
// survives a deep stack of layers (it explodes, vanishes or keeps its size).

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
// ---- 5. initialization: a batch through a deep stack ----------------------------------------
constexpr int kDepth = 20;
constexpr int64_t kWidth = 256;
enum class Act { kReLU, kTanh };
struct DepthRun {
  std::vector<double> stds;  // std of the activations after each layer
  double saturated = 0;      // share of the last layer's tanh units with |h| > 0.99
};
// for _ in range(20): h = act(nn.Linear(256, 256, bias=False)(h)), the weights filled by `init`
// (nothing: keep nn::Linear's default). Biases off, so the weights' scale alone decides.
template <class Init>
DepthRun through_depth(const gl::Tensor& x, Act act, Init&& init) {
  gl::NoGradGuard no_grad;
  gl::manual_seed(7);
  gl::Generator g(7);
  gl::Tensor h = x;
  DepthRun r;
  for (int k = 0; k < kDepth; ++k) {
    nn::Linear layer(nn::LinearOptions(kWidth, kWidth).bias(false));
    init(layer->weight, g);
    h = act == Act::kReLU ? gl::relu(layer(h)) : gl::tanh(layer(h));
    // NOTE: in float64: the squares of 1e20 overflow float32
    r.stds.push_back(gl::std(h.to(gl::kFloat64)).item<double>());
  }
  r.saturated = gl::mean((gl::abs(h) > 0.99).to(gl::kFloat32)).item<double>();
  return r;
}

bool within(const std::vector<double>& v, double lo, double hi) {
  for (double s : v)
    if (!(s >= lo && s <= hi)) return false;  // NOTE: false for NaN
  return true;
}

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

int main(int argc, char** argv) {
  lesson::Lesson L("06", "modules and parameters", argc, argv,
                   {{"relu_gain_1",
                     "section 5's Kaiming init forgets ReLU's gain sqrt(2) (nonlinearity kLinear), "
                     "so each ReLU halves the signal's variance",
                     "with Kaiming init (std sqrt(2 / fan_in)) every ReLU layer's std stays"}});
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

    // -------------------------------------------------------------------------------------------
    L.section("5. initialization: the scale of the weights decides if a signal survives depth");
    // nn::Linear's reset_parameters(): kaiming_uniform_(weight, a = sqrt(5)), i.e. gain
    // sqrt(2 / (1 + 5)) = 1/sqrt(3) and bound gain * sqrt(3 / fan_in) = 1/sqrt(fan_in); the bias
    // is U(-1/sqrt(fan_in), 1/sqrt(fan_in)) too. A uniform U(-b, b) has std b / sqrt(3).
    {
      gl::manual_seed(5);
      nn::Linear probe(kWidth, kWidth);
      const double bound = 1.0 / std::sqrt(static_cast<double>(kWidth));
      const double w_max = gl::amax(gl::abs(probe->weight)).item<double>();
      const double w_std = gl::std(probe->weight).item<double>();
      const double b_max = gl::amax(gl::abs(probe->bias)).item<double>();
      std::cout << "nn::Linear(256, 256) default: max |w| " << lesson::fmt(w_max) << " <= 1/sqrt(256) = "
                << lesson::fmt(bound) << ", std(w) " << lesson::fmt(w_std) << " vs 1/sqrt(3 * 256) = "
                << lesson::fmt(bound / std::sqrt(3.0)) << ", max |b| " << lesson::fmt(b_max) << "\n";
      L.check(w_max <= bound && w_max > 0.99 * bound && b_max <= bound &&
                  std::abs(w_std / (bound / std::sqrt(3.0)) - 1) < 0.03,
              "nn::Linear's default init is U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias "
              "(kaiming_uniform_ with a = sqrt(5)): std(w) = 1/sqrt(3 fan_in)");
    }
    L.say(
        "Why the scale matters: one layer gives Var(out) = fan_in * Var(w) * E[in^2]. A ReLU keeps\n"
        "half of E[in^2], so Var(w) = 2 / fan_in (Kaiming) keeps the signal's size layer after\n"
        "layer; tanh is the identity near 0 and wants Var(w) ~ 1 / fan_in (Xavier, times 5/3 for\n"
        "its squashing). Any other scale multiplies the variance by the same factor at every layer.");
    gl::Generator gx(8);
    const gl::Tensor x = gl::randn({512, kWidth}, {}, &gx);  // a batch of 512, std 1
    auto keep_default = [](gl::Tensor&, gl::Generator&) {};
    auto std_one = [](gl::Tensor& w, gl::Generator& g) { nn::init::normal_(w, 0.0, 1.0, &g); };
    const bool relu_gain_1 = L.bug("relu_gain_1");
    auto kaiming = [relu_gain_1](gl::Tensor& w, gl::Generator& g) {
      // BUG (relu_gain_1): the gain of a linear layer, 1, instead of ReLU's sqrt(2)
      if (relu_gain_1)
        nn::init::kaiming_normal_(w, 0.0, nn::init::kFanIn, gl::kLinear, &g);
      else
        nn::init::kaiming_normal_(w, 0.0, nn::init::kFanIn, nn::init::kReLU, &g);
    };
    auto xavier = [](gl::Tensor& w, gl::Generator& g) {
      nn::init::xavier_uniform_(w, nn::init::calculate_gain(nn::init::kTanh), &g);
    };
    const DepthRun relu_one = through_depth(x, Act::kReLU, std_one);
    const DepthRun relu_default = through_depth(x, Act::kReLU, keep_default);
    const DepthRun relu_kaiming = through_depth(x, Act::kReLU, kaiming);
    const DepthRun tanh_one = through_depth(x, Act::kTanh, std_one);
    const DepthRun tanh_default = through_depth(x, Act::kTanh, keep_default);
    const DepthRun tanh_xavier = through_depth(x, Act::kTanh, xavier);
    std::cout << "std of the activations after layer   1        5        10       20   (20 x Linear(256, 256), no bias)\n";
    auto row = [](const std::string& name, const DepthRun& r) {
      std::cout << name;
      for (int k : {0, 4, 9, 19}) std::cout << "  " << lesson::fmt("%.1e", r.stds[k]);
      std::cout << "\n";
    };
    row("ReLU, w ~ N(0, 1)                  ", relu_one);
    row("ReLU, default U(+-1/sqrt(fan_in))  ", relu_default);
    row("ReLU, Kaiming N(0, 2/fan_in)       ", relu_kaiming);
    row("tanh, w ~ N(0, 1)                  ", tanh_one);
    row("tanh, default U(+-1/sqrt(fan_in))  ", tanh_default);
    row("tanh, Xavier uniform, gain 5/3     ", tanh_xavier);
    std::cout << "tanh units saturated (|h| > 0.99) after layer 20: N(0, 1) "
              << lesson::fmt(100 * tanh_one.saturated, 1) << "%, Xavier "
              << lesson::fmt(100 * tanh_xavier.saturated, 1) << "%\n";
    L.check(relu_one.stds.back() > 1e10,
            "ReLU with w ~ N(0, 1): the std grows by ~sqrt(256 / 2) per layer and explodes (> 1e10 "
            "after 20 layers)");
    L.check(relu_default.stds.back() < 1e-5,
            "ReLU with the default init: Var(w) = 1/(3 fan_in) shrinks the variance 6x per layer, "
            "the signal vanishes (< 1e-5 after 20 layers)");
    L.check(within(relu_kaiming.stds, 0.1, 10),
            "with Kaiming init (std sqrt(2 / fan_in)) every ReLU layer's std stays within [0.1, 10]");
    L.check(tanh_one.saturated > 0.75,
            "tanh with w ~ N(0, 1): over 3/4 of the units are saturated at +-1, where tanh's "
            "gradient is ~0");
    L.check(tanh_default.stds.back() < 1e-3,
            "tanh with the default init: the variance shrinks ~3x per layer and vanishes (< 1e-3 "
            "after 20 layers)");
    L.check(within(tanh_xavier.stds, 0.1, 1) && tanh_xavier.saturated < 0.1,
            "with Xavier init (gain 5/3) every tanh layer's std stays within [0.1, 1] and under 10% "
            "of the units saturate");
    L.say(
        "The default suits the shallow nets of these lessons (and nets with normalization layers);\n"
        "a deep plain stack needs the init that matches its nonlinearity.");
  });
}
