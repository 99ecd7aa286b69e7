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
// Two looks doctor does not take for you: a batch after the augmentation the training adds
// (printed, its statistics checked, and trained through to check it keeps each digit's meaning),
// and the model's output shape and last layer (a wrong class count, an extra softmax).

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
  bool aug_hflip = false;        // --bug aug_hflip: the augmentation also flips digits left-right
  bool aug_unnormalized = false; // --bug aug_unnormalized: the augmentation pipeline forgets normalize
  bool logits_11 = false;        // --bug logits_11: the fixed model keeps max(label) + 1 = 11 outputs
  bool softmax_tail = false;     // an extra layer: softmax after the last Linear (section 4d plants it)
  int64_t extra_outputs = 0;     // a wrong output size: classes + 1 (section 4d plants it)
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
  return {x, y, gl::amax(y).item<int64_t>() + 1 + b.extra_outputs};
}

// The intended model: 64 -> 128 -> 128 -> 10, ReLU between.
struct NetImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  bool skip_fc2, softmax_tail;
  NetImpl(int64_t classes, bool skip, bool unregistered = false, bool softmax = false)
      : skip_fc2(skip), softmax_tail(softmax) {
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = unregistered ? nn::Linear(128, 128) : register_module("fc2", nn::Linear(128, 128));
    fc3 = register_module("fc3", nn::Linear(128, classes));
  }
  gl::Tensor forward(const gl::Tensor& x) {
    gl::Tensor h = gl::relu(fc1(x));
    if (!skip_fc2) h = gl::relu(fc2(h));  // the bug: this line was lost in a refactor
    h = fc3(h);
    return softmax_tail ? gl::softmax(h, 1) : h;  // an extra layer after the last Linear (4d)
  }
};
GRADLAB_MODULE(Net);

Net make_net(const TrainData& d, const Bugs& b) {
  gl::manual_seed(1);
  return Net(d.num_classes, b.layer_left_out, b.fc2_unregistered, b.softmax_tail);
}

gl::data::Transform augmentation(const Bugs& b);

// The script's model after 10 epochs of SGD (batches of 64, shuffled, seeded); with `augmented`,
// the raw training images go through augmentation(b) instead (a new draw every epoch).
Net train_script(const Bugs& b, bool augmented = false) {
  const TrainData d = read_training_data(b);
  Net net = make_net(d, b);
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(b.lr));
  nn::CrossEntropyLoss criterion;
  std::shared_ptr<gl::data::Dataset> ds = std::make_shared<gl::data::TensorDataset>(d.x, d.y);
  if (augmented)
    ds = gl::data::map(std::make_shared<gl::data::TensorDataset>(raw().train.data().reshape({-1, 1, 8, 8}), d.y),
                       augmentation(b));
  gl::data::DataLoader loader(ds, gl::data::DataLoaderOptions(64).shuffle(true).seed(7));
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


// The augmentation the training adds: per-pixel normalize (before the shift: the edge pixels'
// near-zero std would blow up ink moved onto them), a random shift by up to one pixel, flatten.
// The planted switches add a left-right flip, or forget the normalize.
gl::data::Transform augmentation(const Bugs& b) {
  namespace T = gl::data::transforms;
  std::vector<gl::data::Transform> list;
  if (!b.aug_unnormalized) list.push_back(T::normalize(raw().mean.reshape({1, 8, 8}), raw().std.reshape({1, 8, 8})));
  list.push_back(T::random_shift(1));
  if (b.aug_hflip) list.push_back(T::lambda([](const gl::Tensor& x) {
    return x.index_select(-1, gl::tensor(std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1, 0}));
  }));
  list.push_back(T::flatten());
  return T::compose(list);
}

// The whole training split after the augmentation (sample i with its own stream: repeatable).
gl::Tensor augmented_train(const Bugs& b) {
  auto base = std::make_shared<gl::data::TensorDataset>(raw().train.data().reshape({-1, 1, 8, 8}),
                                                        raw().train.targets());
  auto aug = gl::data::map(base, augmentation(b));
  gl::TensorList xs;
  for (size_t i = 0; i < base->size(); ++i) xs.push_back(aug->get(i).data);
  return gl::stack(xs);
}

// Digits as text, side by side: '#' a standardized pixel above 1, '+' above 0.3, else blank.
void print_digits(const gl::Tensor& x, const gl::Tensor& y, int64_t n) {
  const std::vector<float> v = x.narrow(0, 0, n).contiguous().to_vector<float>();
  const std::vector<int64_t> lab = y.narrow(0, 0, n).to_vector<int64_t>();
  std::cout << " ";
  for (int64_t k = 0; k < n; ++k) std::cout << "label " << lab[k] << "   ";
  std::cout << "\n";
  for (int r = 0; r < 8; ++r) {
    std::cout << " ";
    for (int64_t k = 0; k < n; ++k) {
      for (int c = 0; c < 8; ++c) {
        const float p = v[k * 64 + r * 8 + c];
        std::cout << (p > 1 ? '#' : p > 0.3f ? '+' : ' ');
      }
      std::cout << "   ";
    }
    std::cout << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L("15", "debugging order", argc, argv,
                   {{"labels_shuffled", "the label bug is a separate shuffle of the labels, not a shift by one",
                     "the below-chance accuracies are systematic"},
                    {"fc2_unregistered", "the refactor that dropped fc2 from forward also dropped its register_module",
                     "the missing layer costs no accuracy"},
                    {"lr_fix_skipped", "the last fix is forgotten: the LR stays 10",
                     "with every bug fixed the run learns"},
                    {"aug_hflip", "the augmentation also flips every digit left-right",
                     "the augmentation keeps each digit's meaning"},
                    {"aug_unnormalized", "the augmentation pipeline forgets the normalize step",
                     "the augmented batch is standardized"},
                    {"logits_11", "the shipped model keeps the 11 outputs that max(label) + 1 gave",
                     "the model's output is [64, 10]"}});
  return L.run([&] {
    Bugs bugs;
    bugs.labels_shuffled = L.bug("labels_shuffled");
    bugs.fc2_unregistered = L.bug("fc2_unregistered");
    bugs.lr_fix_skipped = L.bug("lr_fix_skipped");
    bugs.aug_hflip = L.bug("aug_hflip");
    bugs.aug_unnormalized = L.bug("aug_unnormalized");
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
    Net fixed_net = train_script(fixed);  // = the last fix's run (unless a flag skipped it)
    const double acc_fixed = agreement(predict(fixed_net, fixed), raw().test.targets());
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
    L.section("4c. Look at the data the model sees: a batch after the augmentation");
    L.say("The training adds an augmentation: normalize, shift by up to one pixel, flatten. Look at what comes out");
    L.say("('#' a standardized pixel > 1, '+' > 0.3), not at the files on disk:");
    const gl::Tensor xa = augmented_train(fixed);
    const gl::Tensor xc = normalize(raw().train.data()), ytr = raw().train.targets();
    print_digits(xa, ytr, 6);
    const double moved = gl::mean((gl::amax(gl::abs(xa - xc), {1}) > 0.0).to(gl::kFloat64)).item<double>();
    const double a_mean = gl::mean(xa).item<double>(), a_std = gl::std(xa, gl::Dims{}, 0).item<double>();
    std::cout << "the augmented training set: " << fmt(100 * moved, 3) << "% of the images moved; pixel mean "
              << fmt(a_mean, 2) << ", std " << fmt(a_std, 2) << "\n";
    L.check(std::abs(a_mean) < 0.2 && std::abs(a_std - 1) < 0.25,
            "the augmented batch is standardized: pixel mean within 0.2 of 0, std within 0.25 of 1");
    // Does it keep the label's meaning? Train through it and read the clean test digits: an
    // augmentation that changes what a digit is teaches the model the wrong picture of it.
    Bugs flipped = fixed;
    flipped.aug_hflip = true;
    const Net aug_net = train_script(fixed, true), flip_net = train_script(flipped, true);
    Net an = aug_net, fn = flip_net;
    const double acc_aug = agreement(predict(an, fixed), raw().test.targets());
    const double acc_flip = agreement(predict(fn, fixed), raw().test.targets());
    std::cout << "trained 10 epochs through the augmentation: test accuracy " << fmt(100 * acc_aug, 3)
              << "% (without it: " << fmt(100 * acc_fixed, 3) << "%)\n"
              << "trained through it with a left-right flip added: test accuracy " << fmt(100 * acc_flip, 3)
              << "%\n";
    L.check(moved > 0.5 && acc_aug >= 0.8,
            "the augmentation keeps each digit's meaning: it moves most images, and a model trained only on "
            "augmented images reads the clean test digits (>= 80%)");
    L.check(acc_flip < 0.6,
            "a left-right flip does not keep it (a mirrored 3 is no digit): trained through it, the model reads "
            "fewer than 60% of the test digits");

    // -------------------------------------------------------------------------------------------
    L.section("4d. The output shape, and an extra layer after the last Linear");
    const gl::Tensor xb = xc.narrow(0, 0, 64);
    Bugs wide = fixed;
    wide.extra_outputs = 1;  // what max(label) + 1 gave while the labels were shifted
    Net wide_net = train_script(wide);
    Net& shipped = L.bug("logits_11") ? wide_net : fixed_net;
    gl::Tensor logits;
    {
      gl::NoGradGuard no_grad;
      logits = shipped(xb);
    }
    const dg::Finding shape_ok = dg::check_output_shape(shipped, xb, {64, 10});
    const dg::Finding shape_wide = dg::check_output_shape(wide_net, xb, {64, 10});
    std::cout << "output of a batch of 64: " << logits.sizes() << "\n"
              << "  a model with max(label) + 1 = 11 outputs: " << shape_wide.evidence << "\n";
    L.check(logits.sizes() == gl::Shape{64, 10} && !shape_ok.failed() && shape_wide.failed(),
            "the model's output is [64, 10], what CrossEntropyLoss needs for 10 classes; check_output_shape "
            "catches the 11-output model");
    const double acc_wide = agreement(predict(wide_net, wide), raw().test.targets());
    std::cout << "  its cost: test accuracy " << fmt(100 * acc_wide, 3) << "% vs " << fmt(100 * acc_fixed, 3)
              << "%: an 11th class that never appears only gets pushed down\n";
    L.check(std::abs(acc_wide - acc_fixed) < 0.03,
            "a wrong output size is silent: within 3 points of the fixed run, only a shape check finds it");
    Bugs soft = fixed;
    soft.softmax_tail = true;
    const double acc_soft = train_and_test(soft);
    const dg::Report soft_report = run_doctor(soft);
    print_failures(soft_report);
    std::cout << "  softmax after fc3: test accuracy " << fmt(100 * acc_soft, 3) << "% vs " << fmt(100 * acc_fixed, 3)
              << "%; doctor stops at " << stage_of(soft_report) << "\n";
    L.check(stage_of(soft_report) == "model" && failed(soft_report, "loss_pairing") && acc_soft < acc_fixed - 0.1,
            "an extra softmax after the last Linear costs more than 10 points, and doctor's model/loss_pairing "
            "names it (CrossEntropyLoss applies log_softmax itself)");

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
