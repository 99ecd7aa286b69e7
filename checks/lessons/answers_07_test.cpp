// Lesson 07 exercise answers: each TEST asserts the claim its answer in
// lessons/07_training_loop/README.md makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <numbers>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace optim = gradlab::optim;

namespace {

nn::Sequential make_mlp(uint64_t seed) {
  gl::manual_seed(seed);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
}

std::vector<double> flat(const nn::Module& m) {
  gl::NoGradGuard no_grad;
  return nn::utils::parameters_to_vector(m.parameters()).to_vector<double>();
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double r = 0;
  for (size_t i = 0; i < a.size(); ++i) r = std::max(r, std::abs(a[i] - b[i]));
  return r;
}

const gl::data::DigitsSplit& digits() {
  static const gl::data::DigitsSplit d = gl::data::load_digits_split();
  return d;
}

double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y) {
  gl::NoGradGuard no_grad;
  model->eval();
  const double acc = gl::mean((gl::argmax(model(x), 1) == y).to(gl::kFloat32)).item<double>();
  model->train();
  return acc;
}

// Section 6 of the lesson with any optimizer: returns the test accuracy after each epoch and
// fills `history`.
std::vector<double> train_section6(nn::Sequential& net, optim::Optimizer& opt,
                                   gl::train::History& history) {
  const auto& d = digits();
  nn::CrossEntropyLoss criterion;
  const int64_t epochs = 20;
  optim::CosineAnnealingLR schedule(opt, epochs, 0.001);
  gl::data::DataLoader loader(gl::data::TensorDataset(d.train.data(), d.train.targets()),
                              gl::data::DataLoaderOptions(64).shuffle(true).seed(0));
  std::vector<double> accs;
  int64_t step = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    for (gl::data::Batch& b : loader) {
      opt.zero_grad();
      gl::Tensor l = criterion(net(b.data), b.target);
      l.backward();
      const double gn = nn::utils::clip_grad_norm_(net->parameters(), 5.0);
      opt.step();
      history.add({epoch, step++, l.item<double>(), gn, schedule.get_last_lr()[0]});
    }
    schedule.step();
    accs.push_back(accuracy(net, d.test.data(), d.test.targets()));
  }
  return accs;
}

}  // namespace

TEST(Lesson07Answers, Exercise1AdamWPasses95PercentAfterSixEpochs) {
  nn::Sequential net = make_mlp(0);
  optim::AdamW adamw(net->parameters(), optim::AdamWOptions(1e-3));
  gl::train::History h;
  const auto accs = train_section6(net, adamw, h);
  int first95 = -1;
  for (size_t e = 0; e < accs.size(); ++e)
    if (accs[e] > 0.95 && first95 < 0) first95 = static_cast<int>(e) + 1;
  double max_norm = 0, max_lr = 0, min_lr = 1;
  for (const auto& r : h.records()) {
    max_norm = std::max(max_norm, r.grad_norm);
    max_lr = std::max(max_lr, r.lr);
    min_lr = std::min(min_lr, r.lr);
  }
  std::cout << "AdamW: first epoch > 95%: " << first95 << ", accs:";
  for (double a : accs) std::cout << " " << a;
  std::cout << "\nmax grad norm " << max_norm << ", lr " << min_lr << ".." << max_lr
            << ", epoch-1 max " << h.max_grad_norm(0) << "\n";
  // SGD for comparison
  nn::Sequential net2 = make_mlp(0);
  optim::SGD sgd(net2->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  gl::train::History h2;
  const auto accs2 = train_section6(net2, sgd, h2);
  int first95s = -1;
  double max_norm2 = 0;
  for (size_t e = 0; e < accs2.size(); ++e)
    if (accs2[e] > 0.95 && first95s < 0) first95s = static_cast<int>(e) + 1;
  for (const auto& r : h2.records()) max_norm2 = std::max(max_norm2, r.grad_norm);
  std::cout << "SGD: first epoch > 95%: " << first95s << ", max grad norm " << max_norm2 << "\n";
  // AdamW(1e-3) first passes 95% test accuracy after epoch 6 in each of 8 configurations
  // (OpenBLAS Prescott, Sandybridge, Haswell, Zen, SkylakeX kernels, 1 and 2 threads); epoch 5
  // is at 94.2% and epoch 6 at 95.8%, 3 test digits on either side of the line, so another
  // kernel may move the crossing by an epoch: 5 to 7. The lesson's SGD + momentum passes it
  // after epoch 2 (same 8 configurations): sooner than AdamW in any case.
  EXPECT_GE(first95, 5);
  EXPECT_LE(first95, 7);
  EXPECT_GE(first95s, 1);
  EXPECT_LT(first95s, first95);
  EXPECT_GE(accs.back(), 0.97);  // AdamW ends at 97.8%
  EXPECT_LT(max_norm, 5.0);      // clipping at 5.0 never activates (largest norm 1.31)
  EXPECT_LT(max_norm2, 5.0);     // nor with SGD (1.36)
  EXPECT_EQ(max_lr, 1e-3);       // eta_min 0.001 = AdamW's lr: the cosine schedule is flat
  EXPECT_EQ(min_lr, 1e-3);
}

TEST(Lesson07Answers, Exercise2UnequalMicroBatchesScaleBySize) {
  const auto& d = digits();
  const gl::Tensor xb1 = d.train.data().narrow(0, 0, 64), yb1 = d.train.targets().narrow(0, 0, 64);
  nn::CrossEntropyLoss criterion;
  nn::Sequential big = make_mlp(3), acc = make_mlp(3), third = make_mlp(3);
  optim::SGD ob(big->parameters(), optim::SGDOptions(0.1)),
      oa(acc->parameters(), optim::SGDOptions(0.1)),
      ot(third->parameters(), optim::SGDOptions(0.1));
  ob.zero_grad();
  criterion(big(xb1), yb1).backward();
  ob.step();
  oa.zero_grad();
  ot.zero_grad();
  const std::vector<std::pair<int64_t, int64_t>> parts = {{0, 16}, {16, 16}, {32, 32}};
  for (auto [start, n] : parts) {
    const gl::Tensor x = xb1.narrow(0, start, n), y = yb1.narrow(0, start, n);
    (criterion(acc(x), y) * (static_cast<double>(n) / 64.0)).backward();  // weight n / 64
    (criterion(third(x), y) / 3.0).backward();                            // same weight each
  }
  oa.step();
  ot.step();
  const double d_acc = max_abs_diff(flat(*acc), flat(*big)),
               d_third = max_abs_diff(flat(*third), flat(*big));
  std::cout << "16/16/32 weighted n/64: max diff " << d_acc << "; each /3: " << d_third << "\n";
  EXPECT_LT(d_acc, 1e-6);
  EXPECT_GT(d_third, 1e-4);
}

namespace {

// One epoch of section 5's loop (loader of 64 in order) on model `m` with optimizer `o`, the
// watch turned into a stop: returns the step at which it fired (that step is not applied), or -1,
// and the test accuracy where it stopped.
struct WatchResult {
  int64_t fired = -1;
  double accuracy = 0;
};
WatchResult watched_epoch(nn::Sequential& m, optim::SGD& o) {
  const auto& d = digits();
  nn::CrossEntropyLoss criterion;
  gl::data::DataLoader loader(
      std::make_shared<gl::data::TensorDataset>(d.train.data(), d.train.targets()),
      gl::data::DataLoaderOptions(64));
  double baseline = 0;
  int64_t s = 0;
  WatchResult r;
  for (gl::data::Batch& b : loader) {
    o.zero_grad();
    gl::Tensor l = criterion(m(b.data), b.target);
    l.backward();
    const double gn = nn::utils::grad_norm(m->parameters());
    if (s < 3)
      baseline = std::max(baseline, gn);
    else if (!std::isfinite(gn) || gn > 10 * baseline) {
      r.fired = s;  // stop training, before this step is applied
      break;
    }
    o.step();
    ++s;
  }
  r.accuracy = accuracy(m, d.test.data(), d.test.targets());
  return r;
}

}  // namespace

TEST(Lesson07Answers, Exercise3WatchHalvesLr) {
  // (a) restart from the same initial weights with half the lr each time the watch fires.
  double lr = 3.0;
  std::vector<std::pair<double, WatchResult>> tries;
  for (int k = 0; k < 12; ++k) {
    nn::Sequential m = make_mlp(4);
    optim::SGD o(m->parameters(), optim::SGDOptions(lr).momentum(0.9));
    const WatchResult r = watched_epoch(m, o);
    tries.emplace_back(lr, r);
    if (r.fired < 0) break;
    lr /= 2;
  }
  for (auto& [l, r] : tries)
    std::cout << "restart lr " << l << ": fired " << r.fired << ", acc " << r.accuracy << "\n";
  // The properties, not the steps: lr 3.0 explodes within the first epoch, each halving fires
  // later than the lr before it, and a whole epoch passes without firing after two halvings.
  // Measured in 8 configurations (OpenBLAS Prescott, Sandybridge, Haswell, Zen, SkylakeX
  // kernels, 1 and 2 threads): steps 8 and 13, then none, 77.5% test accuracy, the same in all
  // (the watch fires before rounding differences grow). Two halvings: one more or one fewer is
  // another behaviour (a doubled gradient needs three), not rounding.
  ASSERT_EQ(tries.size(), 3u);
  EXPECT_GE(tries[0].second.fired, 3);  // after the 3 baseline steps of the watch
  EXPECT_GT(tries[1].second.fired, tries[0].second.fired);
  EXPECT_EQ(tries[2].second.fired, -1);
  // Recovered: far above the 47.5% where lr 3.0 was stopped (and chance, 10%); 0.65 is 0.125
  // under the 77.5% measured.
  EXPECT_GT(tries[2].second.accuracy, 0.65);
  // (b) keep the same model and optimizer: drop the step, halve lr, go on.
  nn::Sequential m = make_mlp(4);
  optim::SGD o(m->parameters(), optim::SGDOptions(3.0).momentum(0.9));
  std::vector<std::pair<double, WatchResult>> cont;
  for (int k = 0; k < 12; ++k) {
    const WatchResult r = watched_epoch(m, o);
    const double cur = o.param_groups()[0].options().get_lr();
    cont.emplace_back(cur, r);
    std::cout << "continue lr " << cur << ": fired " << r.fired << ", acc " << r.accuracy << "\n";
    if (r.fired < 0) break;
    o.param_groups()[0].options().set_lr(cur / 2);
  }
  // Going on with the damaged weights: the first pass is the restart's first try, step for step;
  // the pass at lr 1.5 fires later into its pass than lr 3.0 did (at step 13, 15 or 17 in the 8
  // configurations above: by then the runs have drifted apart), and lr 0.75 runs a whole epoch.
  ASSERT_EQ(cont.size(), 3u);
  EXPECT_EQ(cont[0].second.fired, tries[0].second.fired);
  EXPECT_GT(cont[1].second.fired, cont[0].second.fired);
  EXPECT_EQ(cont[2].first, 0.75);
  EXPECT_EQ(cont[2].second.fired, -1);
  // Recovered, but far from section 6's 95%+: 68.9% to 84.4% in the 8 configurations; 0.6 is
  // 0.09 under the lowest and still far above the 47.5% where the watch first stopped it.
  EXPECT_GT(cont[2].second.accuracy, 0.6);
  EXPECT_LT(cont[2].second.accuracy, 0.95);
}

TEST(Lesson07Answers, Exercise4WhereTheCosineShows) {
  nn::Sequential net = make_mlp(0);
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  gl::train::History h;
  train_section6(net, sgd, h);
  for (int64_t e = 0; e < 20; ++e) {
    double lo = 1e9, hi = 0, glo = 1e9, ghi = 0, lr = 0;
    for (const auto& r : h.records())
      if (r.epoch == e) {
        lo = std::min(lo, r.loss), hi = std::max(hi, r.loss), lr = r.lr;
        glo = std::min(glo, r.grad_norm), ghi = std::max(ghi, r.grad_norm);
      }
    std::cout << "epoch " << e << " lr " << lr << " loss " << h.mean_loss(e) << " [" << lo << ", "
              << hi << "] grad [" << glo << ", " << ghi << "]\n";
  }
  // The lr column: one value per epoch (a staircase), the cosine's, flat at both ends.
  for (const auto& r : h.records())
    EXPECT_NEAR(
        r.lr,
        0.001 + 0.049 * (1 + std::cos(std::numbers::pi * static_cast<double>(r.epoch) / 20)) / 2,
        1e-12);
  EXPECT_EQ(h.records().front().lr, 0.05);
  EXPECT_LT(h.records().back().lr, 0.0014);
  // The loss: it still falls by almost half from epoch 6 to epoch 10 (lr near 0.04-0.03)...
  EXPECT_LT(h.mean_loss(9), 0.6 * h.mean_loss(5));
  // ...and is flat in the last five epochs, where the lr is under 0.01.
  double lo = 1e9, hi = 0;
  for (int64_t e = 15; e < 20; ++e)
    lo = std::min(lo, h.mean_loss(e)), hi = std::max(hi, h.mean_loss(e));
  EXPECT_LT(hi / lo, 1.05);
}
