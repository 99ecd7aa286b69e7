// Lesson 16: curves and seeds.
//
// Every run records three things: its seed, its loss curve and its gradient-norm curve
// (train::Monitor writes them to a CSV with the seed and the git commit in its header, a JSON
// sidecar, and a TensorBoard event file, and shows a progress bar). With that record:
//   * the same seed gives the same curves, bit for bit; another seed gives a measured spread;
//   * the curve's shape tells the learning rate: too high oscillates and diverges, too low is
//     flat, a good one falls fast and settles;
//   * the train / validation gap shows overfitting, and where early stopping would have stopped;
//   * the lr curve shows a scheduler mistake (StepLR stepped per batch instead of per epoch);
//   * the event file reads back through TensorBoard's own reader (when .venv has it), and
//     tools/plot_curves.py draws the curves (when matplotlib is there).
// The digits MLP (64-32-10) of lesson 07, smaller so that the lesson runs in about a second.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "common/figures.hpp"  // and common/lesson.hpp
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace optim = gradlab::optim;
namespace train = gradlab::train;
namespace fs = std::filesystem;
using lesson::fmt;

namespace {

// The curves of one run, step by step, plus what the run ended with.
struct Curves {
  std::vector<double> loss, grad_norm, lr;
  std::vector<double> train_epoch_loss, val_loss;  // per epoch (section 4)
  double test_accuracy = 0;
  double init_weight_sum = 0;            // sum of the first layer's initial weights
  std::vector<int64_t> first_batch;      // the labels of the first batch, in order
  std::optional<std::string> stopped;  // the Monitor's message when the loss went non-finite
};

enum class Sched { kNone, kStepPerEpoch, kStepPerBatch };

struct Run {
  uint64_t seed = 0;
  std::optional<uint64_t> loader_seed;  // a planted bug fixes it; by default the run's seed
  double lr = 0.05;
  double momentum = 0.9;
  int64_t epochs = 6;
  Sched sched = Sched::kNone;
};

struct Data {
  gl::Tensor x_train, y_train, x_test, y_test;
};

// model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
nn::Sequential make_mlp(int64_t hidden = 32) {
  return nn::Sequential(nn::Linear(64, hidden), nn::ReLU(), nn::Linear(hidden, 10));
}

double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y) {
  gl::NoGradGuard no_grad;
  return gl::mean((gl::argmax(model(x), 1) == y).to(gl::kFloat32)).item<double>();
}

double eval_loss(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y) {
  gl::NoGradGuard no_grad;
  return nn::CrossEntropyLoss()(model(x), y).item<double>();
}

train::RunInfo run_info(const Run& r) {
  return train::RunInfo().seed(r.seed).config({{"lr", r.lr},
                                               {"momentum", r.momentum},
                                               {"epochs", r.epochs},
                                               {"batch_size", 64},
                                               {"model", "mlp 64-32-10"}});
}

// One training run on the digits. The seed decides everything random: the initial weights
// (gl::manual_seed) and the order of the batches (the DataLoader's own seed). A Monitor, when
// given, receives every step.
Curves train_digits(const Data& d, const Run& r, train::Monitor* monitor = nullptr) {
  gl::manual_seed(r.seed);
  nn::Sequential model = make_mlp();
  Curves c;
  c.init_weight_sum = model->at<nn::LinearImpl>(0).weight.sum().item<double>();
  optim::SGD opt(model->parameters(), optim::SGDOptions(r.lr).momentum(r.momentum));
  std::optional<optim::StepLR> sched;
  if (r.sched != Sched::kNone) sched.emplace(opt, 2, 0.1);  // lr x 0.1 every 2 epochs
  gl::data::DataLoader loader(gl::data::TensorDataset(d.x_train, d.y_train),
                              gl::data::DataLoaderOptions(64).shuffle(true).seed(r.loader_seed.value_or(r.seed)));
  nn::CrossEntropyLoss criterion;
  int64_t step = 0;
  try {
    for (int64_t epoch = 0; epoch < r.epochs; ++epoch) {
      for (gl::data::Batch& b : loader) {
        if (step == 0) c.first_batch = b.target.to_vector<int64_t>();
        opt.zero_grad();
        gl::Tensor loss = criterion(model(b.data), b.target);
        loss.backward();
        const double gn = nn::utils::grad_norm(model->parameters());
        const double lr = opt.param_groups()[0].options().get_lr();
        opt.step();
        c.loss.push_back(loss.item<double>());
        c.grad_norm.push_back(gn);
        c.lr.push_back(lr);
        if (monitor) monitor->step({epoch, step, c.loss.back(), gn, lr});
        ++step;
        if (sched && r.sched == Sched::kStepPerBatch) sched->step();  // THE MISTAKE
      }
      if (sched && r.sched == Sched::kStepPerEpoch) sched->step();  // right: once per epoch
      // weights and gradients of the epoch's last step, for TensorBoard's Histograms tab
      if (train::SummaryWriter* w = monitor ? monitor->writer() : nullptr) {
        for (const auto& [name, p] : model->named_parameters()) {
          w->add_histogram(name, p, step - 1);
          w->add_histogram(name + ".grad", p.grad(), step - 1);
        }
      }
    }
  } catch (const train::NonFiniteLossError& e) {
    c.stopped = e.what();
  }
  c.test_accuracy = accuracy(model, d.x_test, d.y_test);
  return c;
}

bool bit_identical(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i])) return false;
  return true;
}

double mean_of(const std::vector<double>& v, size_t from, size_t to) {
  to = std::min(to, v.size());
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return to > from ? s / static_cast<double>(to - from) : std::nan("");
}

// The mean loss of each epoch (23 steps each): the curve without the batch-to-batch noise.
std::vector<double> epoch_means(const std::vector<double>& loss, size_t per_epoch = 23) {
  std::vector<double> m;
  for (size_t from = 0; from < loss.size(); from += per_epoch)
    m.push_back(mean_of(loss, from, from + per_epoch));
  return m;
}

// How many epochs ended with a higher mean loss than the epoch before.
int rises(const std::vector<double>& means) {
  int n = 0;
  for (size_t i = 1; i < means.size(); ++i) n += !(means[i] <= means[i - 1]);  // NaN counts
  return n;
}

std::string list(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : " ") + (std::abs(x) < 1e4 ? fmt(x, 3) : fmt("%.1e", x));
  return s;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs a shell command; its stdout (stderr dropped) and exit status.
std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// The loss sparklines that are compared (seeds, learning rates) share one scale, 0 .. 2.5 (the
// first loss is about ln 10 = 2.30): auto-scaled, a curve that drops 2% fills the whole range and
// looks like a full descent.
constexpr double kLossTop = 2.5;

// matplotlib's first three line colours (tab:blue, tab:orange, tab:green): the curves in the
// order plot_curves.py draws them.
const char* const kLineColours = "1f77b4 ff7f0e 2ca02c";

// Decodes a PNG (tools/png_colors.py) and returns width, height and, per colour, how many of its
// pixels have that colour; empty when it does not decode.
std::vector<long> png_colours(const std::string& py, const fs::path& src, const fs::path& png,
                              const std::string& colours) {
  const auto [rc, out] = run_command(py + " " + quoted(src / "tools" / "png_colors.py") + " " +
                                     quoted(png) + " " + colours);
  std::vector<long> v;
  if (rc != 0) return v;
  std::istringstream in(out);
  long x;
  while (in >> x) v.push_back(x);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L("16", "curves and seeds", argc, argv,
                   {{"loader_seed_fixed", "the DataLoader's seed is hard-coded to 0: every run shuffles the same way",
                     "every seed draws other initial weights and another batch order"},
                    {"plot_same_csv", "a copy-paste slip gives plot_curves.py the good run's CSV three times",
                     "the PNGs decode and every curve's colour covers"}});
  return L.run([&] {
    const gl::data::DigitsSplit digits = gl::data::load_digits_split();
    const Data d{digits.train.data(), digits.train.targets(), digits.test.data(),
                 digits.test.targets()};
    const fs::path out = lesson::output_dir() / "lesson16";
    fs::remove_all(out);  // files of an earlier run must not pass the checks below
    fs::create_directories(out);
    const fs::path src = GRADLAB_SOURCE_DIR;

    // -------------------------------------------------------------------------------------------
    L.section("1. every run records its seed, its loss curve and its gradient-norm curve");
    const Run base;  // seed 0, lr 0.05, momentum 0.9, 6 epochs of 23 batches
    const fs::path csv = out / "seed0.csv", logdir = out / "tb" / "seed0";
    Curves first;
    {
      train::Monitor mon(run_info(base),
                         train::MonitorOptions()
                             .log_dir(logdir.string())
                             .csv_path(csv.string())
                             .total_steps(6 * 23)
                             .progress_options(train::ProgressOptions().desc("seed 0").plain_every(46)));
      first = train_digits(d, base, &mon);
      mon.close({{"test_accuracy", first.test_accuracy}});
    }
    std::cout << first.loss.size() << " steps, loss " << fmt(first.loss.front()) << " -> "
              << fmt(first.loss.back()) << ", test accuracy " << fmt(first.test_accuracy) << "\n";
    std::cout << "loss      " << train::sparkline(first.loss, 46) << "\n"
              << "grad norm " << train::sparkline(first.grad_norm, 46) << "\n";
    const std::string text = slurp(csv);
    std::cout << "written: " << csv.string() << ", " << fs::path(csv).replace_extension(".json").string()
              << ", " << logdir.string() << "/events.out.tfevents.*\n";
    {
      std::istringstream lines(text);
      std::string line;
      for (int i = 0; i < 4 && std::getline(lines, line); ++i) std::cout << "  " << line << "\n";
    }
    const std::string commit = train::git_commit();
    L.check(text.rfind("# seed: 0\n# git_commit: " + commit + "\n# config: ", 0) == 0 &&
                text.find("\"lr\":0.05") != std::string::npos,
            "the CSV header records the seed, the git commit and the config");
    // the curves read back from the CSV equal the ones in memory, bit for bit (17 digits)
    std::vector<double> csv_loss, csv_gn;
    {
      std::istringstream lines(text);
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#' || line.rfind("epoch,", 0) == 0) continue;
        std::istringstream row(line);
        std::string cell[5];
        for (auto& c : cell) std::getline(row, c, ',');
        csv_loss.push_back(std::strtod(cell[2].c_str(), nullptr));
        csv_gn.push_back(std::strtod(cell[3].c_str(), nullptr));
      }
    }
    L.check(bit_identical(csv_loss, first.loss) && bit_identical(csv_gn, first.grad_norm) &&
                !csv_loss.empty(),
            "the CSV holds the loss and gradient-norm curves, one row per step, bit for bit");
    const std::string json = slurp(fs::path(csv).replace_extension(".json"));
    L.check(json.find("\"seed\": 0") != std::string::npos &&
                json.find("\"git_commit\": \"" + commit + "\"") != std::string::npos &&
                json.find("\"steps\": " + std::to_string(first.loss.size())) != std::string::npos,
            "the JSON sidecar records the same seed, commit and number of steps");
    fs::path event_file;
    for (const auto& e : fs::directory_iterator(logdir))
      if (e.is_regular_file()) event_file = e.path();
    const train::TFRecordScan scan = train::read_tfrecords(event_file.string());
    // version header + run text + (loss, grad_norm, lr) per step + 4 weight and 4 gradient
    // histograms per epoch
    L.check(!scan.truncated_tail && !scan.corrupt &&
                scan.records.size() == 2 + 3 * first.loss.size() + 8 * 6,
            "the event file holds every step and the histograms (" +
                std::to_string(scan.records.size()) + " records, all CRCs valid)");

    // -------------------------------------------------------------------------------------------
    L.section("2. the same seed gives the same curves, bit for bit; other seeds give a spread");
    const Curves again = train_digits(d, base);
    L.check(bit_identical(again.loss, first.loss) && bit_identical(again.grad_norm, first.grad_norm),
            "seed 0 again: the loss and gradient-norm curves are bit-identical (" +
                std::to_string(first.loss.size()) + " steps)");
    std::vector<Curves> seeds{first};
    for (uint64_t s = 1; s < 5; ++s) {
      Run r = base;
      r.seed = s;
      if (L.bug("loader_seed_fixed")) r.loader_seed = 0;  // a hard-coded DataLoader seed
      seeds.push_back(train_digits(d, r));
    }
    std::vector<double> final_loss, acc;
    std::cout << "(the loss sparklines share one scale: 0 .. " << fmt(kLossTop, 1) << ")\n";
    for (size_t s = 0; s < seeds.size(); ++s) {
      final_loss.push_back(mean_of(seeds[s].loss, seeds[s].loss.size() - 23, seeds[s].loss.size()));
      acc.push_back(seeds[s].test_accuracy);
      std::cout << "seed " << s << ": last-epoch mean loss " << fmt(final_loss.back())
                << ", test accuracy " << fmt(acc.back()) << "  "
                << train::sparkline(seeds[s].loss, 23, 0, kLossTop) << "\n";
    }
    const auto [amin, amax] = std::minmax_element(acc.begin(), acc.end());
    const double amean = std::accumulate(acc.begin(), acc.end(), 0.0) / acc.size();
    double var = 0;
    for (double a : acc) var += (a - amean) * (a - amean);
    const double astd = std::sqrt(var / (acc.size() - 1));
    std::cout << "test accuracy over 5 seeds: mean " << fmt(amean) << ", std " << fmt(astd)
              << ", range " << fmt(*amin) << " .. " << fmt(*amax) << "\n";
    // The seed must reach both sources of randomness: the initial weights (gl::manual_seed) and
    // the batch order (the DataLoader's seed). Each is compared on its own, pair by pair.
    int same_weights = 0, same_order = 0;
    for (size_t a = 0; a < seeds.size(); ++a)
      for (size_t b = a + 1; b < seeds.size(); ++b) {
        same_weights += seeds[a].init_weight_sum == seeds[b].init_weight_sum;
        same_order += seeds[a].first_batch == seeds[b].first_batch;
      }
    std::cout << "first batch's labels: seed 0 " << fmt(seeds[0].first_batch[0], 0) << " "
              << fmt(seeds[0].first_batch[1], 0) << " " << fmt(seeds[0].first_batch[2], 0)
              << " ..., seed 1 " << fmt(seeds[1].first_batch[0], 0) << " "
              << fmt(seeds[1].first_batch[1], 0) << " " << fmt(seeds[1].first_batch[2], 0)
              << " ...; pairs of seeds with the same initial weights: " << same_weights
              << ", the same first batch: " << same_order << " (of 10)\n";
    L.check(same_weights == 0 && same_order == 0,
            "every seed draws other initial weights and another batch order (all 10 pairs differ in both)");
    L.check(*amax - *amin > 0 && *amax - *amin < 0.04,
            "the seeds' test accuracies differ, by less than 4 points (" +
                fmt(100 * (*amax - *amin), 1) + "): one run's number carries this much noise");

    // -------------------------------------------------------------------------------------------
    L.section("3. the curve's shape tells the learning rate");
    const std::vector<std::pair<std::string, double>> lrs = {
        {"high", 0.5}, {"low", 0.0005}, {"good", 0.05}};
    std::map<std::string, Curves> by_lr;
    std::cout << "(the loss sparklines share one scale: 0 .. " << fmt(kLossTop, 1) << ")\n";
    for (const auto& [name, lr] : lrs) {
      Run r = base;
      r.lr = lr;
      train::Monitor mon(run_info(r), train::MonitorOptions()
                                          .csv_path((out / ("lr_" + name + ".csv")).string())
                                          .log_dir((out / "tb" / ("lr_" + name)).string())
                                          .progress(false));
      by_lr[name] = train_digits(d, r, &mon);
      const Curves& c = by_lr[name];
      std::cout << "lr " << std::setw(6) << lr << " (" << name << "): epoch means "
                << list(epoch_means(c.loss)) << "  " << train::sparkline(c.loss, 23, 0, kLossTop)
                << (c.stopped ? "  (stopped at step " + std::to_string(c.loss.size() - 1) + ")" : "")
                << "\n";
    }
    const Curves &high = by_lr["high"], &low = by_lr["low"], &good = by_lr["good"];
    // The README shows the three runs' loss and gradient norm per step, each on one log-scale
    // plot (tools/make_lesson_figures.py redraws them).
    for (const auto& [file, what] : {std::pair<std::string, std::string>{"lr_loss.png", "loss"},
                                     {"lr_grad_norm.png", "gradient norm"}}) {
      auto pick = [&](const Curves& c) { return what == "loss" ? c.loss : c.grad_norm; };
      gl::CurvePlot plot = gl::curve_plot({{"lr 0.5 (high)", pick(high), {}},
                                           {"lr 0.0005 (low)", pick(low), {}},
                                           {"lr 0.05 (good)", pick(good), {}}},
                                          what);
      plot.log_y = true;
      plot.title = "lesson 16: " + what + " per step at three learning rates";
      LESSON_FIGURE(file, plot);
    }
    if (high.stopped) std::cout << "lr 0.5: " << high.stopped->substr(0, high.stopped->find("; hint")) << "\n";
    const std::vector<double> hm = epoch_means(high.loss), gm = epoch_means(good.loss);
    const double high_min = *std::min_element(hm.begin(), hm.end());
    L.check(high.stopped.has_value() || hm.back() > 10 * high_min,
            "lr too high: after a good start the loss climbs and diverges (the last epoch is >10x "
            "its best, or the monitor stopped the run)");
    L.check(rises(hm) >= 2 && rises(gm) == 0,
            "lr too high: the epoch mean rose " + std::to_string(rises(hm)) +
                " times; with a good lr every epoch is lower than the one before");
    const double low_drop = 1 - mean_of(low.loss, low.loss.size() - 23, low.loss.size()) /
                                    mean_of(low.loss, 0, 23);
    L.check(low_drop >= 0 && low_drop < 0.15,
            "lr too low: the curve is flat (the last epoch's loss is only " + fmt(100 * low_drop, 1) +
                "% below the first's)");
    const double good_ratio =
        mean_of(good.loss, good.loss.size() - 23, good.loss.size()) / mean_of(good.loss, 0, 23);
    L.check(good_ratio < 0.2 && good.test_accuracy > 0.93,
            "a good lr: the loss falls below 1/5 of the first epoch's and the test accuracy is above 93%");

    // -------------------------------------------------------------------------------------------
    L.section("4. the train / validation gap: overfitting, and where early stopping would stop");
    {
      // 100 training images, a wide model, no regularization, full-batch Adam: it learns them by
      // heart. The validation set is the 360 test images.
      gl::manual_seed(0);
      const gl::Tensor xs = d.x_train.narrow(0, 0, 100), ys = d.y_train.narrow(0, 0, 100);
      nn::Sequential wide = make_mlp(256);
      optim::Adam opt(wide->parameters(), optim::AdamOptions(0.01));
      nn::CrossEntropyLoss criterion;
      train::SummaryWriter w((out / "tb" / "overfit").string());
      std::vector<double> tr, va;
      for (int64_t epoch = 0; epoch < 150; ++epoch) {
        opt.zero_grad();
        gl::Tensor loss = criterion(wide(xs), ys);
        loss.backward();
        opt.step();
        tr.push_back(eval_loss(wide, xs, ys));
        va.push_back(eval_loss(wide, d.x_test, d.y_test));
        w.add_scalars("loss", {{"train", tr.back()}, {"validation", va.back()}}, epoch);
      }
      const size_t best = std::min_element(va.begin(), va.end()) - va.begin();
      for (size_t e : {size_t{0}, size_t{9}, best, size_t{49}, size_t{149}})
        std::cout << "epoch " << std::setw(3) << e + 1 << ": train loss " << fmt(tr[e])
                  << ", validation loss " << fmt(va[e]) << (e == best ? "  <- lowest validation loss" : "")
                  << "\n";
      const double top = std::max(*std::max_element(tr.begin(), tr.end()), *std::max_element(va.begin(), va.end()));
      std::cout << "(one scale: 0 .. " << fmt(top, 2) << ")\n"
                << "train      " << train::sparkline(tr, 50, 0, top) << "\n"
                << "validation " << train::sparkline(va, 50, 0, top) << "\n";
      L.check(tr.back() < 0.01, "the training loss goes to ~0: the 100 images are learned by heart");
      L.check(va.back() > 1.5 * va[best] && best < 100,
              "the validation loss has its minimum at epoch " + std::to_string(best + 1) +
                  " and then rises by more than half: the gap is overfitting");
      L.check(va.back() - tr.back() > 0.5,
              "at the end the gap validation - train is " + fmt(va.back() - tr.back()));
    }

    // -------------------------------------------------------------------------------------------
    L.section("5. the lr curve shows a scheduler mistake: StepLR(step_size=2) stepped per batch");
    {
      Run right = base, wrong = base;
      right.sched = Sched::kStepPerEpoch;
      wrong.sched = Sched::kStepPerBatch;
      train::Monitor mr(run_info(right), train::MonitorOptions()
                                            .csv_path((out / "sched_per_epoch.csv").string())
                                            .progress(false));
      train::Monitor mw(run_info(wrong), train::MonitorOptions()
                                            .csv_path((out / "sched_per_batch.csv").string())
                                            .progress(false));
      const Curves cr = train_digits(d, right, &mr), cw = train_digits(d, wrong, &mw);
      mr.close();
      mw.close();
      for (size_t s : {0, 1, 2, 3, 22, 23, 46, 137})
        std::cout << "step " << std::setw(3) << s << " (epoch " << s / 23 << "): lr per epoch "
                  << fmt("%.0e", cr.lr[s]) << ", per batch " << fmt("%.0e", cw.lr[s]) << "\n";
      std::cout << "(one scale: 0 .. 0.05)\n"
                << "lr per epoch " << train::sparkline(cr.lr, 46, 0, 0.05) << "\n"
                << "lr per batch " << train::sparkline(cw.lr, 46, 0, 0.05) << "\n";
      std::set<double> distinct_right(cr.lr.begin(), cr.lr.end());
      L.check(distinct_right.size() == 3 && cr.lr[45] == 0.05 && cr.lr[46] == 0.05 * 0.1,
              "stepped per epoch, the lr curve is a staircase of 3 steps: 0.05 for epochs 1-2, "
              "then x0.1 every 2 epochs");
      L.check(cw.lr[0] == cr.lr[0] && cw.lr[1] == cr.lr[1] && cw.lr[23] < 1e-12,
              "stepped per batch, the lr collapses within the first epoch (step 23: " +
                  fmt("%.0e", cw.lr[23]) + ")");
      const double wrong_last = mean_of(cw.loss, cw.loss.size() - 23, cw.loss.size());
      const double right_last = mean_of(cr.loss, cr.loss.size() - 23, cr.loss.size());
      std::cout << "last-epoch loss: per epoch " << fmt(right_last) << ", per batch "
                << fmt(wrong_last) << "\n";
      L.check(wrong_last > 2 * right_last,
              "stepped per batch, the model stops learning (last-epoch loss > 2x the right run's): "
              "the loss curve only says 'stuck', the lr curve says why");
    }

    // -------------------------------------------------------------------------------------------
    L.section("6. pictures: tools/plot_curves.py (matplotlib)");
    const std::string py = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (run_command(py + " -c 'import matplotlib'").first == 0) {
      const fs::path png = out / "lr_curves.png";
      // the planted bug: a copy-paste slip passes the good run's file three times
      const bool same = L.bug("plot_same_csv");
      const std::string cmd = py + " " + quoted(src / "tools" / "plot_curves.py") + " " +
                              quoted(out / (same ? "lr_good.csv" : "lr_high.csv")) + " " +
                              quoted(out / "lr_good.csv") + " " +
                              quoted(out / (same ? "lr_good.csv" : "lr_low.csv")) +
                              " --label 'lr 0.5 (too high)' --label 'lr 0.05 (good)'"
                              " --label 'lr 0.0005 (too low)' --out " + quoted(png);
      const fs::path png2 = out / "scheduler.png";
      const std::string cmd2 = py + " " + quoted(src / "tools" / "plot_curves.py") + " " +
                               quoted(out / "sched_per_epoch.csv") + " " +
                               quoted(out / "sched_per_batch.csv") +
                               " --label 'StepLR per epoch' --label 'StepLR per batch (wrong)'"
                               " --out " + quoted(png2);
      const int rc = run_command(cmd).first, rc2 = run_command(cmd2).first;
      std::cout << "plotted: " << png.string() << ", " << png2.string() << "\n";
      // A PNG header says nothing about what was drawn: decode the pictures and count, per
      // curve, the pixels of its colour (each curve is drawn in three panels: loss, |grad|, lr;
      // its legend sample alone is about 30 pixels).
      const std::vector<long> p1 = png_colours(py, src, png, kLineColours);
      const std::vector<long> p2 = png_colours(py, src, png2, std::string(kLineColours).substr(0, 13));
      auto show = [](const std::vector<long>& v) {
        std::ostringstream t;
        if (v.size() < 2) return std::string("does not decode");
        t << v[0] << "x" << v[1] << " px; curve pixels";
        for (size_t i = 2; i < v.size(); ++i) t << " " << v[i];
        return t.str();
      };
      std::cout << png.filename().string() << ": " << show(p1) << "\n"
                << png2.filename().string() << ": " << show(p2) << "\n";
      const long least1 = p1.size() == 5 ? *std::min_element(p1.begin() + 2, p1.end()) : 0;
      const long least2 = p2.size() == 4 ? *std::min_element(p2.begin() + 2, p2.end()) : 0;
      L.check(rc == 0 && rc2 == 0 && least1 >= 150 && least2 >= 150,
              "plot_curves.py drew the three lr runs and the two schedulers: the PNGs decode and every "
              "curve's colour covers at least 150 pixels");
    } else {
      std::cout << "plots skipped: " << py << " has no matplotlib (tools/setup.sh installs "
                << "python3-matplotlib)\n";
    }

    // -------------------------------------------------------------------------------------------
    L.section("7. the event file read back by TensorBoard's own reader");
    const fs::path venv_py = src / ".venv" / "bin" / "python";
    const auto [tb_rc, tb_out] = fs::exists(venv_py)
                                     ? run_command(quoted(venv_py) + " " +
                                                   quoted(src / "tools" / "tb_scalars.py") + " " +
                                                   quoted(logdir))
                                     : std::pair<int, std::string>{-1, ""};
    if (tb_rc == 0) {
      // "<tag> <step> <value>" per scalar; TensorBoard stores float32
      std::map<std::string, std::vector<std::pair<int64_t, double>>> got;
      std::istringstream lines(tb_out);
      std::string tag;
      int64_t step;
      std::string value;
      while (lines >> tag >> step >> value) got[tag].push_back({step, std::strtod(value.c_str(), nullptr)});
      bool same = got.size() == 3;
      for (const auto& [t, series] : std::map<std::string, const std::vector<double>*>{
               {"loss", &first.loss}, {"grad_norm", &first.grad_norm}, {"lr", &first.lr}}) {
        const auto& g = got[t];
        same = same && g.size() == series->size();
        for (size_t i = 0; same && i < g.size(); ++i)
          same = g[i].first == static_cast<int64_t>(i) &&
                 g[i].second == static_cast<double>(static_cast<float>((*series)[i]));
      }
      std::cout << "TensorBoard's EventAccumulator read " << got["loss"].size() << " steps of loss, "
                << "grad_norm and lr from " << event_file.filename().string() << "\n";
      L.check(same, "every loss, grad-norm and lr value reads back equal (as float32, TensorBoard's "
                    "scalar type)");
      std::cout << "look at it: " << (src / ".venv" / "bin" / "tensorboard").string()
                << " --logdir " << (out / "tb").string() << "\n";
    } else {
      std::cout << "TensorBoard check skipped: no " << venv_py.string()
                << " with tensorboard (run tools/setup.sh)\n";
    }
  });
}
