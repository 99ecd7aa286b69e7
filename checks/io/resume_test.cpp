// Resume equality: N steps, checkpoint, a NEW process with freshly built objects loads it and
// trains M more: the weights (and Adam's moments) are bit-identical to N + M uninterrupted steps.
// Digits MLP, Adam, shuffled DataLoader with 2 workers and random augmentations, Dropout.

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gradlab/io/checkpoint.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

extern char** environ;

namespace gl = gradlab;
namespace io = gradlab::io;

namespace {

// Runs io_resume_helper with `args` in a new process; returns its exit status.
int helper(const std::vector<std::string>& args) {
  std::vector<std::string> all = {GRADLAB_RESUME_HELPER};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Tensors that differ between two dicts (empty when all are bit-identical).
std::vector<std::string> differing(const gl::StateDict& a, const gl::StateDict& b) {
  std::vector<std::string> out;
  EXPECT_EQ(a.keys(), b.keys());
  for (const auto& [k, t] : a)
    if (!b.contains(k) || !gl::equal(t, b.at(k))) out.push_back(k);
  return out;
}

std::string path(const std::string& name) { return io_test::temp_path(name).string(); }

}  // namespace

TEST(ResumeFromCheckpoint, NewProcessEqualsUninterruptedRun) {
  // 23 batches per epoch: the interruption is inside epoch 1 and the resumed part crosses into
  // epoch 2.
  ASSERT_EQ(helper({"full", "55", path("full.safetensors")}), 0);
  ASSERT_EQ(helper({"first", "30", path("first.safetensors")}), 0);
  ASSERT_EQ(helper({"resume", path("first.safetensors"), "25", path("resumed.safetensors")}), 0);
  io::Checkpoint full = io::load_checkpoint(path("full.safetensors"));
  io::Checkpoint resumed = io::load_checkpoint(path("resumed.safetensors"));
  EXPECT_EQ(full.step, 55);
  EXPECT_EQ(resumed.step, 55);
  EXPECT_EQ(differing(full.model, resumed.model), std::vector<std::string>{})
      << "model weights bit-identical";
  EXPECT_EQ(differing(full.optimizer, resumed.optimizer), std::vector<std::string>{})
      << "Adam state bit-identical";
  EXPECT_EQ(full.loader, resumed.loader);
  EXPECT_EQ(full.rng, resumed.rng);

  // The check can fail: leave out any one piece of state and the weights differ.
  for (const std::string drop : {"no-rng", "no-loader", "no-optimizer"}) {
    const std::string out = path("resumed-" + drop + ".safetensors");
    ASSERT_EQ(helper({"resume", path("first.safetensors"), "25", out, drop}), 0) << drop;
    EXPECT_FALSE(differing(full.model, io::load_checkpoint(out).model).empty())
        << "resuming without " << drop.substr(3) << " state still matched";
  }
}
