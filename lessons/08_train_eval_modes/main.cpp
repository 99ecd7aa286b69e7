// Lesson 08: train and eval modes.
//
// model->train() and model->eval() switch the layers whose behaviour depends on the mode:
// Dropout (random masks in training, the identity in eval) and BatchNorm (batch statistics and
// running-stat updates in training, the running statistics in eval). Evaluating a model still
// in training mode gives metrics that change from run to run and quietly rewrites BatchNorm's
// running statistics with test data. Finally, inference under NoGradGuard records no graph: it
// keeps less memory alive and records no node (both counted); its speed-up is printed only.
// Last, what eval() does NOT do: it does not turn autograd off (that is NoGradGuard's or
// InferenceMode's job), and it does not apply the training preprocessing (a raw input fed to an
// eval-mode model gives wrong answers). An inference pipeline is all three steps.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
using lesson::fmt;

namespace {

// Accuracy over x in batches of `batch` (the mode is whatever the model is in).
double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y, int64_t batch) {
  gl::NoGradGuard no_grad;
  double correct = 0;
  for (int64_t s = 0; s < x.size(0); s += batch) {
    const int64_t n = std::min(batch, x.size(0) - s);
    correct += gl::sum(gl::argmax(model(x.narrow(0, s, n)), 1) == y.narrow(0, s, n)).item<double>();
  }
  return correct / static_cast<double>(x.size(0));
}

// Median process CPU time (ms) of `reps` calls of f, over `trials` trials.
template <class F>
double median_cpu_ms(F&& f, int reps, int trials) {
  std::vector<double> t;
  for (int k = 0; k < trials; ++k) {
    const std::clock_t start = std::clock();
    for (int r = 0; r < reps; ++r) f();
    t.push_back(1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L(
      "08", "train and eval modes", argc, argv,
      {{"skip_normalize",
        "section 5's inference pipeline forgets to standardize the raw pixels",
        "the pipeline (standardize, eval, InferenceMode) gives the eval-mode test accuracy"},
       {"pipeline_without_guard",
        "section 5's inference pipeline calls model->eval() but forgets InferenceMode",
        "the pipeline's output has no grad_fn"}});
  return L.run([&] {
    // -------------------------------------------------------------------------------------------
    L.section("1. Dropout: random in training, the identity in eval");
    gl::manual_seed(0);
    nn::Dropout drop(0.5);  // nn.Dropout(p=0.5)
    const gl::Tensor x = gl::ones({1, 10});
    const gl::Tensor a = drop(x), b = drop(x);
    std::cout << "train mode, call 1: " << a << "\ntrain mode, call 2: " << b << "\n";
    bool zero_or_two = true;
    for (double v : a.to_vector<double>()) zero_or_two = zero_or_two && (v == 0.0 || v == 2.0);
    L.check(!gl::equal(a, b), "two calls in training mode draw two different masks");
    L.check(zero_or_two, "kept elements are scaled by 1/(1-p) = 2, dropped ones are 0");
    const double m = gl::mean(drop(gl::ones({100000}))).item<double>();
    L.check(std::abs(m - 1.0) < 0.02,
            "so the expected value is unchanged (mean of 100000 ones: " + fmt(m) + ")");
    drop->eval();  // model.eval()
    std::cout << "eval mode:          " << drop(x) << "\n";
    L.check(gl::equal(drop(x), x) && gl::equal(drop(x), drop(x)),
            "in eval mode Dropout returns its input, every time");

    // -------------------------------------------------------------------------------------------
    L.section("2. BatchNorm1d: batch statistics in training, running statistics in eval");
    nn::BatchNorm1d bn(3);
    gl::Generator g(1);
    const gl::Tensor batch = gl::randn({32, 3}, {}, &g) * 2.0 + gl::tensor({5.0, -2.0, 0.5});
    const gl::Tensor batch_mean = gl::mean(batch, {0});
    bn(batch);
    std::cout << "batch mean       " << batch_mean << "\nrunning_mean     " << bn->running_mean
              << "  (= 0.9 * 0 + 0.1 * batch mean)\n";
    L.check(gl::allclose(bn->running_mean, batch_mean * 0.1, 1e-5, 1e-6),
            "a training-mode forward moves running_mean by momentum 0.1 towards the batch mean");
    const gl::Tensor row = batch.narrow(0, 0, 1);
    const gl::Tensor other = gl::randn({7, 3}, {}, &g);
    const gl::Tensor y1 = bn(gl::cat({row, batch.narrow(0, 1, 7)})).narrow(0, 0, 1);
    const gl::Tensor y2 = bn(gl::cat({row, other})).narrow(0, 0, 1);
    std::cout << "train mode: the same sample in two batches -> " << y1 << " vs " << y2 << "\n";
    L.check(!gl::allclose(y1, y2, 1e-3, 1e-3),
            "in training mode a sample's output depends on the rest of its batch");
    bn->eval();
    const gl::Tensor stats_before = bn->running_mean.clone();
    const gl::Tensor e1 = bn(gl::cat({row, batch.narrow(0, 1, 7)})).narrow(0, 0, 1);
    const gl::Tensor e2 = bn(gl::cat({row, other})).narrow(0, 0, 1);
    L.check(gl::equal(e1, e2),
            "in eval mode it does not: each sample is normalized with the running statistics");
    L.check(gl::equal(bn->running_mean, stats_before),
            "and eval-mode forwards leave the running statistics alone");
    // Eval-mode BatchNorm by hand, eps = 1e-5 (the default):
    //   (x - running_mean) / sqrt(running_var + eps) * weight + bias
    const gl::Tensor single = bn(row);
    const gl::Tensor by_hand =
        (row - bn->running_mean) / gl::sqrt(bn->running_var + 1e-5) * bn->weight + bn->bias;
    std::cout << "eval mode, one sample: " << single << "\n";
    L.check(single.sizes() == gl::Shape({1, 3}) && gl::allclose(single, e1, 1e-6, 1e-6) &&
                gl::allclose(single, by_hand, 1e-5, 1e-6),
            "a single sample works in eval mode: it equals its row of the batched output and "
            "(x - running_mean) / sqrt(running_var + eps) * weight + bias");
    bn->train();
    L.check_throws(
        [&] { bn(row); }, "more than 1 value per channel",
        "in training mode a batch of one sample has no batch statistics: an error, as in PyTorch");

    // -------------------------------------------------------------------------------------------
    L.section("3. evaluating in training mode gives unstable metrics");
    const gl::data::DigitsSplit digits = gl::data::load_digits_split();  // standardized
    const gl::Tensor x_train = digits.train.data(), y_train = digits.train.targets();
    const gl::Tensor x_test = digits.test.data(), y_test = digits.test.targets();

    gl::manual_seed(0);
    nn::Sequential model(nn::Linear(64, 128), nn::BatchNorm1d(128), nn::ReLU(), nn::Dropout(0.3),
                         nn::Linear(128, 10));
    std::cout << *model << "\n";
    gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.05).momentum(0.9));
    nn::CrossEntropyLoss criterion;
    gl::data::DataLoader loader(
        gl::data::TensorDataset(x_train, y_train),
        gl::data::DataLoaderOptions(64).shuffle(true).drop_last(true).seed(0));
    model->train();
    for (int epoch = 0; epoch < 10; ++epoch) {
      for (gl::data::Batch& bt : loader) {
        opt.zero_grad();
        criterion(model(bt.data), bt.target).backward();
        opt.step();
      }
    }
    auto& bn_layer = model->at<nn::BatchNorm1dImpl>(1);
    model->eval();
    const double eval_a = accuracy(model, x_test, y_test, 16),
                 eval_b = accuracy(model, x_test, y_test, 16);
    const double eval_full = accuracy(model, x_test, y_test, 360);
    std::cout << "eval mode, batches of 16: " << fmt(eval_a) << ", again: " << fmt(eval_b)
              << ", one batch of 360: " << fmt(eval_full) << "\n";
    L.check(eval_a == eval_b && eval_a == eval_full,
            "in eval mode the test accuracy is the same every time and for every batch size");

    const gl::Tensor running_before = bn_layer.running_mean.clone();
    model->train();  // BUG: forgot model->eval() before evaluating
    std::vector<double> train_accs;
    for (int k = 0; k < 5; ++k) train_accs.push_back(accuracy(model, x_test, y_test, 16));
    std::cout << "train mode, batches of 16, 5 evaluations:";
    for (double v : train_accs) std::cout << " " << fmt(v);
    const auto [lo, hi] = std::minmax_element(train_accs.begin(), train_accs.end());
    double mean_train = 0;
    for (double v : train_accs) mean_train += v / 5;
    std::cout << "\n  spread " << fmt(*hi - *lo) << ", mean " << fmt(mean_train) << " vs eval mode "
              << fmt(eval_a) << "\n";
    L.check(*hi > *lo,
            "in training mode the same model on the same test set gives a different accuracy each "
            "time");
    L.check(
        mean_train < eval_a,
        "and it is lower on average: Dropout is still on and batches of 16 give noisy statistics");
    L.check(
        !gl::allclose(bn_layer.running_mean, running_before, 0, 1e-6),
        "the train-mode evaluation also overwrote BatchNorm's running statistics with test data");

    // -------------------------------------------------------------------------------------------
    L.section("4. inference under NoGradGuard: no graph, less memory, less time");
    model->eval();
    const gl::Tensor big =
        gl::cat({x_test, x_test, x_test, x_test, x_test, x_test, x_test, x_test});  // 2880 rows
    auto peak_during = [&](bool grad) {
      gl::AutoGradMode mode(grad);
      const std::size_t base = gl::memory::allocated();
      gl::memory::reset_peak();
      gl::Tensor out = model(big);  // kept alive, as a result one goes on to use
      const std::size_t peak = gl::memory::max_allocated() - base;
      const std::size_t held = gl::memory::allocated() - base;
      return std::make_tuple(peak, held, out.grad_fn() != nullptr);
    };
    const auto [peak_g, held_g, graph_g] = peak_during(true);
    const auto [peak_n, held_n, graph_n] = peak_during(false);
    std::cout << "forward of " << big.size(0)
              << " samples, memory held while the output is alive: with grad "
              << fmt(static_cast<double>(held_g) / 1024, 1) << " KiB, under NoGradGuard "
              << fmt(static_cast<double>(held_n) / 1024, 1) << " KiB (peaks "
              << fmt(static_cast<double>(peak_g) / 1024, 1) << " / "
              << fmt(static_cast<double>(peak_n) / 1024, 1) << " KiB)\n";
    L.check(graph_g && !graph_n,
            "with grad mode on the output has a grad_fn; under NoGradGuard it has none");
    L.check(held_g > 3 * held_n,
            "the graph keeps every saved activation alive: more than 3x the memory of the output "
            "alone");
    L.check(peak_g > peak_n, "and the peak is higher too");

    const gl::Tensor small = x_test.narrow(0, 0, 8);
    auto infer = [&](bool grad) {
      gl::AutoGradMode mode(grad);
      return model(small);
    };
    // What the guard saves is work that can be counted: the graph nodes a forward records (and
    // the activations they save, measured above). A count, unlike a time, does not depend on the
    // machine or its load.
    auto nodes_of = [&](bool grad) { return gl::autograd::count_nodes(infer(grad)); };
    const std::size_t nodes_g = nodes_of(true), nodes_n = nodes_of(false);
    std::cout << "graph nodes one forward of 8 samples records: with grad " << nodes_g
              << ", under NoGradGuard " << nodes_n << "\n";
    L.check(nodes_n == 0 && nodes_g >= 5,
            "NoGradGuard inference records no node (with grad: one per op and parameter)");
    // NOTE: interleaved trials, best (smallest) CPU time of each: a loaded machine slows some
    // trials, and both modes get the same chances at a quiet one. Printed as information: the
    // saving per forward is real, its size in ms belongs to the machine.
    double t_grad = 1e300, t_nograd = 1e300;
    for (int trial = 0; trial < 5; ++trial) {
      t_grad = std::min(t_grad, median_cpu_ms([&] { infer(true); }, 500, 3));
      t_nograd = std::min(t_nograd, median_cpu_ms([&] { infer(false); }, 500, 3));
    }
    std::cout << "500 forwards of 8 samples (best CPU time of 15 interleaved trials): with grad "
              << fmt(t_grad, 2) << " ms, under NoGradGuard " << fmt(t_nograd, 2) << " ms ("
              << fmt(t_grad / t_nograd, 2) << "x; information, not a claim)\n";

    // -------------------------------------------------------------------------------------------
    L.section("5. eval() is not an inference pipeline");
    {
      // model.eval() flips one flag that Dropout and BatchNorm read. Autograd does not read it.
      model->eval();
      const gl::Tensor out = model(small);
      std::cout << "eval mode, grad mode on: output requires_grad = " << std::boolalpha
                << out.requires_grad() << ", grad_fn = "
                << (out.grad_fn() ? out.grad_fn()->name() : std::string("none")) << ", "
                << gl::autograd::count_nodes(out) << " graph nodes\n";
      L.check(out.requires_grad() && out.grad_fn() != nullptr && gl::autograd::count_nodes(out) >= 5,
              "eval() does not turn off autograd: the output still has a grad_fn and its graph "
              "(it keeps the saved activations alive)");
      {
        gl::InferenceMode guard;  // c10::InferenceMode
        const gl::Tensor quiet = model(small);
        L.check(!quiet.requires_grad() && quiet.grad_fn() == nullptr &&
                    gl::autograd::count_nodes(quiet) == 0 && gl::equal(quiet, out.detach()),
                "under InferenceMode the same eval-mode forward gives the same numbers and no graph");
      }

      // The model was trained on standardized pixels: x = (x - mean) / std with the training
      // statistics (load_digits_split does it). A new image arrives raw, as pixel / 16 in [0, 1].
      gl::data::DigitsSplitOptions raw_options;
      raw_options.standardize = false;
      const gl::data::DigitsSplit raw = gl::data::load_digits_split(raw_options);
      const gl::Tensor raw_test = raw.test.data();
      // NOTE: section 3's train-mode evaluation rewrote BatchNorm's running statistics, so the
      // reference is the eval-mode accuracy of the model as it is now.
      const double ref_acc = accuracy(model, x_test, y_test, 360);
      const double raw_acc = accuracy(model, raw_test, y_test, 360);
      // The pipeline: the same preprocessing as in training, eval mode, no graph.
      const bool skip_normalize = L.bug("skip_normalize"),
                 without_guard = L.bug("pipeline_without_guard");
      auto predict = [&](const gl::Tensor& pixels) {
        std::optional<gl::InferenceMode> guard;
        if (!without_guard) guard.emplace();  // BUG (pipeline_without_guard): left out
        model->eval();
        // BUG (skip_normalize): the raw pixels go straight in
        const gl::Tensor x = skip_normalize ? pixels : (pixels - digits.mean) / digits.std;
        return model(x);
      };
      const gl::Tensor logits = predict(raw_test);
      const double pipe_acc = gl::sum(gl::argmax(logits, 1) == y_test).item<double>() /
                              static_cast<double>(y_test.size(0));
      std::cout << "test accuracy, eval mode: standardized inputs " << fmt(ref_acc)
                << ", raw pixels " << fmt(raw_acc) << ", raw pixels through the pipeline "
                << fmt(pipe_acc) << "\n";
      L.check(raw_acc < ref_acc - 0.1,
              "eval() does not apply the training preprocessing: raw pixels fed to the eval-mode "
              "model lose over 10 points of accuracy");
      L.check(std::abs(pipe_acc - ref_acc) < 1e-9,
              "the pipeline (standardize, eval, InferenceMode) gives the eval-mode test accuracy");
      L.check(logits.grad_fn() == nullptr && !logits.requires_grad(),
              "the pipeline's output has no grad_fn: nothing is recorded, nothing kept alive");
    }
  });
}
