// Lesson 10: checkpoint and resume.
//
// A run interrupted mid-epoch and resumed from a checkpoint must continue as if nothing had
// happened: same batches, same augmentations, same dropout masks, same optimizer moments, so the
// final weights are bit-identical to an uninterrupted run. That takes everything: model,
// optimizer (Adam's moments and step count), scheduler, epoch and step, the DataLoader's seed and
// position, and the global generator's state (Dropout draws from it). Then leave out one piece at
// a time and watch the runs part ways. Last, how checkpoints are written so a crash cannot
// destroy the previous one.
//
// (The test ResumeFromCheckpoint.NewProcessEqualsUninterruptedRun does the same with the
// resumed half in a separate process.)

#include <cmath>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/lesson.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;

namespace {

constexpr int64_t kTotal = 69;  // 3 epochs of 23 batches
constexpr int64_t kCut = 30;    // interrupted in the middle of epoch 1

// Everything a run is made of, built from scratch (as a new process would).
struct Run {
  nn::Sequential model{nullptr};
  std::unique_ptr<gl::optim::Adam> optimizer;
  std::unique_ptr<gl::optim::StepLR> scheduler;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;
  std::vector<double> losses;  // one per step

  Run(const data::DigitsSplit& digits, uint64_t seed) {
    gl::manual_seed(seed);  // the model's initialization and Dropout's stream
    model = nn::Sequential(nn::Flatten(), nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.2),
                           nn::Linear(128, 10));
    optimizer =
        std::make_unique<gl::optim::Adam>(model->parameters(), gl::optim::AdamOptions(2e-3));
    scheduler = std::make_unique<gl::optim::StepLR>(*optimizer, /*step_size=*/1, /*gamma=*/0.7);
    auto ds =
        data::map(std::make_shared<data::TensorDataset>(digits.train),
                  tf::compose({tf::normalize(digits.mean, digits.std), tf::random_noise(0.1)}));
    loader = std::make_unique<data::DataLoader>(
        ds, data::DataLoaderOptions(64).shuffle(true).num_workers(2).seed(seed));
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
        if (++step % 23 == 0) scheduler->step();  // once per epoch: lr x 0.7
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
    c.metadata["note"] = "lesson 10";
    return c;
  }

  // What to restore; leaving something out shows why it is needed.
  struct Restore {
    bool optimizer = true, loader = true, rng = true;
  };
  void resume(const io::Checkpoint& c, Restore what) {
    model->load_state_dict(c.model);
    if (what.optimizer) {
      optimizer->load_state_dict(c.optimizer);
      scheduler->load_state_dict(c.scheduler);
    }
    if (what.loader) loader->load_state(*c.loader);
    if (what.rng) c.restore_rng();
    step = c.step;
  }
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

}  // namespace

int main() {
  lesson::Lesson L("10", "checkpoint and resume");
  return L.run([&] {
    const auto dir = lesson::output_dir() / "checkpoints";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    // [N, 1, 8, 8] images, raw: each Run normalizes them (sample std) before its augmentation
    data::DigitsSplitOptions o;
    o.flatten = false;
    o.standardize = false;
    o.correction = 1;
    o.eps = 0;
    const data::DigitsSplit digits = data::load_digits_split(o);

    // ---------------------------------------------------------------------------------------
    L.section("1. the reference: 69 steps without interruption");
    Run full(digits, 42);
    full.train_until(kTotal);
    std::cout << "loss at step 1: " << full.losses.front() << ", step 69: " << full.losses.back()
              << "; lr now " << full.optimizer->param_groups()[0].options().get_lr() << "\n";

    // ---------------------------------------------------------------------------------------
    L.section("2. interrupted at step 30, checkpointed, resumed in fresh objects");
    const auto ckpt_path = dir / "step30.safetensors";
    {
      Run first(digits, 42);
      first.train_until(kCut);
      io::Checkpoint c = first.checkpoint();
      io::save_checkpoint(c, ckpt_path);
      std::cout << "checkpoint at step " << c.step << ": epoch " << c.epoch << ", loader position "
                << c.loader->position << " of " << first.loader->size() << ", " << c.model.size()
                << " model tensors, " << c.optimizer.size() << " optimizer tensors ("
                << std::filesystem::file_size(ckpt_path) << " bytes)\n";
    }                          // the first run is gone, as after a crash
    Run resumed(digits, 999);  // another seed: nothing may come from the constructor
    io::Checkpoint loaded = io::load_checkpoint(ckpt_path);
    resumed.resume(loaded, {});
    resumed.train_until(kTotal);
    std::vector<double> curve(full.losses.begin() + kCut, full.losses.end());
    L.check(resumed.losses == curve,
            "steps 31..69 of the resumed run have exactly the reference's losses");
    L.check(same_weights(full.model, resumed.model),
            "and its final weights are bit-identical to the reference's");
    L.check(gl::equal(full.optimizer->state_dict().at("state.0.exp_avg"),
                      resumed.optimizer->state_dict().at("state.0.exp_avg")),
            "so are Adam's moments");

    // ---------------------------------------------------------------------------------------
    L.section("3. resume without the optimizer state");
    Run no_opt(digits, 999);
    no_opt.resume(loaded, {.optimizer = false});
    no_opt.train_until(kTotal);
    std::cout << " step   reference   no optimizer state\n";
    for (int64_t s : {31, 32, 33, 35, 40, 50, 69})
      std::cout << std::setw(5) << s << std::fixed << std::setprecision(4) << std::setw(12)
                << full.losses[static_cast<size_t>(s - 1)] << std::setw(14)
                << no_opt.losses[static_cast<size_t>(s - 1 - kCut)] << "\n";
    std::cout.unsetf(std::ios::fixed);
    L.check(no_opt.losses[0] == curve[0],
            "step 31 sees the same weights and batch, so the same loss ...");
    L.check(no_opt.losses[1] != curve[1] && !same_weights(full.model, no_opt.model),
            "... but from step 32 the curves part: Adam restarted with zero moments at t = 1");
    std::cout << "largest weight difference at step 69: "
              << max_weight_diff(full.model, no_opt.model) << "\n";
    L.say(
        "A fresh Adam has m = v = 0 and bias correction 1/(1 - 0.9^1): its first steps are\n"
        "full-size moves in the sign of the gradient, not the small averaged steps the run\n"
        "was taking. The learning-rate schedule restarted too (StepLR is back at lr 2e-3).");

    // ---------------------------------------------------------------------------------------
    L.section("4. resume without the RNG state: reproducibility needs it");
    Run no_loader(digits, 999);
    no_loader.resume(loaded, {.loader = false});
    no_loader.train_until(kTotal);
    Run no_rng(digits, 999);
    no_rng.resume(loaded, {.rng = false});
    no_rng.train_until(kTotal);
    std::cout << "without the loader's seed and position: step 31 loss " << no_loader.losses[0]
              << " (reference " << curve[0]
              << ")\nwithout the global generator (Dropout's masks): step 31 loss "
              << no_rng.losses[0] << "\n";
    L.check(!same_weights(full.model, no_loader.model),
            "a loader with another seed, back at batch 0, feeds other batches: the run is not the "
            "same run");
    L.check(!same_weights(full.model, no_rng.model) && no_rng.losses[0] != curve[0],
            "Dropout drawing from an unrestored generator masks other units: different from step "
            "31 on");
    L.say(
        "Both runs still train fine; they are just not reproducible. For an exact resume the\n"
        "checkpoint holds every random stream in use: the loader's (seed, epoch, position) and\n"
        "default_generator().get_state(); per-sample augmentations derive from the loader seed.");

    // ---------------------------------------------------------------------------------------
    L.section("5. writing checkpoints safely, keeping the last K");
    io::CheckpointManager manager(dir / "run", "ckpt", /*keep_last=*/2);
    Run run(digits, 42);
    for (int64_t s = 10; s <= 40; s += 10) {
      run.train_until(s);
      manager.save(run.checkpoint());
    }
    std::cout << "files kept:";
    for (const auto& p : manager.list()) std::cout << " " << p.filename().string();
    std::cout << "\n";
    L.check(manager.list().size() == 2 && manager.load_latest()->step == 40,
            "keep_last=2 leaves the two newest checkpoints; load_latest() gives step 40");
    L.say(
        "Each save writes a temporary file in the same directory, fsyncs it, renames it over the\n"
        "target and fsyncs the directory: a crash at any moment leaves the old file or the new\n"
        "one, never half of each (the KillDuringSave test kills a saving process 200 times).");
    // A disk that flips one bit: the checksum catches it.
    const auto latest = manager.list().back();
    std::string bytes;
    {
      std::ifstream in(latest, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    bytes[bytes.size() - 100] = static_cast<char>(bytes[bytes.size() - 100] ^ 0x04);
    std::ofstream(latest, std::ios::binary | std::ios::trunc) << bytes;
    // safetensors: 8 bytes little-endian header length n, the JSON header, then the data at
    // byte 8 + n; the checksum covers the data, so the error points at where the data starts.
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i)
      header_len = (header_len << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    const std::string data_start = std::to_string(8 + header_len);
    std::string what;
    L.check_throws(
        [&] {
          try {
            io::load_checkpoint(latest);
          } catch (const std::exception& e) {
            what = e.what();
            throw;
          }
        },
        "checksum mismatch", "one flipped bit in the newest file is caught by the checksum");
    L.check(
        what.find("'" + latest.string() + "'") != std::string::npos &&
            what.find("(at byte offset " + data_start + ")") != std::string::npos,
        "the error names the file and the byte offset of its data section (" + data_start + ")");
    L.check(manager.load_latest()->step == 30,
            "and load_latest() falls back to the previous checkpoint");
  });
}
