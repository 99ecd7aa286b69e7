// Lesson 15: debugging order — data, then model, then training.
//
// A digits training script with five planted bugs: the labels are shifted by one (read as
// 1..10), the images are transposed (a reader that swaps H and W, standing in for reversed
// channel order on grayscale digits), the normalization is missing, a layer is left out of
// forward, and the LR is too large. The test split is prepared correctly (as the evaluation
// pipeline does it), so the trained model scores badly there. Tuning the LR alone never fixes
// it. diagnose::doctor finds the bugs in the order data -> model -> training; each fix is applied
// and doctor is run again, until it reports no failure and the run learns. The first and the last
// report are also written as web pages (report.html(path)), with the charts doctor drew.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace dg = gradlab::diagnose;
using lesson::fmt;

namespace {

// The planted bugs, each a flag of the training script.
struct Bugs {
  bool labels_shifted = true;   // labels read as 1..10
  bool transposed = true;       // images read with H and W swapped
  bool unnormalized = true;     // (x - mean) / std forgotten
  bool layer_left_out = true;   // forward skips fc2
  double lr = 10.0;             // too large for SGD on this model
  // Break-it switches (lesson flags), not bugs of the script as found:
  bool labels_shuffled = false;  // --bug labels_shuffled: the label bug is a shuffle, not a shift
  bool fc2_unregistered = false; // --bug fc2_unregistered: the refactor also lost register_module
  bool lr_fix_skipped = false;   // --bug lr_fix_skipped: the LR fix is forgotten
};

// The digits' raw split (pixels in [0, 1]) and its per-pixel statistics: what the data set's
// card documents and what the evaluation pipeline normalizes with.
const gl::data::DigitsSplit& raw() {
  static const gl::data::DigitsSplit s = [] {
    gl::data::DigitsSplitOptions o;
    o.standardize = false;
    return gl::data::load_digits_split(o);
  }();
  return s;
}

gl::Tensor normalize(const gl::Tensor& x) { return (x - raw().mean) / raw().std; }

// The training script's data pipeline, with its bugs.
struct TrainData {
  gl::Tensor x, y;
  int64_t num_classes;  // the script computes it as max(label) + 1
};
TrainData read_training_data(const Bugs& b) {
  gl::Tensor x = raw().train.data();
  gl::Tensor y = raw().train.targets();
  if (b.labels_shifted && b.labels_shuffled) {
    gl::manual_seed(3);  // images and labels shuffled separately: every label lands on another image
    y = y.index_select(0, gl::randperm(y.size(0)));
  } else if (b.labels_shifted) {
    y = y + 1;
  }
  if (b.transposed) x = x.reshape({-1, 1, 8, 8}).transpose(2, 3).contiguous().reshape({-1, 64});
  if (!b.unnormalized) x = normalize(x);
  return {x, y, gl::amax(y).item<int64_t>() + 1};
}

// The intended model: 64 -> 128 -> 128 -> 10, ReLU between.
struct NetImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  bool skip_fc2;
  NetImpl(int64_t classes, bool skip, bool unregistered = false) : skip_fc2(skip) {
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = unregistered ? nn::Linear(128, 128) : register_module("fc2", nn::Linear(128, 128));
    fc3 = register_module("fc3", nn::Linear(128, classes));
  }
  gl::Tensor forward(const gl::Tensor& x) {
    gl::Tensor h = gl::relu(fc1(x));
    if (!skip_fc2) h = gl::relu(fc2(h));  // the bug: this line was lost in a refactor
    return fc3(h);
  }
};
GRADLAB_MODULE(Net);

Net make_net(const TrainData& d, const Bugs& b) {
  gl::manual_seed(1);
  return Net(d.num_classes, b.layer_left_out, b.fc2_unregistered);
}

// The script's model after 10 epochs of SGD (batches of 64, shuffled, seeded).
Net train_script(const Bugs& b) {
  const TrainData d = read_training_data(b);
  Net net = make_net(d, b);
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(b.lr));
  nn::CrossEntropyLoss criterion;
  gl::data::DataLoader loader(gl::data::TensorDataset(d.x, d.y),
                              gl::data::DataLoaderOptions(64).shuffle(true).seed(7));
  for (int epoch = 0; epoch < 10; ++epoch)
    for (gl::data::Batch& batch : loader) {
      opt.zero_grad();
      criterion(net(batch.data), batch.target).backward();
      opt.step();
    }
  return net;
}

// Its predictions on the test split prepared correctly (as the evaluation pipeline does it), or
// with the training script's own image pipeline (transposed and unnormalized where it is).
gl::Tensor predict(Net& net, const Bugs& b, bool like_training = false) {
  gl::NoGradGuard no_grad;
  gl::Tensor x = raw().test.data();
  if (like_training && b.transposed) x = x.reshape({-1, 1, 8, 8}).transpose(2, 3).contiguous().reshape({-1, 64});
  if (!like_training || !b.unnormalized) x = normalize(x);
  return gl::argmax(net(x), 1);
}

double agreement(const gl::Tensor& pred, const gl::Tensor& y) {
  return gl::mean((pred == y).to(gl::kFloat64)).item<double>();
}

// Test accuracy of the script's model, on the test split prepared correctly.
double train_and_test(const Bugs& b) {
  Net net = train_script(b);
  return agreement(predict(net, b), raw().test.targets());
}

// doctor on the script's model, optimizer and training data, with the reference statistics and
// the number of classes the task has (digits: 10).
dg::Report run_doctor(const Bugs& b) {
  const TrainData d = read_training_data(b);
  Net net = make_net(d, b);
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(b.lr));
  dg::DoctorOptions o;
  o.num_classes = 10;
  o.input_stats.mean = raw().mean;
  o.input_stats.std = raw().std;
  o.input_stats.sample_shape = {1, 8, 8};
  return dg::doctor(net, nn::CrossEntropyLoss(), opt, {d.x, d.y}, o);
}

std::string stage_of(const dg::Report& r) { return r.stopped_at ? dg::to_string(*r.stopped_at) : "none"; }

bool failed(const dg::Report& r, const char* check) {
  const dg::Finding* f = r.find(check);
  return f && f->failed();
}

// The report's failed findings, one line each, without the lines that list every number.
void print_failures(const dg::Report& r) {
  for (const dg::Finding& f : r.failures()) {
    const std::string first = f.evidence.substr(0, f.evidence.find('\n'));
    std::cout << "  [fail] " << dg::to_string(f.stage) << "/" << f.check << ": " << first << "\n"
              << "         hint: " << f.hint << "\n";
  }
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L("15", "debugging order", argc, argv,
                   {{"labels_shuffled", "the label bug is a separate shuffle of the labels, not a shift by one",
                     "the below-chance accuracies are systematic"},
                    {"fc2_unregistered", "the refactor that dropped fc2 from forward also dropped its register_module",
                     "the missing layer costs no accuracy"},
                    {"lr_fix_skipped", "the last fix is forgotten: the LR stays 10",
                     "with every bug fixed the run learns"}});
  return L.run([&] {
    Bugs bugs;
    bugs.labels_shuffled = L.bug("labels_shuffled");
    bugs.fc2_unregistered = L.bug("fc2_unregistered");
    bugs.lr_fix_skipped = L.bug("lr_fix_skipped");
    // -------------------------------------------------------------------------------------------
    L.section("1. The script as found: five bugs, a model that does not learn");
    const double acc0 = train_and_test(bugs);
    std::cout << "test accuracy after 10 epochs (lr " << bugs.lr << "): " << fmt(100 * acc0, 3) << "%\n";
    L.check(acc0 < 0.5, "the run does not learn: test accuracy below 50% (chance is 10%)");

    // -------------------------------------------------------------------------------------------
    L.section("2. Three days of LR tuning on broken data");
    L.say("The usual first move is to tune the LR. With the data still wrong, no LR helps:");
    double best = 0;
    for (double lr : {1.0, 0.3, 0.1, 0.03, 0.01}) {
      Bugs b = bugs;
      b.lr = lr;
      const double acc = train_and_test(b);
      best = std::max(best, acc);
      std::cout << "  lr " << std::setw(5) << lr << ": test accuracy " << fmt(100 * acc, 3) << "%\n";
    }
    L.check(best < 0.5, "every LR from 0.01 to 1 stays below 50%: the LR is not the problem (yet)");

    // -------------------------------------------------------------------------------------------
    L.section("3. doctor: data first");
    dg::Report r = run_doctor(bugs);
    const dg::Report as_found = r;  // written as a web page in section 6
    print_failures(r);
    std::cout << "doctor stopped at: " << stage_of(r) << "\n";
    L.check(stage_of(r) == "data", "doctor stops at the data stage; the model and training stages are not run");
    L.check(failed(r, "label_range") && r.find("label_range")->hint.find("shifted by one") != std::string::npos,
            "label_range fails: labels span [1, 10] for 10 classes, shifted by one");
    L.check(failed(r, "input_stats") &&
                r.find("input_stats")->evidence.find("images transposed (H and W swapped), and normalization missing") !=
                    std::string::npos,
            "input_stats fails: the images fit 'transposed, and normalization missing' best");
    L.check(r.stages_run.size() == 1, "one stage ran: nothing is said about a model fed broken data");

    // Each fix, then doctor again: which stage does it stop at now?
    struct Step {
      const char* fix;
      void (*apply)(Bugs&);
      const char* expect_stage;
      const char* expect_check;
    };
    const std::vector<Step> steps{
        {"labels: subtract 1 where they are read", [](Bugs& b) { b.labels_shifted = false; }, "data", "input_stats"},
        {"images: read them as [1, 8, 8], not transposed", [](Bugs& b) { b.transposed = false; }, "data", "input_stats"},
        {"normalization: x = (x - mean) / std", [](Bugs& b) { b.unnormalized = false; }, "model", "gradient_flow"},
        {"model: forward uses fc2 again", [](Bugs& b) { b.layer_left_out = false; }, "training", "overfit_one_batch"},
        {"LR: 0.1 (inside the range test's suggestion)", [](Bugs& b) { b.lr = b.lr_fix_skipped ? b.lr : 0.1; }, "none", nullptr},
    };
    // -------------------------------------------------------------------------------------------
    L.section("4. Fix, run doctor again, repeat");
    std::vector<double> accs;
    for (const Step& s : steps) {
      s.apply(bugs);
      r = run_doctor(bugs);
      const double acc = train_and_test(bugs);
      accs.push_back(acc);
      std::cout << "fix: " << s.fix << "\n";
      print_failures(r);
      std::cout << "  doctor stops at: " << stage_of(r) << "; test accuracy " << fmt(100 * acc, 3) << "%\n";
      const std::string claim = std::string("after this fix doctor ") +
                                (s.expect_check ? "stops at the " + std::string(s.expect_stage) + " stage (" +
                                                      s.expect_check + ")"
                                                : std::string("reports no failure"));
      L.check(stage_of(r) == s.expect_stage && (!s.expect_check || failed(r, s.expect_check)), claim);
      if (s.expect_check && std::string(s.expect_check) == "overfit_one_batch") {
        const dg::Finding* lr = r.find("lr_range");
        L.check(lr && lr->failed() && lr->metric("diverged_lr") < 10 && lr->metric("suggested_min") <= 0.1 &&
                    0.1 <= lr->metric("suggested_max"),
                "the LR range test: the loss blows up below lr 10, and the suggested range holds 0.1 (the next fix)");
      }
    }
    L.check(accs.back() >= 0.9, "with every bug fixed the run learns: test accuracy >= 90%");
    // -------------------------------------------------------------------------------------------
    L.section("4b. What each bug costs on its own, at the good LR");
    L.say("Every state above but the last had lr 10, which diverges by itself and hides what each bug costs.");
    L.say("At lr 0.1, one bug left in at a time:");
    Bugs fixed = bugs;
    fixed.lr = 0.1;
    struct Alone {
      const char* name;
      void (*plant)(Bugs&);
    };
    const std::vector<Alone> alone{{"labels shifted", [](Bugs& b) { b.labels_shifted = true; }},
                                   {"images transposed", [](Bugs& b) { b.transposed = true; }},
                                   {"normalization missing", [](Bugs& b) { b.unnormalized = true; }},
                                   {"layer left out", [](Bugs& b) { b.layer_left_out = true; }}};
    std::vector<double> cost;
    std::vector<Net> nets;
    std::vector<Bugs> states;
    for (const Alone& a : alone) {
      Bugs b = fixed;
      a.plant(b);
      nets.push_back(train_script(b));
      states.push_back(b);
      cost.push_back(agreement(predict(nets.back(), b), raw().test.targets()));
      std::cout << "  only " << a.name << ": test accuracy " << fmt(100 * cost.back(), 3) << "%\n";
    }
    const double acc_fixed = train_and_test(fixed);  // = the last fix's run (unless a flag skipped it)
    // Below chance (10%) is not bad luck. The shifted-label model learned well: it predicts
    // label + 1. The transposed images are normalized with the statistics of the right layout:
    // a pixel that is near-constant there (an edge, std near 0) holds ink once transposed, and is
    // divided by that near-zero std: inputs hundreds of times too large, a run that learns nothing.
    const double off_by_one = agreement(predict(nets[0], states[0]) - 1, raw().test.targets());
    const double on_transposed = agreement(predict(nets[1], states[1], true), raw().test.targets());
    const double max_in = gl::amax(gl::abs(read_training_data(states[1]).x)).item<double>();
    const double max_ok = gl::amax(gl::abs(read_training_data(fixed).x)).item<double>();

    std::cout << "  labels shifted: prediction - 1 matches the label for " << fmt(100 * off_by_one, 3)
              << "% of the test digits\n"
              << "  images transposed: largest |input| " << fmt(max_in, 1) << " (right: " << fmt(max_ok, 1)
              << "); on test images prepared its own way it is right for " << fmt(100 * on_transposed, 3) << "%\n";
    L.check(cost[0] < 0.1 && off_by_one > 0.9,
            "the below-chance accuracies are systematic: the shifted-label model predicts label + 1 "
            "(prediction - 1 is right for > 90%)");
    L.check(cost[1] < 0.1 && max_in > 5 * max_ok && on_transposed < 0.5,
            "and the transposed images, normalized with the right layout's statistics, reach inputs > 5x the "
            "largest right one: that run learns nothing, even on images prepared its own way");
    L.check(cost[2] < acc_fixed - 0.05,
            "a missing normalization costs accuracy on its own (more than 5 points below the fixed run)");
    const dg::Report layer_only = run_doctor(states[3]);
    std::cout << "  layer left out: " << fmt(100 * cost[3], 3) << "% vs " << fmt(100 * acc_fixed, 3)
              << "% fixed; doctor stops at " << stage_of(layer_only) << "\n";
    L.check(std::abs(cost[3] - acc_fixed) < 0.03 && stage_of(layer_only) == "model" &&
                failed(layer_only, "gradient_flow"),
            "the missing layer costs no accuracy (within 3 points): a test score cannot find it, "
            "doctor's model/gradient_flow does (fc2 gets no gradient)");

    // -------------------------------------------------------------------------------------------
    L.section("5. The report, for people and for tools");
    std::cout << r;
    const std::string json = r.json();
    L.check(!r.has_failure() && r.stages_run.size() == 3, "the fixed script passes all three stages");
    size_t checks = 0;
    for (size_t at = json.find("\"check\": "); at != std::string::npos; at = json.find("\"check\": ", at + 1)) ++checks;
    std::cout << "report.json(): " << json.size() << " characters, " << checks << " findings\n";
    L.check(checks == r.findings().size() && json.find("\"stopped_at\": null") != std::string::npos,
            "report.json() holds the same findings for tools (one \"check\" each, \"stopped_at\": null)");

    // -------------------------------------------------------------------------------------------
    L.section("6. The report as a web page");
    L.say("report.html(path) writes one self-contained page (open it in any browser): the stages in order, each");
    L.say("finding with its evidence and hint, and the charts behind them. The first report and the last:");
    const std::filesystem::path out = lesson::output_dir() / "lesson15";
    std::filesystem::create_directories(out);
    const std::filesystem::path first_page = out / "doctor_as_found.html", last_page = out / "doctor_fixed.html";
    as_found.html(first_page.string());
    r.html(last_page.string());
    std::cout << "written: " << first_page.string() << ", " << last_page.string() << "\n";
    const std::string p0 = read_file(first_page), p1 = read_file(last_page);
    std::cout << "doctor_as_found.html: " << p0.size() << " bytes, " << count(p0, "<article class=\"finding\"")
              << " findings, " << count(p0, "<figure class=\"chart\"") << " charts\n";
    std::cout << "doctor_fixed.html: " << p1.size() << " bytes, " << count(p1, "<article class=\"finding\"") << " findings, "
              << count(p1, "<figure class=\"chart\"") << " charts (LR range test over " << r.charts.lr_range.lrs.size()
              << " LRs, " << r.charts.activations.size() << " layer histograms, gradient norms of "
              << r.charts.grad_norms.size() << " parameters)\n";
    L.check(p0 == as_found.html_string() && p1 == r.html_string() && p1.ends_with("</html>\n"),
            "both files hold the whole page (html() writes a temporary file, then renames it over the path)");
    L.check(has(p0, "data-check=\"label_range\" data-verdict=\"fail\"") &&
                has(p0, "data-check=\"input_stats\" data-verdict=\"fail\"") &&
                has(p0, "id=\"stage-model\" data-stage=\"model\" data-verdict=\"not_run\"") &&
                has(p0, "not run (stopped at the data stage)"),
            "the first page names the failing checks (data/label_range, data/input_stats), model and training not run");
    L.check(count(p1, "<article class=\"finding\"") == r.findings().size() && has(p1, "data-chart=\"lr_range\"") &&
                has(p1, "data-chart=\"activations\"") && has(p1, "data-chart=\"grad_norms\""),
            "the last page holds every finding and the three charts: LR range test, activations, gradient norms");
  });
}
