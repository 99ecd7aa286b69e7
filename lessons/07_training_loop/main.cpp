// Lesson 07: the training loop.
//
// The order of one step is zero_grad -> forward -> loss -> backward -> clip -> step. Each wrong
// order fails in its own way, shown here on identical models and batches: gradients that
// accumulate, a stale step one batch behind, clipping that clips nothing, a step with no
// gradients. Then gradient accumulation over micro-batches (equal to one big batch), a watch on
// the gradient norm, and the digits MLP (64-128-10) trained to >= 95% test accuracy.
// Every batch comes from a data::DataLoader (lesson 05): in order for the comparisons, shuffled
// with a seed for the training; none is sliced by hand. Last, two things the loop decides
// besides its order: how long it waits for the loader (a slow get() starves the step), and how
// the batch size and the learning rate go together (the linear scaling rule).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iomanip>
#include <iostream>
#include <numbers>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace optim = gradlab::optim;
using lesson::fmt;
using lesson::max_abs_diff;

namespace {

// model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
nn::Sequential make_mlp(uint64_t seed) {
  gl::manual_seed(seed);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
}

// Every parameter value, flattened, for exact comparisons between model copies.
std::vector<double> flat(const nn::Module& m) {
  gl::NoGradGuard no_grad;  // torch.nn.utils.parameters_to_vector(m.parameters())
  return nn::utils::parameters_to_vector(m.parameters()).to_vector<double>();
}

double l2(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

struct Split {
  gl::Tensor x_train, y_train, x_test, y_test;
};

double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y) {
  gl::NoGradGuard no_grad;  // evaluation: no graph
  model->eval();
  const double acc = gl::mean((gl::argmax(model(x), 1) == y).to(gl::kFloat32)).item<double>();
  model->train();
  return acc;
}

// A dataset whose get(i) first waits `wait_ms` (reading from a slow disk, decoding a JPEG):
// a sleep, so the wait costs no CPU and does not depend on the machine's speed.
struct SlowRows : gl::data::Dataset {
  SlowRows(gl::Tensor x, gl::Tensor y, int wait_ms) : x_(std::move(x)), y_(std::move(y)), wait_ms_(wait_ms) {}
  gl::data::Example<> get(size_t i) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms_));
    return {x_[static_cast<int64_t>(i)], y_[static_cast<int64_t>(i)]};
  }
  size_t size() const override { return static_cast<size_t>(x_.size(0)); }
  gl::Tensor x_, y_;
  int wait_ms_;
};

// One epoch of training; the wall time the loop spends waiting for the next batch (between the
// end of one step and the start of the next, where the loader works) and inside the steps.
struct LoopTimes {
  double wait_ms = 0, step_ms = 0;
};
LoopTimes timed_epoch(gl::data::DataLoader& loader, nn::Sequential& m, optim::SGD& o,
                      nn::CrossEntropyLoss& criterion) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  LoopTimes t;
  auto mark = clock::now();
  for (gl::data::Batch& b : loader) {
    const auto got = clock::now();
    t.wait_ms += ms(got - mark);
    o.zero_grad();
    criterion(m(b.data), b.target).backward();
    o.step();
    mark = clock::now();
    t.step_ms += ms(mark - got);
  }
  return t;
}

// Trains make_mlp(seed) with plain SGD for `epochs` epochs of batches of `batch`; returns
// {steps taken, mean loss over the whole training set, test accuracy}.
struct Run {
  int64_t steps = 0;
  double train_loss = 0, test_acc = 0;
};
Run train_with(const Split& d, int64_t batch, double lr, int64_t epochs) {
  nn::Sequential m = make_mlp(5);
  optim::SGD o(m->parameters(), optim::SGDOptions(lr));
  nn::CrossEntropyLoss criterion;
  gl::data::DataLoader loader(gl::data::TensorDataset(d.x_train, d.y_train),
                              gl::data::DataLoaderOptions(batch).shuffle(true).seed(1));
  Run r;
  for (int64_t e = 0; e < epochs; ++e)
    for (gl::data::Batch& b : loader) {
      o.zero_grad();
      criterion(m(b.data), b.target).backward();
      o.step();
      ++r.steps;
    }
  {
    gl::NoGradGuard no_grad;
    r.train_loss = criterion(m(d.x_train), d.y_train).item<double>();
  }
  r.test_acc = accuracy(m, d.x_test, d.y_test);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // Break-it switches: mistakes in the lesson's own loops (section 4's accumulation, section 6's
  // real training run).
  lesson::Lesson L(
      "07", "the training loop", argc, argv,
      {{"no_zero_grad", "section 6's training loop never calls sgd.zero_grad()",
        "the gradient norm before clipping stays under 5 at every step"},
       {"no_step", "section 6's training loop forgets sgd.step()",
        "the last epoch's mean loss is under 1/5 of the first's"},
       {"sum_reduction",
        "section 4's criterion uses reduction = sum, so dividing each micro-batch loss by 4 no "
        "longer makes their sum the big batch's mean",
        "accumulating 4 micro-batches (loss / 4) gives the big batch's update"},
       {"schedule_per_step",
        "section 6 calls schedule.step() after every batch, not once per epoch",
        "every recorded lr is the cosine schedule's value for its epoch"},
       {"lr_not_scaled",
        "section 8's large-batch run keeps the small batch's learning rate instead of scaling it",
        "scaling the learning rate with the batch (linear scaling rule) recovers"}});
  return L.run([&] {
    // -------------------------------------------------------------------------------------------
    L.section(
        "1. data: the digits, split with a seed, standardized with training statistics, batched "
        "by a DataLoader");
    // train_test_split(load_digits(), 360, seed 0), then x = (x - mean) / std per pixel, with mean
    // and std from the training rows only (the test set must not leak into them)
    const gl::data::DigitsSplit digits = gl::data::load_digits_split();
    const Split d{digits.train.data(), digits.train.targets(), digits.test.data(),
                  digits.test.targets()};
    std::cout << "train " << gl::shape_str(d.x_train.sizes()) << ", test "
              << gl::shape_str(d.x_test.sizes())
              << " (a seeded random split: the file is ordered by writer, so its last rows are not "
                 "a fair test set)\n";
    L.check(d.x_train.size(0) == 1437 && d.x_test.size(0) == 360,
            "1437 training and 360 test images of 64 pixels");
    L.check(
        gl::amax(gl::abs(gl::mean(d.x_train, {0}))).item<double>() < 1e-5,
        "every standardized training pixel has mean 0 (test pixels use the same shift and scale)");

    nn::CrossEntropyLoss criterion;
    // BUG (sum_reduction): section 4's micro-batch losses are sums, not means
    nn::CrossEntropyLoss accumulation_criterion(
        nn::CrossEntropyLossOptions().reduction(L.bug("sum_reduction") ? gl::kSum : gl::kMean));
    // Every batch below comes from a DataLoader (lesson 05). Without shuffle it hands out the
    // rows in order, so each wrong order of sections 3a-3e sees the very same batches.
    // DataLoader(TensorDataset(x_train, y_train), batch_size=64)
    const auto train_set = std::make_shared<gl::data::TensorDataset>(d.x_train, d.y_train);
    gl::data::DataLoader in_order(train_set, gl::data::DataLoaderOptions(64));
    std::vector<std::pair<gl::Tensor, gl::Tensor>> batches;  // the first three, kept
    for (gl::data::Batch& b : in_order) {
      batches.emplace_back(b.data, b.target);
      if (batches.size() == 3) break;
    }
    const gl::Tensor xb1 = batches[0].first, yb1 = batches[0].second;
    const gl::Tensor xb2 = batches[1].first, yb2 = batches[1].second;
    L.say(
        "batches: DataLoader(train, 64) without shuffle; its first three are fixed for the "
        "comparisons");
    L.check(gl::equal(batches[2].first, d.x_train.narrow(0, 128, 64)) &&
                gl::equal(batches[2].second, d.y_train.narrow(0, 128, 64)),
            "without shuffle, loader batch k holds training rows 64k .. 64k + 63 (batch 3: rows "
            "128 .. 191)");
    const double lr = 0.1;

    // -------------------------------------------------------------------------------------------
    L.section("2. the right order");
    nn::Sequential model = make_mlp(1);
    optim::SGD opt(model->parameters(), optim::SGDOptions(lr));
    const std::vector<double> p0 = flat(*model);
    opt.zero_grad();                               // 1. forget last step's gradients
    gl::Tensor loss = criterion(model(xb1), yb1);  // 2. forward + loss
    loss.backward();                               // 3. this batch's gradients
    const double norm = nn::utils::clip_grad_norm_(model->parameters(), 0.5);  // 4. clip
    opt.step();                                                                // 5. update
    std::vector<double> expected = p0;  // p - lr * clipped grad, by hand
    {
      size_t k = 0;
      for (const gl::Tensor& p : model->parameters())
        for (double g : p.grad().to_vector<double>()) expected[k] -= lr * g, ++k;
    }
    std::cout << "loss " << fmt(loss.item<double>()) << ", gradient norm before clipping "
              << fmt(norm) << " (clipped to 0.5), update norm " << fmt(l2(flat(*model), p0))
              << "\n";
    L.check(max_abs_diff(flat(*model), expected) < 1e-6,
            "step() moved every parameter by exactly -lr * (clipped) grad");
    L.check(norm > 0.5 && l2(flat(*model), p0) <= lr * 0.5 + 1e-5,
            "the gradient norm was above 0.5, so clipping scaled it: the update is lr * 0.5 long");

    // The reference run: three correct steps, remembering the parameters after each.
    std::vector<std::vector<double>> right;
    {
      nn::Sequential m = make_mlp(1);
      optim::SGD o(m->parameters(), optim::SGDOptions(lr));
      right.push_back(flat(*m));
      for (auto& [x, y] : batches) {
        o.zero_grad();
        criterion(m(x), y).backward();
        o.step();
        right.push_back(flat(*m));
      }
    }

    // -------------------------------------------------------------------------------------------
    L.section("3a. wrong: no zero_grad() -> gradients accumulate");
    {
      nn::Sequential m = make_mlp(1);
      criterion(m(xb1), yb1).backward();
      const std::vector<double> g1 = [&] {
        std::vector<double> g;
        for (const gl::Tensor& p : m->parameters())
          for (double v : p.grad().to_vector<double>()) g.push_back(v);
        return g;
      }();
      criterion(m(xb2), yb2).backward();  // no zero_grad in between
      nn::Sequential fresh = make_mlp(1);
      criterion(fresh(xb2), yb2).backward();
      std::vector<double> sum_g, acc_g;
      size_t k = 0;
      const auto fp = fresh->parameters(), mp = m->parameters();
      for (size_t i = 0; i < mp.size(); ++i) {
        const auto a = mp[i].grad().to_vector<double>(), b = fp[i].grad().to_vector<double>();
        for (size_t j = 0; j < a.size(); ++j, ++k)
          acc_g.push_back(a[j]), sum_g.push_back(g1[k] + b[j]);
      }
      std::cout << "after backward on batch 1 then batch 2: |grad| = "
                << fmt(l2(acc_g, std::vector<double>(acc_g.size())))
                << " = |g1 + g2|, not |g2| = " << fmt(l2(sum_g, g1)) << "\n";
      L.check(max_abs_diff(acc_g, sum_g) < 1e-6,
              ".grad holds g(batch 1) + g(batch 2): backward adds, it never overwrites");
    }
    {
      // One epoch each: with and without zero_grad (SGD with momentum, as in the real run).
      auto epoch = [&](bool zero) {
        nn::Sequential m = make_mlp(2);
        optim::SGD o(m->parameters(), optim::SGDOptions(0.05).momentum(0.9));
        double last_norm = 0;
        // the 22 full batches in order (drop_last: the short 23rd is left out)
        gl::data::DataLoader epoch_loader(train_set,
                                          gl::data::DataLoaderOptions(64).drop_last(true));
        for (gl::data::Batch& b : epoch_loader) {
          if (zero) o.zero_grad();
          criterion(m(b.data), b.target).backward();
          last_norm = nn::utils::grad_norm(m->parameters());
          o.step();
        }
        return std::make_pair(last_norm, accuracy(m, d.x_test, d.y_test));
      };
      const auto [norm_ok, acc_ok] = epoch(true);
      const auto [norm_bad, acc_bad] = epoch(false);
      std::cout << "one epoch with zero_grad:    last |grad| " << fmt(norm_ok) << ", test accuracy "
                << fmt(acc_ok) << "\n"
                << "one epoch without zero_grad: last |grad| " << fmt(norm_bad)
                << ", test accuracy " << fmt(acc_bad) << "\n";
      L.check(!(norm_bad < 5 * norm_ok),
              "without zero_grad the gradient keeps growing (last |grad| >= 5x the correct run's)");
      L.check(!(acc_bad >= acc_ok), "...and the model ends the epoch worse");
    }

    // -------------------------------------------------------------------------------------------
    L.section("3b. wrong: step() first -> a stale step, one batch behind");
    {
      nn::Sequential m = make_mlp(1);
      optim::SGD o(m->parameters(), optim::SGDOptions(lr));
      std::vector<std::vector<double>> stale;
      for (auto& [x, y] : batches) {
        o.step();  // applies the gradient left by the PREVIOUS batch
        o.zero_grad();
        criterion(m(x), y).backward();
        stale.push_back(flat(*m));
      }
      std::cout << "after iteration 1 the parameters moved " << fmt(l2(stale[0], right[0]), 6)
                << "; the right run moved " << fmt(l2(right[1], right[0]), 6) << "\n";
      L.check(stale[0] == right[0], "iteration 1 changes nothing: step() found no gradient yet");
      L.check(max_abs_diff(stale[1], right[1]) < 1e-6 && max_abs_diff(stale[2], right[2]) < 1e-6,
              "after iteration k the model equals the right run after k-1 steps: the last batch is "
              "never applied");
    }
    L.section("3c. wrong: step() between forward and backward -> backward refuses");
    {
      nn::Sequential m = make_mlp(1);
      optim::SGD o(m->parameters(), optim::SGDOptions(lr));
      L.check_throws(
          [&] {
            for (auto& [x, y] : batches) {
              gl::Tensor l = criterion(m(x), y);  // forward saves the weights for backward
              o.step();                           // ...then the step changes them in place
              o.zero_grad();
              l.backward();
            }
          },
          "modified by an inplace operation",
          "the second step() writes into weights the graph saved: backward fails, as in PyTorch");
    }

    // -------------------------------------------------------------------------------------------
    L.section("3d. wrong: clip after step() -> clipping changes nothing");
    {
      nn::Sequential a = make_mlp(1), b = make_mlp(1);
      optim::SGD oa(a->parameters(), optim::SGDOptions(lr)),
          ob(b->parameters(), optim::SGDOptions(lr));
      oa.zero_grad();
      criterion(a(xb1), yb1).backward();
      nn::utils::clip_grad_norm_(a->parameters(), 0.1);  // right: before step
      oa.step();
      ob.zero_grad();
      criterion(b(xb1), yb1).backward();
      ob.step();
      nn::utils::clip_grad_norm_(b->parameters(), 0.1);  // wrong: after step
      const double ua = l2(flat(*a), right[0]), ub = l2(flat(*b), right[0]);
      std::cout << "update length with max_norm 0.1: clip then step " << fmt(ua, 5)
                << ", step then clip " << fmt(ub, 5)
                << " (unclipped: " << fmt(l2(right[1], right[0]), 5) << ")\n";
      L.check(ua <= lr * 0.1 + 1e-6, "clip before step: the update is at most lr * 0.1");
      L.check(max_abs_diff(flat(*b), right[1]) < 1e-6,
              "clip after step: the update is the unclipped one");
    }

    // -------------------------------------------------------------------------------------------
    L.section("3e. wrong: zero_grad() between backward() and step() -> nothing learns");
    {
      nn::Sequential m = make_mlp(1);
      optim::SGD o(m->parameters(), optim::SGDOptions(lr));
      const auto before = nn::snapshot_parameters(*m);
      for (auto& [x, y] : batches) {
        criterion(m(x), y).backward();
        o.zero_grad();  // too late: clears what backward just computed
        o.step();
      }
      const auto stuck = nn::parameters_not_updated(before, *m);
      std::cout << "parameters_not_updated after 3 steps: ";
      for (const auto& s : stuck) std::cout << s << " ";
      std::cout << "\n";
      L.check(stuck.size() == 4,
              "parameters_not_updated names all four parameters: step() saw no gradients");
    }

    // -------------------------------------------------------------------------------------------
    L.section("4. gradient accumulation: 4 micro-batches of 16 = one batch of 64");
    {
      nn::Sequential big = make_mlp(3), acc = make_mlp(3), sum_only = make_mlp(3);
      optim::SGD ob(big->parameters(), optim::SGDOptions(lr)),
          oa(acc->parameters(), optim::SGDOptions(lr)),
          os(sum_only->parameters(), optim::SGDOptions(lr));
      const std::vector<double> start = flat(*big);
      ob.zero_grad();
      criterion(big(xb1), yb1).backward();
      ob.step();
      oa.zero_grad();
      os.zero_grad();
      // the micro-batches: a loader of batch size 16 over the 64 samples of batch 1
      gl::data::DataLoader micro(gl::data::TensorDataset(xb1, yb1),
                                 gl::data::DataLoaderOptions(16));
      for (gl::data::Batch& mb : micro) {
        (accumulation_criterion(acc(mb.data), mb.target) / 4.0).backward();  // each mean, / 4
        criterion(sum_only(mb.data), mb.target).backward();     // forgot the 1/4
      }
      oa.step();
      os.step();
      const double u_big = l2(flat(*big), start), u_acc = l2(flat(*acc), start),
                   u_sum = l2(flat(*sum_only), start);
      std::cout << "update length: one batch of 64 " << fmt(u_big, 6) << ", 4 x 16 with loss/4 "
                << fmt(u_acc, 6) << ", 4 x 16 without /4 " << fmt(u_sum, 6) << "\n";
      L.check(max_abs_diff(flat(*acc), flat(*big)) < 1e-6,
              "accumulating 4 micro-batches (loss / 4) gives the big batch's update");
      L.check(std::abs(u_sum / u_big - 4.0) < 1e-3,
              "forgetting the / 4 makes the update 4x longer (an lr 4x too large)");
    }

    // -------------------------------------------------------------------------------------------
    L.section("5. a grad-norm watch catches a diverging run");
    {
      nn::Sequential m = make_mlp(4);
      optim::SGD o(m->parameters(), optim::SGDOptions(3.0).momentum(0.9));  // lr far too large
      gl::train::History h;
      int64_t fired = -1;
      double baseline = 0;
      gl::data::DataLoader watch_loader(train_set, gl::data::DataLoaderOptions(64));
      int64_t s = 0;
      for (gl::data::Batch& b : watch_loader) {
        if (s >= 20 || fired >= 0) break;
        o.zero_grad();
        gl::Tensor l = criterion(m(b.data), b.target);
        l.backward();
        const double gn = nn::utils::grad_norm(m->parameters());
        h.add({0, s, l.item<double>(), gn, 3.0});
        if (s < 3)
          baseline = std::max(baseline, gn);
        else if (!std::isfinite(gn) || gn > 10 * baseline)
          fired = s;  // the watch
        o.step();
        ++s;
      }
      for (const auto& r : h.records()) std::cout << "  " << r << "\n";
      std::cout << "watch: |grad| > 10x the largest of the first 3 steps (" << fmt(baseline)
                << ") at step " << fired << "\n";
      L.check(fired > 0 && std::isfinite(h.back().loss),
              "with lr = 3.0 the watch fires within 20 steps, while the loss is still finite");
    }

    // -------------------------------------------------------------------------------------------
    L.section("6. training the digits MLP (SGD + momentum, cosine lr, clipping, shuffled batches)");
    nn::Sequential net = make_mlp(0);
    optim::SGD sgd(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    const int64_t epochs = 20;
    optim::CosineAnnealingLR schedule(sgd, epochs, 0.001);
    gl::data::DataLoader loader(gl::data::TensorDataset(d.x_train, d.y_train),
                                gl::data::DataLoaderOptions(64).shuffle(true).seed(0));
    gl::train::History history;
    int64_t step = 0;
    double first_acc = 0, final_acc = 0;
    // A progress bar (steps/s, ETA, loss, a loss sparkline): redrawn on a terminal, a plain line
    // every 5 epochs otherwise. Lines printed meanwhile go through bar.write().
    gl::train::ProgressBar bar(epochs * static_cast<int64_t>(loader.size()),
                               gl::train::ProgressOptions().plain_every(static_cast<int64_t>(5 * loader.size())));
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      for (gl::data::Batch& b : loader) {
        if (!L.bug("no_zero_grad")) sgd.zero_grad();  // BUG (no_zero_grad): left out
        gl::Tensor l = criterion(net(b.data), b.target);
        l.backward();
        const double gn = nn::utils::clip_grad_norm_(net->parameters(), 5.0);
        if (!L.bug("no_step")) sgd.step();  // BUG (no_step): left out
        history.add({epoch, step++, l.item<double>(), gn, schedule.get_last_lr()[0]});
        bar.update(history.back().loss);
        if (L.bug("schedule_per_step")) schedule.step();  // BUG: once per batch
      }
      if (!L.bug("schedule_per_step"))
        schedule.step();  // once per epoch, after the optimizer steps
      const double acc = accuracy(net, d.x_test, d.y_test);
      if (epoch == 0) first_acc = acc;
      final_acc = acc;
      if (epoch < 3 || epoch % 5 == 4) {
        std::ostringstream line;
        line << "epoch " << std::setw(2) << epoch + 1 << "  mean loss "
             << fmt(history.mean_loss(epoch)) << "  max |grad| "
             << fmt(history.max_grad_norm(epoch), 3) << "  lr " << fmt(history.back().lr, 5)
             << "  test accuracy " << fmt(acc);
        bar.write(line.str());
      }
    }
    bar.close();
    const auto csv = lesson::output_dir() / "lesson07_history.csv";
    std::filesystem::remove(csv);  // a file left by an earlier run must not pass the check below
    history.write_csv(csv.string());
    std::cout << history.size() << " step records written to " << csv.string() << "\n";
    bool finite = true;
    for (const auto& r : history.records())
      finite = finite && std::isfinite(r.loss) && std::isfinite(r.grad_norm);
    L.check(final_acc >= 0.95,
            "test accuracy after 20 epochs is >= 95% (" + fmt(100 * final_acc, 1) + "%)");
    L.check(history.mean_loss(epochs - 1) < history.mean_loss(0) / 5,
            "the last epoch's mean loss is under 1/5 of the first's");
    L.check(finite, "every recorded loss and gradient norm is finite");
    // Clipping is a safety net here, not part of the optimization: on a healthy run it never bites,
    // and the gradient norm falls as the loss does. Gradients that pile up (no zero_grad) are
    // clipped at every step, and their norm stays high.
    double max_gn = 0;
    for (int64_t e = 0; e < epochs; ++e) max_gn = std::max(max_gn, history.max_grad_norm(e));
    L.check(max_gn < 5.0 && history.max_grad_norm(epochs - 1) < history.max_grad_norm(0) / 2,
            "the gradient norm before clipping stays under 5 at every step (the clip never bit), "
            "and the last epoch's largest is under half the first's (" +
                fmt(history.max_grad_norm(0), 3) + " -> " +
                fmt(history.max_grad_norm(epochs - 1), 3) + ")");
    bool cosine = true;  // lr(epoch) = eta_min + (lr0 - eta_min)(1 + cos(pi epoch / T)) / 2
    for (const auto& r : history.records())
      cosine = cosine &&
               std::abs(r.lr -
                        (0.001 + 0.049 *
                                     (1 + std::cos(std::numbers::pi * static_cast<double>(r.epoch) /
                                                   static_cast<double>(epochs))) /
                                     2)) < 1e-12;
    L.check(
        cosine && history.records()[0].lr == 0.05,
        "every recorded lr is the cosine schedule's value for its epoch (0.05 down towards 0.001)");
    L.check(final_acc >= first_acc, "test accuracy did not get worse than after the first epoch");
    // Read the file back: the header, then one row per record with the same numbers (written
    // with 17 digits, so they parse back exactly).
    std::ifstream in(csv);
    std::string line;
    bool csv_ok =
        static_cast<bool>(std::getline(in, line)) && line == "epoch,step,loss,grad_norm,lr";
    size_t rows = 0;
    while (csv_ok && std::getline(in, line)) {
      if (rows >= history.size()) {
        csv_ok = false;
        break;
      }
      const auto& r = history.records()[rows++];
      std::istringstream row(line);
      std::string cell[5];
      for (auto& c : cell) std::getline(row, c, ',');
      csv_ok = std::stoll(cell[0]) == r.epoch && std::stoll(cell[1]) == r.step &&
               std::stod(cell[2]) == r.loss && std::stod(cell[3]) == r.grad_norm &&
               std::stod(cell[4]) == r.lr;
    }
    L.check(csv_ok && rows == history.size() && rows > 0,
            "the per-step record is saved as CSV: header epoch,step,loss,grad_norm,lr and one row "
            "per step, equal to the records in memory");

    // -------------------------------------------------------------------------------------------
    L.section("7. the hidden bottleneck: a loop that waits for its loader");
    {
      // 256 training rows in 8 batches of 32; each get() waits 1 ms, so a batch costs the loader
      // 32 ms of waiting, while a step of this small MLP on 32 rows takes a fraction of that.
      const int64_t n = 256;
      const auto slow = std::make_shared<SlowRows>(d.x_train.narrow(0, 0, n), d.y_train.narrow(0, 0, n), 1);
      const auto fast = std::make_shared<gl::data::TensorDataset>(d.x_train.narrow(0, 0, n),
                                                                  d.y_train.narrow(0, 0, n));
      nn::Sequential m = make_mlp(6);
      optim::SGD o(m->parameters(), optim::SGDOptions(lr));
      gl::data::DataLoader from_memory(fast, gl::data::DataLoaderOptions(32));
      gl::data::DataLoader slow0(slow, gl::data::DataLoaderOptions(32));
      gl::data::DataLoader slow4(slow, gl::data::DataLoaderOptions(32).num_workers(4));
      // NOTE: best of 2 epochs each, interleaved, so one slow moment of a busy machine does not
      // decide; the claims ask for ratios far from what a quiet machine gives.
      LoopTimes mem{1e300, 1e300}, w0{1e300, 1e300}, w4{1e300, 1e300};
      auto best = [](LoopTimes& b, LoopTimes t) {
        if (t.wait_ms + t.step_ms < b.wait_ms + b.step_ms) b = t;
      };
      for (int rep = 0; rep < 2; ++rep) {
        best(mem, timed_epoch(from_memory, m, o, criterion));
        best(w0, timed_epoch(slow0, m, o, criterion));
        best(w4, timed_epoch(slow4, m, o, criterion));
      }
      auto report = [](const std::string& name, const LoopTimes& t) {
        std::cout << name << "waiting " << fmt(t.wait_ms, 2) << " ms, stepping " << fmt(t.step_ms, 2)
                  << " ms per epoch (waiting is " << fmt(t.wait_ms / t.step_ms, 1) << "x the steps)\n";
      };
      report("rows in memory:              ", mem);
      report("get() waits 1 ms, 0 workers: ", w0);
      report("get() waits 1 ms, 4 workers: ", w4);
      L.say(
          "A profiler of the step alone sees nothing wrong: the step is as fast as before. The time\n"
          "goes to the line `for (auto& b : loader)`, and only a clock around it shows it.");
      L.check(w0.wait_ms > 2 * w0.step_ms,
              "with a slow get() and no workers the loop spends over 2/3 of its time waiting for "
              "the next batch, not training");
      L.check(w4.wait_ms < w0.wait_ms / 2,
              "4 workers, whose waits overlap (lesson 05), cut the time spent waiting by more than "
              "half");
    }

    // -------------------------------------------------------------------------------------------
    L.section("8. batch size and learning rate go together");
    {
      // Same model, same data, same number of epochs (5), plain SGD. A 16x larger batch takes 16x
      // fewer steps; each step averages more samples but moves no further, so at the same lr it
      // gets less far. Scaling the lr with the batch (Goyal et al. 2017: batch x k -> lr x k, as
      // long as the larger lr stays stable) gives it back the distance.
      const int64_t epochs = 5;
      const double lr_small = 0.01;
      const Run small = train_with(d, 16, lr_small, epochs);
      const Run big = train_with(d, 256, lr_small, epochs);
      // BUG (lr_not_scaled): the large batch keeps the small batch's lr
      const double lr_scaled = L.bug("lr_not_scaled") ? lr_small : lr_small * 256 / 16;
      const Run scaled = train_with(d, 256, lr_scaled, epochs);
      auto report = [](const std::string& name, const Run& r) {
        std::cout << name << std::setw(4) << r.steps << " steps, train loss " << fmt(r.train_loss, 3)
                  << ", test accuracy " << fmt(r.test_acc, 3) << "\n";
      };
      report("batch  16, lr 0.01: ", small);
      report("batch 256, lr 0.01: ", big);
      report("batch 256, lr " + fmt(lr_scaled, 2) + ": ", scaled);
      L.check(big.steps * 10 < small.steps && big.train_loss > 2 * small.train_loss,
              "at the same lr, the 16x larger batch takes 15x fewer steps (1437 / 256 rounds up to 6 "
              "per epoch, 1437 / 16 to 90) and ends with over twice the training loss");
      L.check(scaled.train_loss < 1.5 * small.train_loss &&
                  scaled.test_acc > small.test_acc - 0.03,
              "scaling the learning rate with the batch (linear scaling rule) recovers: training "
              "loss within 1.5x and test accuracy within 3 points of the small batch");
    }
  });
}
