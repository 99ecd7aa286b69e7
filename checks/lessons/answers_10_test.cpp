// Answers to the exercises of lesson 10 (checkpoint and resume), each claim checked.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kTotal = 69;
constexpr int64_t kCut = 30;

const data::DigitsSplit& digits() {
  static const data::DigitsSplit d = [] {
    data::DigitsSplitOptions o;
    o.flatten = false;
    o.standardize = false;
    o.correction = 1;
    o.eps = 0;
    return data::load_digits_split(o);
  }();
  return d;
}

// The lesson's Run, with an optional own generator for Dropout and a worker count.
struct TrainRun {
  nn::Sequential model{nullptr};
  std::unique_ptr<gl::optim::Adam> optimizer;
  std::unique_ptr<gl::optim::StepLR> scheduler;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;
  std::vector<double> losses;

  TrainRun(uint64_t seed, gl::Generator* dropout_gen = nullptr, int64_t workers = 2) {
    const data::DigitsSplit& d = digits();
    gl::manual_seed(seed);
    model = nn::Sequential(nn::Flatten(), nn::Linear(64, 128), nn::ReLU(),
                           nn::Dropout(nn::DropoutOptions(0.2).generator(dropout_gen)),
                           nn::Linear(128, 10));
    optimizer =
        std::make_unique<gl::optim::Adam>(model->parameters(), gl::optim::AdamOptions(2e-3));
    scheduler = std::make_unique<gl::optim::StepLR>(*optimizer, 1, 0.7);
    auto ds = data::map(std::make_shared<data::TensorDataset>(d.train),
                        tf::compose({tf::normalize(d.mean, d.std), tf::random_noise(0.1)}));
    loader = std::make_unique<data::DataLoader>(
        ds, data::DataLoaderOptions(64).shuffle(true).num_workers(workers).seed(seed));
  }

  void train_until(int64_t target) {
    model->train();
    while (step < target) {
      for (data::Batch& b : *loader) {
        optimizer->zero_grad();
        gl::Tensor loss = gl::nn::functional::cross_entropy(model->forward(b.data), b.target);
        loss.backward();
        optimizer->step();
        losses.push_back(loss.item<float>());
        if (++step % 23 == 0) scheduler->step();
        if (step == target) break;
      }
    }
  }

  io::Checkpoint checkpoint() const {
    io::Checkpoint c;
    c.model = model->state_dict();
    c.optimizer = optimizer->state_dict();
    c.scheduler = scheduler->state_dict();
    c.epoch = static_cast<int64_t>(loader->epoch());
    c.step = step;
    c.loader = loader->state();
    c.capture_rng();
    return c;
  }

  struct Restore {
    bool optimizer = true, scheduler = true, loader = true, rng = true;
  };
  void resume(const io::Checkpoint& c, Restore what) {
    model->load_state_dict(c.model);
    if (what.optimizer) optimizer->load_state_dict(c.optimizer);
    if (what.scheduler) scheduler->load_state_dict(c.scheduler);
    if (what.loader) loader->load_state(*c.loader);
    if (what.rng) c.restore_rng();
    step = c.step;
  }
  double lr() const { return optimizer->param_groups()[0].options().get_lr(); }
};

bool same_weights(const nn::Sequential& a, const nn::Sequential& b) {
  for (const auto& [k, t] : a->state_dict())
    if (!gl::equal(t, b->state_dict().at(k))) return false;
  return true;
}

double max_weight_diff(const nn::Sequential& a, const nn::Sequential& b) {
  double m = 0;
  for (const auto& [k, t] : a->state_dict())
    m = std::max(m, static_cast<double>((t - b->state_dict().at(k)).abs().max().item<float>()));
  return m;
}

// A checkpoint taken in memory at step `cut` of a run with seed 42 (the lesson's first half).
io::Checkpoint first_half(int64_t cut) {
  TrainRun first(42);
  first.train_until(cut);
  return first.checkpoint();
}

const TrainRun& reference() {
  static const TrainRun* r = [] {
    auto* run = new TrainRun(42);
    run->train_until(kTotal);
    return run;
  }();
  return *r;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradlab_answers_10_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(Lesson10Answers, Exercise1MostOfTheDivergenceIsAdamsMoments) {
  const TrainRun& ref = reference();
  const io::Checkpoint c = first_half(kCut);
  // (a) the lesson's section 3: a fresh Adam and a fresh StepLR.
  TrainRun neither(999);
  neither.resume(c, {.optimizer = false, .scheduler = false});
  EXPECT_DOUBLE_EQ(neither.lr(), 2e-3);
  neither.train_until(kTotal);
  // (b) the scheduler's state alone: its last_epoch comes back, but the lr lives in the
  // optimizer's param_groups, so it stays at the fresh 2e-3 until the next scheduler step.
  TrainRun sched_only(999);
  sched_only.resume(c, {.optimizer = false, .scheduler = true});
  EXPECT_DOUBLE_EQ(sched_only.lr(), 2e-3);
  sched_only.train_until(kTotal);
  // (c) scheduler state and the checkpoint's lr (2e-3 * 0.7): only Adam's moments are lost.
  TrainRun moments_lost(999);
  moments_lost.resume(c, {.optimizer = false, .scheduler = true});
  moments_lost.optimizer->param_groups()[0].options().set_lr(2e-3 * 0.7);
  moments_lost.train_until(kTotal);
  EXPECT_NEAR(moments_lost.lr(), ref.lr(), 1e-15);  // same schedule as the reference at the end
  const double d_a = max_weight_diff(ref.model, neither.model);
  const double d_b = max_weight_diff(ref.model, sched_only.model);
  const double d_c = max_weight_diff(ref.model, moments_lost.model);
  std::cout << "max weight diff at step 69: (a) fresh optimizer + scheduler " << d_a
            << ", (b) scheduler state kept " << d_b << ", (c) scheduler + lr kept " << d_c
            << "\n";
  EXPECT_EQ(moments_lost.losses[0], ref.losses[kCut]);  // step 31: same weights, same batch
  EXPECT_NE(moments_lost.losses[1], ref.losses[kCut + 1]);
  EXPECT_FALSE(same_weights(ref.model, moments_lost.model));
  EXPECT_TRUE(same_weights(neither.model, sched_only.model));  // (b) is exactly (a)
  EXPECT_GT(d_c, 0.5 * d_a);  // the right lr removes less than half of the divergence
}

TEST(Lesson10Answers, Exercise2CheckpointAtEpochEnd) {
  const TrainRun& ref = reference();  // the uninterrupted run
  TrainRun first(42);
  first.train_until(23);
  const io::Checkpoint c = first.checkpoint();
  std::cout << "step 23: epoch " << c.epoch << ", loader state epoch " << c.loader->epoch
            << ", position " << c.loader->position << " of " << first.loader->size() << "\n";
  EXPECT_EQ(c.epoch, 0);
  EXPECT_EQ(c.loader->epoch, 0u);
  EXPECT_EQ(c.loader->position, 23u);
  TrainRun resumed(999);
  resumed.resume(c, {});
  resumed.train_until(24);  // begin() sees position 23 of 23: epoch 1 starts, at its batch 0
  EXPECT_EQ(resumed.loader->state(), (data::LoaderState{42, 1, 1}));
  resumed.train_until(kTotal);
  EXPECT_EQ(resumed.losses, std::vector<double>(ref.losses.begin() + 23,
                                                ref.losses.end()));
  EXPECT_TRUE(same_weights(ref.model, resumed.model));
}

TEST(Lesson10Answers, Exercise3DropoutsOwnGeneratorMustBeCheckpointed) {
  gl::Generator g_full(5);
  TrainRun full(42, &g_full);
  full.train_until(kTotal);

  gl::Generator g_first(5);
  TrainRun first(42, &g_first);
  first.train_until(kCut);
  io::Checkpoint c = first.checkpoint();
  c.rng["dropout"] = g_first.get_state();
  const fs::path dir = scratch("ex3");
  io::save_checkpoint(c, dir / "c.safetensors");
  const io::Checkpoint back = io::load_checkpoint(dir / "c.safetensors");
  ASSERT_EQ(back.rng.count("dropout"), 1u);

  gl::Generator g_with(77), g_without(77);
  TrainRun with(999, &g_with), without(999, &g_without);
  with.resume(back, {});
  g_with.set_state(back.rng.at("dropout"));
  with.train_until(kTotal);
  without.resume(back, {});  // restores the default generator only
  without.train_until(kTotal);
  EXPECT_TRUE(same_weights(full.model, with.model));
  EXPECT_FALSE(same_weights(full.model, without.model));
}

TEST(Lesson10Answers, Exercise4NextSaveRemovesStaleTemporaries) {
  const fs::path dir = scratch("ex4");
  io::CheckpointManager manager(dir, "ckpt", /*keep_last=*/2);
  TrainRun run(42);
  run.train_until(10);
  manager.save(run.checkpoint());
  // What a process killed while writing step 20 leaves: a hidden temporary named after its pid.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // now a dead pid
  const fs::path stale =
      dir / (".ckpt-0000000020.safetensors.tmp-" + std::to_string(child) + "-0");
  std::ofstream(stale) << "half a checkpoint";
  EXPECT_EQ(manager.list().size(), 1u);  // the listing never sees it
  run.train_until(20);
  manager.save(run.checkpoint());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(manager.list().size(), 2u);
  EXPECT_EQ(manager.load_latest()->step, 20);
}

TEST(Lesson10Answers, Exercise5WorkerCountDoesNotChangeTheBatches) {
  const TrainRun& ref = reference();  // the uninterrupted run
  const io::Checkpoint c = first_half(kCut);
  TrainRun resumed(999, nullptr, /*workers=*/0);
  resumed.resume(c, {});
  resumed.train_until(kTotal);
  EXPECT_EQ(resumed.losses,
            std::vector<double>(ref.losses.begin() + kCut, ref.losses.end()));
  EXPECT_TRUE(same_weights(ref.model, resumed.model));
}
