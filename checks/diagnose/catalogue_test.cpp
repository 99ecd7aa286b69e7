// The catalogue: planted bugs across the three stages, each of which doctor must find with the
// right words (and no knock-on blame), and healthy setups on which it must raise no warn and no
// fail. Each row is its own test; the run ends with a table and the summary line
//   catalogue: found N of N planted bugs, 0 false alarms on M healthy setups
// Adding a bug is one entry in bugs() below.

#include "diagnose/catalogue.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

using namespace diagnose_catalogue;

namespace {

using gl::Tensor;
using Stage = dg::Stage;
using Verdict = dg::Verdict;

// ---- data --------------------------------------------------------------------------------------

// The healthy pipeline: raw pixels in [0, 1] normalized with the training split's statistics.
Tensor prepared(const Tensor& raw) { return (raw - raw_digits().mean) / raw_digits().std; }
Tensor train_x() { return prepared(raw_digits().train.data()); }
Tensor train_y() { return digits().train.targets(); }
Tensor test_x() { return prepared(raw_digits().test.data()); }
Tensor images(const Tensor& flat) { return flat.reshape({-1, 1, 8, 8}); }

dg::DoctorOptions with_stats() {
  dg::DoctorOptions o;
  o.input_stats = digits_stats();
  return o;
}

// A copy of x with element [row, col] set to v (a NaN or Inf planted in the data).
Tensor planted(const Tensor& x, int64_t row, int64_t col, double v) {
  Tensor y = x.clone();
  gl::NoGradGuard no_grad;
  y.select(0, row).select(0, col).fill_(v);
  return y;
}

// The rows of (x, y) whose label passes keep(label, running count of that label).
std::pair<Tensor, Tensor> subsample(const Tensor& x, const Tensor& y,
                                    const std::function<bool(int64_t, int64_t)>& keep) {
  std::vector<int64_t> idx, seen(10, 0);
  const std::vector<int64_t> labels = y.to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i)
    if (keep(labels[i], seen[static_cast<size_t>(labels[i])]++))
      idx.push_back(static_cast<int64_t>(i));
  const Tensor order = gl::from_vector(idx, {static_cast<int64_t>(idx.size())});
  return {gl::index_select(x, 0, order), gl::index_select(y, 0, order)};
}

// A regression target from the image: the ink of the top half minus the bottom half ([N]),
// standardized with the training split's statistics ([N, 1] float).
Tensor ink(const Tensor& raw) {
  const Tensor im = raw.reshape({-1, 8, 8});
  return gl::mean(im.narrow(1, 0, 4), {1, 2}) - gl::mean(im.narrow(1, 4, 4), {1, 2});
}
Tensor ink_target(const Tensor& raw) {
  const Tensor ref = ink(raw_digits().train.data());
  return ((ink(raw) - gl::mean(ref)) / gl::std(ref, {}, 0)).reshape({-1, 1});
}

// A 3-channel image from the digits (as an RGB data set: each channel its own gain and offset).
Tensor rgb(const Tensor& raw) {
  const Tensor im = images(raw);
  return gl::cat({im, im * 0.5 + 0.3, im * 0.25 + 0.6}, 1);
}
// Per-position reference statistics of rgb(train) (std 1 where a position never varies).
dg::InputStats rgb_stats() {
  const Tensor x = rgb(raw_digits().train.data());
  dg::InputStats st;
  st.mean = gl::mean(x, {0});
  const Tensor s = gl::std(x, {0}, 0);
  st.std = gl::where(s > 1e-9, s, 1.0);
  return st;
}
Tensor rgb_prepared(const Tensor& x) {
  const dg::InputStats st = rgb_stats();
  return (x - st.mean) / st.std;
}

// ---- models ------------------------------------------------------------------------------------

nn::Sequential dropout_mlp() {
  gl::manual_seed(2);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.2), nn::Linear(128, 10));
}
nn::Sequential cnn(int64_t in_channels = 1) {
  gl::manual_seed(3);
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in_channels, 8, 3).padding(1)),
                        nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(8 * 4 * 4, 10));
}
nn::Sequential regressor() {
  gl::manual_seed(4);
  return nn::Sequential(nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 1));
}

// Reads each 8x8 digit as 8 steps of 8 features: LSTM(8, 32) -> last hidden state -> Linear(32,
// 10).
struct LstmClassifierImpl : nn::Module {
  nn::LSTM lstm{nullptr};
  nn::Linear fc{nullptr};
  explicit LstmClassifierImpl(bool batch_first = true) {
    gl::manual_seed(5);
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(8, 32).batch_first(batch_first)));
    fc = register_module("fc", nn::Linear(32, 10));
  }
  // x [B, 64] -> [B, 8, 8] (batch, time, features); h_n [1, B, 32] -> logits [B, 10]
  Tensor forward(const Tensor& x) {
    auto [out, hc] = lstm->forward(x.reshape({-1, 8, 8}));
    return fc(std::get<0>(hc).select(0, 0));
  }
};
GRADLAB_MODULE(LstmClassifier);

// fc2(relu(fc1(x)).detach()): fc1 never gets a gradient.
struct DetachInForwardImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  DetachInForwardImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
  }
  Tensor forward(const Tensor& x) { return fc2(gl::relu(fc1(x)).detach()); }
};
GRADLAB_MODULE(DetachInForward);

// A per-class output scale that requires grad but is a plain member, not a registered parameter.
struct UnregisteredScaleImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  Tensor scale;
  UnregisteredScaleImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
    scale = gl::ones({10}).requires_grad_(true);
  }
  Tensor forward(const Tensor& x) { return fc2(gl::relu(fc1(x))) * scale; }
};
GRADLAB_MODULE(UnregisteredScale);

// The hidden layer [B, 128] transposed and reshaped back to [B, 128]: every row mixes samples.
struct ReshapeMixesBatchImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  ReshapeMixesBatchImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
  }
  Tensor forward(const Tensor& x) {
    const Tensor h = gl::relu(fc1(x));
    return fc2(h.transpose(0, 1).reshape({x.size(0), -1}));
  }
};
GRADLAB_MODULE(ReshapeMixesBatch);

// An op outside its domain on h = fc1(x):
//   kLog:      log(relu(h)): log 0 = -inf in forward;
//   kSqrt:     sqrt(relu(h)): finite forward, d sqrt(u) / du = inf at u = 0 in backward (relu's
//              backward then masks it: a latent Inf that anomaly mode names);
//   kSqrtZero: a hand-written |h| = sqrt(h * h) on a zero-initialized fc1 (h = 0): finite forward
//              and loss, NaN gradient (inf * 0) for fc1 at the first backward.
enum class AtZero { kLog, kSqrt, kSqrtZero };
struct OpAtZeroImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  AtZero op;
  explicit OpAtZeroImpl(AtZero o) : op(o) {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
    gl::NoGradGuard no_grad;
    if (op == AtZero::kSqrtZero) fc1->weight.zero_(), fc1->bias.zero_();
  }
  Tensor forward(const Tensor& x) {
    const Tensor h = fc1(x);
    switch (op) {
      case AtZero::kLog:
        return fc2(gl::log(gl::relu(h)));
      case AtZero::kSqrt:
        return fc2(gl::sqrt(gl::relu(h)));
      case AtZero::kSqrtZero:
        break;
    }
    return fc2(gl::sqrt(h * h));
  }
};
GRADLAB_MODULE(OpAtZero);

// fc2(relu(fc1(x))) with the ReLU called as a function (no module to hook) and fc1's bias at -10:
// every pre-activation negative, a dead ReLU only the graph can see.
struct FunctionalDeadReluImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  FunctionalDeadReluImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
    gl::NoGradGuard no_grad;
    fc1->bias.fill_(-10.0);
  }
  Tensor forward(const Tensor& x) { return fc2(gl::relu(fc1(x))); }
};
GRADLAB_MODULE(FunctionalDeadRelu);

// `depth` Linear(64, 64) layers (the last 64 -> 10) with `Act` between them, every weight drawn
// from N(0, init_std^2) and the biases 0: a planted init scale.
template <class Act>
nn::Sequential deep_mlp(int depth, double init_std) {
  gl::manual_seed(3);
  nn::Sequential net;
  for (int i = 0; i < depth; ++i) {
    net->push_back(nn::Linear(64, i + 1 == depth ? 10 : 64));
    if (i + 1 < depth) net->push_back(Act());
  }
  gl::NoGradGuard no_grad;
  for (auto& [name, p] : net->named_parameters()) {
    if (name.find("weight") != std::string::npos) nn::init::normal_(p, 0.0, init_std);
    else p.zero_();
  }
  return net;
}

// The parameter `name` of net scaled (w * scale + shift) in place: a planted init bug.
template <class H>
H with_param(H net, const std::string& name, double scale, double shift = 0) {
  gl::NoGradGuard no_grad;
  for (auto& [n, p] : net->named_parameters())
    if (n == name) {
      p.mul_(scale);
      p.add_(shift);
    }
  return net;
}

// ---- setups ------------------------------------------------------------------------------------

template <class Opt, class O>
Scenario make_setup(dg::Model model, dg::Loss loss, const O& opt_options, Tensor x, Tensor y,
                    dg::DoctorOptions o = with_stats(), Tensor holdout = {}) {
  auto opt = std::make_shared<Opt>(model.module->parameters(), opt_options);
  Scenario s{std::move(model), std::move(loss), std::move(opt)};
  s.data = {std::move(x), std::move(y), std::move(holdout)};
  s.options = std::move(o);
  return s;
}
// The digits classification setup with SGD: model on (x, y), the test split as held-out inputs.
Scenario sgd(dg::Model model, double lr, Tensor x = train_x(), Tensor y = train_y(),
             dg::DoctorOptions o = with_stats(), dg::Loss loss = nn::CrossEntropyLoss()) {
  return make_setup<gl::optim::SGD>(std::move(model), std::move(loss), gl::optim::SGDOptions(lr),
                                    std::move(x), std::move(y), std::move(o), test_x());
}
Scenario adam(dg::Model model, double lr, Tensor x = train_x(), Tensor y = train_y(),
              dg::DoctorOptions o = with_stats()) {
  return make_setup<gl::optim::Adam>(std::move(model), nn::CrossEntropyLoss(),
                                     gl::optim::AdamOptions(lr), std::move(x), std::move(y),
                                     std::move(o), test_x());
}
// Digits as images [N, 1, 8, 8] for the CNN.
Scenario cnn_setup(nn::Sequential net, Tensor x = images(train_x())) {
  return make_setup<gl::optim::SGD>(net, nn::CrossEntropyLoss(), gl::optim::SGDOptions(0.1),
                                    std::move(x), train_y(), with_stats(), images(test_x()));
}
// The ink regression with MSE.
Scenario regression(dg::Model model, Tensor y = ink_target(raw_digits().train.data())) {
  return make_setup<gl::optim::SGD>(std::move(model), nn::MSELoss(), gl::optim::SGDOptions(0.05),
                                    train_x(), std::move(y), with_stats(), test_x());
}
// Even digit or not, one logit and BCEWithLogitsLoss.
Scenario binary(nn::Sequential net) {
  std::vector<double> even;
  for (int64_t c : train_y().to_vector<int64_t>()) even.push_back(c % 2 == 0 ? 1.0 : 0.0);
  const Tensor y = gl::from_vector(even, {static_cast<int64_t>(even.size()), 1}).to(gl::kFloat32);
  return make_setup<gl::optim::SGD>(net, nn::BCEWithLogitsLoss(), gl::optim::SGDOptions(0.1),
                                    train_x(), y, with_stats(), test_x());
}
nn::Sequential binary_net(bool sigmoid) {
  gl::manual_seed(6);
  nn::Sequential net(nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 1));
  if (sigmoid) net->push_back(nn::Sigmoid());
  return net;
}

// ---- the catalogue
// -------------------------------------------------------------------------------

Expect fails(Stage stage, std::string check, std::vector<std::string> words,
             std::vector<std::string> not_words = {}) {
  return {stage, std::move(check), Verdict::Fail, std::move(words), std::move(not_words)};
}
Expect warns(Stage stage, std::string check, std::vector<std::string> words) {
  return {stage, std::move(check), Verdict::Warn, std::move(words), {}};
}

const std::vector<Bug>& bugs() {
  static const std::vector<Bug> rows = {
      // -- data --
      {"labels_shifted_by_one", [] { return sgd(mlp(), 0.1, train_x(), train_y() + 1); },
       fails(Stage::Data, "label_range", {"labels span [1, 10]", "shifted by one"})},
      {"labels_read_from_a_wrong_column", [] { return sgd(mlp(), 0.1, train_x(), train_y() * 2); },
       fails(Stage::Data, "label_range", {"outside [0, 10)", "a wrong column"})},
      {"one_hot_targets_for_a_class_index_loss",
       [] { return sgd(mlp(), 0.1, train_x(), gl::eye(10).index_select(0, train_y())); },
       fails(Stage::Data, "label_range", {"not class indices", "argmax(1)"})},
      {"held_out_labels_shifted_by_one",
       [] {
         Scenario s = sgd(mlp(), 0.1);
         s.data.holdout_targets = digits().test.targets() + 1;
         return s;
       },
       fails(Stage::Data, "holdout_label_range", {"held-out split", "shifted by one"})},
      {"nan_in_the_inputs", [] { return sgd(mlp(), 0.1, planted(train_x(), 17, 5, std::nan(""))); },
       fails(Stage::Data, "finite", {"inputs[17, 5] = nan", "drop or repair"})},
      {"inf_in_regression_targets",
       [] {
         return regression(regressor(),
                           planted(ink_target(raw_digits().train.data()), 3, 0, INFINITY));
       },
       fails(Stage::Data, "finite", {"targets[3, 0] = inf"})},
      {"images_transposed",
       [] {
         return cnn_setup(cnn(), images(prepared(transpose_images(raw_digits().train.data()))));
       },
       fails(Stage::Data, "input_stats", {"images transposed", "axis order"})},
      {"normalization_missing", [] { return sgd(mlp(), 0.1, raw_digits().train.data()); },
       fails(Stage::Data, "input_stats", {"normalization missing", "(x - mean) / std"})},
      {"inputs_scaled_x255", [] { return sgd(mlp(), 0.1, train_x() * 255.0); },
       fails(Stage::Data, "input_stats", {"scaled by 255", "constant factor"})},
      {"inputs_divided_by_255_twice", [] { return sgd(mlp(), 0.1, train_x() / 255.0); },
       fails(Stage::Data, "input_stats", {"scaled by 0.00392"})},
      {"inputs_shifted_by_128", [] { return sgd(mlp(), 0.1, train_x() + 128.0); },
       fails(Stage::Data, "input_stats", {"shifted by 128"})},
      {"channels_reversed_bgr",
       [] {
         const Tensor bgr = gl::index_select(rgb(raw_digits().train.data()), 1,
                                             gl::from_vector(std::vector<int64_t>{2, 1, 0}, {3}));
         dg::DoctorOptions o;
         o.input_stats = rgb_stats();
         return make_setup<gl::optim::SGD>(cnn(3), nn::CrossEntropyLoss(),
                                           gl::optim::SGDOptions(0.1), rgb_prepared(bgr), train_y(),
                                           o);
       },
       fails(Stage::Data, "input_stats", {"channels reversed", "BGR vs RGB"})},
      {"inputs_not_standardized_no_reference",
       [] {
         return adam(mlp(), 1e-3, raw_digits().train.data() * 16.0, train_y(), dg::DoctorOptions{});
       },
       warns(Stage::Data, "input_stats", {"do not look standardized"})},
      {"test_rows_leaked_into_training",
       [] {
         const Tensor x = gl::cat({train_x(), test_x().narrow(0, 0, 100)});
         const Tensor y = gl::cat({train_y(), digits().test.targets().narrow(0, 0, 100)});
         return sgd(mlp(), 0.1, x, y);
       },
       fails(Stage::Data, "split_leakage", {"100 of 360 held-out rows", "deduplicate"})},
      {"loader_sorted_by_label_shuffle_forgotten",
       [] {
         const gl::data::TensorDataset sorted = sorted_by_label(train_x(), train_y());
         Scenario s = sgd(mlp(), 0.1, sorted.data(), sorted.targets());
         s.loader = std::make_shared<gl::data::DataLoader>(sorted, gl::data::DataLoaderOptions(64));
         return s;
       },
       fails(Stage::Data, "loader_order", {"grouped by label", "shuffle(true)"})},
      {"every_feature_constant",
       [] { return sgd(mlp(), 0.1, gl::zeros_like(train_x()), train_y(), dg::DoctorOptions{}); },
       fails(Stage::Data, "constant_features", {"cannot tell the samples apart"})},
      {"rows_appended_twice_by_a_join",
       [] {
         const Tensor x = train_x(), y = train_y();  // 40 rows (2.7%) a second time, labels and all
         return sgd(mlp(), 0.1, gl::cat({x, x.narrow(0, 10, 40)}), gl::cat({y, y.narrow(0, 10, 40)}));
       },
       warns(Stage::Data, "duplicates", {"repeat an earlier row bit for bit", "deduplicate before splitting"})},
      {"labels_joined_to_the_wrong_rows",
       [] {
         const Tensor x = train_x(), y = train_y();  // 100 rows again, each with another label
         std::vector<int64_t> next;  // label + 1, 9 -> 0
         for (int64_t c : y.narrow(0, 0, 100).to_vector<int64_t>()) next.push_back((c + 1) % 10);
         const Tensor wrong = gl::from_vector(next, {100});
         return sgd(mlp(), 0.1, gl::cat({x, x.narrow(0, 0, 100)}), gl::cat({y, wrong}));
       },
       fails(Stage::Data, "duplicates", {"another target than the row they repeat", "label noise"})},
      {"a_class_missing_from_the_split",
       [] {
         auto [x, y] = subsample(train_x(), train_y(), [](int64_t c, int64_t) { return c != 9; });
         return sgd(mlp(), 0.1, x, y);
       },
       warns(Stage::Data, "label_balance", {"never seen: class 9"})},
      // -- model --
      {"a_layer_left_out_of_forward", [] { return sgd(LayerLeftOut(), 0.1); },
       fails(Stage::Model, "gradient_flow",
             {"no gradient from the loss: fc2.weight, fc2.bias", "left out"})},
      {"a_detach_in_forward", [] { return sgd(DetachInForward(), 0.1); },
       fails(Stage::Model, "gradient_flow", {"fc1.weight", "a detach()"})},
      {"an_unregistered_tensor_that_requires_grad", [] { return sgd(UnregisteredScale(), 0.1); },
       fails(Stage::Model, "gradient_flow", {"without being a parameter", "register_parameter"})},
      {"parameters_missing_from_the_optimizer",
       [] {
         nn::Sequential net = mlp();
         std::vector<Tensor> last;
         for (auto& [n, p] : net->named_parameters())
           if (n.rfind("2.", 0) == 0) last.push_back(p);
         Scenario s = sgd(net, 0.1);
         s.optimizer = std::make_shared<gl::optim::SGD>(last, gl::optim::SGDOptions(0.1));
         return s;
       },
       fails(Stage::Model, "gradient_flow",
             {"2 trainable parameters are not held by the optimizer", "0.weight"})},
      {"every_weight_frozen",
       [] {
         nn::Sequential net = mlp();
         for (Tensor& p : net->parameters()) p.requires_grad_(false);
         return sgd(net, 0.1);
       },
       fails(Stage::Model, "gradient_flow", {"no trainable parameter", "requires_grad"})},
      {"softmax_before_cross_entropy",
       [] {
         gl::manual_seed(1);
         return sgd(
             nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10), nn::Softmax(1)),
             0.1);
       },
       fails(Stage::Model, "loss_pairing", {"softmax", "applies log_softmax itself"})},
      {"log_softmax_before_cross_entropy",
       [] {
         gl::manual_seed(1);
         return sgd(nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10),
                                   nn::LogSoftmax(1)),
                    0.1);
       },
       warns(Stage::Model, "loss_pairing", {"log_softmax", "redundant"})},
      {"sigmoid_before_bce_with_logits", [] { return binary(binary_net(true)); },
       fails(Stage::Model, "loss_pairing", {"sigmoid", "applies sigmoid itself"})},
      {"raw_logits_into_nll_loss",
       [] { return sgd(mlp(), 0.1, train_x(), train_y(), with_stats(), nn::NLLLoss()); },
       fails(Stage::Model, "loss_pairing", {"expects log-probabilities", "log_softmax(dim=1)"})},
      {"cnn_head_without_flatten",
       [] {
         gl::manual_seed(3);
         return cnn_setup(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)),
                                         nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2),
                                         nn::Conv2d(8, 10, 4)));
       },
       fails(Stage::Model, "output_shape",
             {"output [64, 10, 1, 1]", "expected [64, 10]", "flatten"})},
      {"lstm_batch_first_forgotten", [] { return adam(LstmClassifier(false), 1e-2); },
       fails(Stage::Model, "output_shape", {"output [8, 10]", "expected [64, 10]"})},
      {"regression_output_b_1_against_targets_b",
       [] { return regression(regressor(), ink_target(raw_digits().train.data()).reshape({-1})); },
       fails(Stage::Model, "output_shape", {"output [64, 1]", "expected [64]"})},
      {"a_reshape_mixes_the_batch", [] { return sgd(ReshapeMixesBatch(), 0.1); },
       fails(Stage::Model, "batch_independence", {"the samples mix", "moves the batch dim"})},
      {"dead_relu_from_a_large_negative_bias",
       [] { return sgd(with_param(mlp(), "0.bias", 0.0, -10.0), 0.1); },
       fails(Stage::Model, "activations", {"'1' (ReLU): 100% of its units", "dead ReLU"})},
      {"saturated_tanh_from_a_huge_init_scale",
       [] {
         gl::manual_seed(1);
         return sgd(with_param(nn::Sequential(nn::Linear(64, 128), nn::Tanh(), nn::Linear(128, 10)),
                               "0.weight", 30.0),
                    0.1);
       },
       fails(Stage::Model, "activations", {"'1' (Tanh)", "saturated (gradient ~0)"})},
      {"dead_functional_relu_from_a_large_negative_bias", [] { return sgd(FunctionalDeadRelu(), 0.1); },
       fails(Stage::Model, "activations", {"relu at ", "catalogue_test.cpp:", "dead ReLU"})},
      {"vanishing_gradients_deep_sigmoid_tiny_init",
       [] { return sgd(deep_mlp<nn::Sigmoid>(10, 0.01), 0.1); },
       fails(Stage::Model, "layer_gradients", {"vanishing gradients"})},
      {"exploding_gradients_deep_relu_large_init", [] { return sgd(deep_mlp<nn::ReLU>(10, 1.0), 0.1); },
       fails(Stage::Model, "layer_gradients", {"exploding gradients"})},
      {"sigmoid_output_on_standardized_regression_targets",
       [] {
         gl::manual_seed(4);
         return regression(nn::Sequential(nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 1), nn::Sigmoid()));
       },
       fails(Stage::Model, "loss_floor", {"bounds the output to (0, 1)", "MSE cannot fall below"})},
      {"softmax_into_mse_on_one_hot_targets",
       [] {
         gl::manual_seed(1);
         std::vector<double> hot;
         for (int64_t c : train_y().to_vector<int64_t>())
           for (int64_t k = 0; k < 10; ++k) hot.push_back(k == c ? 1.0 : 0.0);
         const Tensor onehot = gl::from_vector(hot, {train_y().size(0), 10}).to(gl::kFloat32);
         return make_setup<gl::optim::SGD>(nn::Sequential(nn::Linear(64, 10), nn::Softmax(1)), nn::MSELoss(),
                                           gl::optim::SGDOptions(0.1), train_x(), onehot, with_stats(), test_x());
       },
       warns(Stage::Model, "loss_floor", {"every target on an asymptote of softmax", "CrossEntropyLoss"})},
      {"overconfident_init_last_layer_x100",
       [] { return sgd(with_param(mlp(), "2.weight", 100.0), 0.1); },
       fails(Stage::Model, "initial_loss", {"confident and wrong"})},
      {"log_of_zero_in_forward", [] { return sgd(OpAtZero(AtZero::kLog), 0.1); },
       fails(Stage::Model, "initial_loss", {"not finite", "log(0)"})},
      // -- training --
      {"sgd_lr_far_too_large", [] { return sgd(mlp(), 8.0); },
       fails(Stage::Training, "overfit_one_batch", {"rising loss", "the LR is too large (8)"},
             {"capacity"})},
      {"sgd_lr_far_too_small", [] { return sgd(mlp(), 1e-5); },
       fails(Stage::Training, "overfit_one_batch", {"flat loss", "the LR is too small (1e-05)"},
             {"capacity"})},
      {"lr_zero", [] { return sgd(mlp(), 0.0); },
       fails(Stage::Training, "overfit_one_batch", {"flat loss", "the LR is 0"}, {"raise it 10x"})},
      {"adam_lr_far_too_large", [] { return adam(mlp(), 1.0); },
       fails(Stage::Training, "lr_range",
             {"the optimizer's lr is 1", "past the point where the loss blows up"})},
      {"a_slow_get_starves_the_model",
       [] {
         // get() decodes (sleeps) 2 ms per sample: a batch of 16 takes >= 32 ms, a step < 1 ms
         Scenario s = sgd(mlp(), 0.1, digits().train.data(), digits().train.targets(), dg::DoctorOptions{});
         s.loader = std::make_shared<gl::data::DataLoader>(SlowDigits(2),
                                                           gl::data::DataLoaderOptions(16).shuffle(true).seed(1));
         return s;
       },
       warns(Stage::Training, "loader_speed", {"waiting for data", "raise num_workers (now 0)"})},
      {"sgd_momentum_lr_past_divergence",
       [] {
         Scenario s = sgd(mlp(), 3.0);
         s.optimizer = std::make_shared<gl::optim::SGD>(s.model.module->parameters(),
                                                        gl::optim::SGDOptions(3.0).momentum(0.9));
         return s;
       },
       fails(Stage::Training, "gradient_stats",
             {"of its size", "updates as large as the weights"})},
      {"sqrt_at_zero_infinite_in_backward", [] { return sgd(OpAtZero(AtZero::kSqrt), 0.1); },
       fails(Stage::Training, "nonfinite_watch",
             {"step 0: anomaly detected in backward", "SqrtBackward0", "before any update"},
             {"LR is too large", "lower it 10x", "lower the LR", "past the point"})},
      {"sqrt_of_a_square_at_zero_nan_gradient",
       [] { return sgd(OpAtZero(AtZero::kSqrtZero), 0.1); },
       fails(Stage::Model, "batch_independence",
             {"not finite", "cannot be judged", "sqrt or log at 0"})},
  };
  return rows;
}

const std::vector<Healthy>& healthy() {
  static const std::vector<Healthy> rows = {
      {"digits_mlp_sgd", [] { return sgd(mlp(), 0.1); }},
      {"cnn_with_batchnorm", [] { return cnn_setup(cnn()); }},
      {"mlp_with_dropout", [] { return sgd(dropout_mlp(), 0.1); }},
      {"lstm_classifier", [] { return adam(LstmClassifier(), 1e-2); }},
      {"mse_regression", [] { return regression(regressor()); }},
      {"class_imbalanced_1_to_5",
       [] {
         // classes 5..9 keep every 5th sample: about 144 vs 29 per class
         auto [x, y] = subsample(train_x(), train_y(),
                                 [](int64_t c, int64_t k) { return c < 5 || k % 5 == 0; });
         return sgd(mlp(), 0.1, x, y);
       }},
      {"adam_small_lr_1e-4", [] { return adam(mlp(), 1e-4); }},
      {"binary_bce_with_logits", [] { return binary(binary_net(false)); }},
  };
  return rows;
}

// ---- results, the table and the summary
// ----------------------------------------------------------

struct Result {
  std::string row;
  bool healthy = false, ok = false;
  std::string detail;
  double seconds = 0;
};
std::vector<Result>& results() {
  static std::vector<Result> r;
  return r;
}

class CatalogueSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (results().empty()) return;
    int bugs_run = 0, found = 0, healthy_run = 0, alarms = 0;
    std::printf("\n%-45s %-6s %6s  %s\n", "row", "result", "s", "finding");
    for (const Result& r : results()) {
      std::printf("%-45s %-6s %6.2f  %s\n", r.row.c_str(),
                  r.healthy ? (r.ok ? "quiet" : "ALARM") : (r.ok ? "found" : "MISSED"), r.seconds,
                  r.detail.c_str());
      if (r.healthy) {
        ++healthy_run;
        alarms += r.ok ? 0 : 1;
      } else {
        ++bugs_run;
        found += r.ok ? 1 : 0;
      }
    }
    std::printf("catalogue: found %d of %d planted bugs, %d false alarm%s on %d healthy setups\n",
                found, bugs_run, alarms, alarms == 1 ? "" : "s", healthy_run);
  }
};
[[maybe_unused]] ::testing::Environment* const summary =
    ::testing::AddGlobalTestEnvironment(new CatalogueSummary);

std::string one_line(const dg::Finding& f) {
  std::string s(1, '[');  // (built by append: GCC 12 warns falsely on "[" + std::string)
  s.append(dg::to_string(f.verdict))
      .append("] ")
      .append(dg::to_string(f.stage))
      .append("/")
      .append(f.check);
  s.append(": ").append(f.evidence, 0, f.evidence.find('\n'));
  if (s.size() > 150) s.resize(147), s.append("...");
  return s;
}

// CATALOGUE_REPORTS=1 prints every row's report (to read the wording of all findings).
void show(const std::string& row, const dg::Report& r, const char* how) {
  if (std::getenv("CATALOGUE_REPORTS"))
    std::printf("---- %s (%s)\n%s\n", row.c_str(), how, r.text().c_str());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class CatalogueBug : public ::testing::TestWithParam<Bug> {};
class CatalogueHealthy : public ::testing::TestWithParam<Healthy> {};

}  // namespace

// Each planted bug: found with the right words, doctor stops at its stage; and, for a failure of
// the data or model stage, again with keep_going: no later finding blames the LR or the capacity.
TEST_P(CatalogueBug, IsFoundWithTheRightWords) {
  const Bug& bug = GetParam();
  const auto t0 = std::chrono::steady_clock::now();
  Scenario s = bug.build();
  const std::vector<double> before = flat(*s.model.module);
  const dg::Report r = run_doctor(s, false);
  show(bug.name, r, "stops at the first failed stage");
  const Match m = match(r, bug.expect, false);
  EXPECT_TRUE(m.found) << m.why << "\n" << r;
  EXPECT_EQ(flat(*s.model.module), before) << "doctor leaves the model as it was";
  bool ok = m.found;
  std::string why = m.found ? one_line(*m.finding) : m.why;
  if (bug.expect.verdict == Verdict::Fail && bug.expect.stage != Stage::Training) {
    const dg::Report k = run_doctor(s, true);
    show(bug.name, k, "keep_going");
    const Match mk = match(k, bug.expect, true);
    EXPECT_TRUE(mk.found) << "keep_going: " << mk.why << "\n" << k;
    if (ok && !mk.found) why = "keep_going: " + mk.why;
    ok = ok && mk.found;
  }
  results().push_back({bug.name, false, ok, why, seconds_since(t0)});
}

TEST_P(CatalogueHealthy, RaisesNoWarnAndNoFail) {
  const Healthy& h = GetParam();
  const auto t0 = std::chrono::steady_clock::now();
  Scenario s = h.build();
  const dg::Report r = run_doctor(s, false);
  show(h.name, r, "healthy");
  const std::vector<const dg::Finding*> alarms = false_alarms(r);
  EXPECT_TRUE(alarms.empty()) << "a warning on a healthy run is a defect:\n" << r;
  EXPECT_EQ(r.stages_run.size(), 3u) << r;
  results().push_back({h.name, true, alarms.empty(),
                       alarms.empty() ? "no warn, no fail" : one_line(*alarms.front()),
                       seconds_since(t0)});
}

INSTANTIATE_TEST_SUITE_P(Catalogue, CatalogueBug, ::testing::ValuesIn(bugs()),
                         [](const ::testing::TestParamInfo<Bug>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Catalogue, CatalogueHealthy, ::testing::ValuesIn(healthy()),
                         [](const ::testing::TestParamInfo<Healthy>& i) {
                           std::string n = i.param.name;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The catalogue's size, as the issue asks: at least 25 planted bugs over the three stages, at
// least 6 healthy setups.
TEST(Catalogue, HasTwentyFiveBugsOverTheThreeStagesAndSixHealthySetups) {
  std::map<Stage, int> per_stage;
  for (const Bug& b : bugs()) ++per_stage[b.expect.stage];
  EXPECT_GE(bugs().size(), 25u);
  for (Stage s : {Stage::Data, Stage::Model, Stage::Training})
    EXPECT_GE(per_stage[s], 4) << dg::to_string(s);
  EXPECT_GE(healthy().size(), 6u);
}

// ---- the catalogue can fail: the matcher on wrong reports
// ----------------------------------------

namespace {

dg::Finding finding(Stage stage, std::string check, Verdict v, std::string evidence,
                    std::string hint = {}) {
  dg::Finding f;
  f.stage = stage;
  f.check = std::move(check);
  f.verdict = v;
  f.evidence = std::move(evidence);
  f.hint = std::move(hint);
  return f;
}
const Expect kShifted = {Stage::Data, "label_range", Verdict::Fail, {"shifted by one"}, {}};

}  // namespace

TEST(CatalogueMatcher, NamesEachWayAReportCanMissARow) {
  dg::Report quiet;  // the check ran and saw nothing
  quiet.add(finding(Stage::Data, "label_range", Verdict::Ok, "labels span [0, 9]"));
  EXPECT_THAT(match(quiet, kShifted, false).why, HasSubstr("is ok, expected fail"));

  dg::Report absent;
  absent.add(finding(Stage::Data, "finite", Verdict::Ok, "every input is finite"));
  EXPECT_THAT(match(absent, kShifted, false).why, HasSubstr("did not run"));

  dg::Report wrong_words;
  wrong_words.add(finding(Stage::Data, "label_range", Verdict::Fail, "1 of 10 labels is outside",
                          "check the labels"));
  wrong_words.stopped_at = Stage::Data;
  EXPECT_THAT(match(wrong_words, kShifted, false).why, HasSubstr("does not say 'shifted by one'"));

  dg::Report right;
  right.add(finding(Stage::Data, "label_range", Verdict::Fail, "labels span [1, 10]",
                    "shifted by one: subtract 1"));
  right.stopped_at = Stage::Data;
  EXPECT_TRUE(match(right, kShifted, false).found);
  right.stopped_at.reset();  // found, but doctor went on without keep_going
  EXPECT_THAT(match(right, kShifted, false).why, HasSubstr("did not stop at the data stage"));

  // knock-on blame: with keep_going a later finding keeps its own hint blaming the LR
  dg::Report blame = right;
  blame.add(finding(Stage::Training, "overfit_one_batch", Verdict::Fail, "loss 2.3 -> nan",
                    "the LR is too large (0.1)"));
  EXPECT_THAT(match(blame, kShifted, true).why, HasSubstr("hint says 'LR'"));
  dg::Report undeferred = right;
  undeferred.add(finding(Stage::Model, "initial_loss", Verdict::Warn, "loss at init 9",
                         "normalize the inputs"));
  EXPECT_THAT(match(undeferred, kShifted, true).why, HasSubstr("not deferred"));
  undeferred.defer_to(1, undeferred.findings()[0]);
  EXPECT_TRUE(match(undeferred, kShifted, true).found) << match(undeferred, kShifted, true).why;

  // a model bug must not be reported after a data failure
  dg::Report earlier;
  earlier.add(finding(Stage::Data, "finite", Verdict::Fail, "nan"));
  earlier.add(finding(Stage::Model, "loss_pairing", Verdict::Fail, "softmax"));
  EXPECT_THAT(
      match(earlier, {Stage::Model, "loss_pairing", Verdict::Fail, {"softmax"}, {}}, true).why,
      HasSubstr("an earlier stage failed first"));

  dg::Report noisy;
  noisy.add(finding(Stage::Data, "finite", Verdict::Ok, "finite"));
  noisy.add(finding(Stage::Training, "lr_range", Verdict::Warn, "lr above the lowest-loss LR"));
  EXPECT_EQ(false_alarms(noisy).size(), 1u);
}

// A real doctor run: the x255 row with its reference statistics left out no longer names the
// constant scale (input_stats only warns then), so the row is reported missed.
TEST(CatalogueMatcher, ARowIsMissedWhenItsCheckCannotSeeTheBug) {
  for (const Bug& b : bugs()) {
    if (b.name != "inputs_scaled_x255") continue;
    Scenario s = b.build();
    s.options.input_stats = {};
    const dg::Report r = run_doctor(s, false);
    const Match m = match(r, b.expect, false);
    EXPECT_FALSE(m.found) << r;
    EXPECT_THAT(m.why, HasSubstr("input_stats is warn, expected fail"));
    return;
  }
  FAIL() << "row inputs_scaled_x255 not in the catalogue";
}
