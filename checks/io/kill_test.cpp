// Crash safety: a child process saves checkpoints over one path in a loop and is killed with
// SIGKILL at random moments, many times. After every kill the file must load, verify, and be
// one whole checkpoint: the last one before the kill ("old") or a newer one ("new").

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/checkpoint.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
namespace fs = std::filesystem;

namespace {

// Version v: every tensor filled with v, step = v, a note with v: a mix of versions shows.
io::Checkpoint version(int64_t v) {
  io::Checkpoint c;
  c.model.insert("big", gl::full({512, 1024}, static_cast<double>(v)));  // 2 MiB
  c.model.insert("small", gl::full({7}, static_cast<double>(v), gl::dtype(gl::kFloat64)));
  c.optimizer.insert("state.0.step", gl::full({1}, v, gl::dtype(gl::kInt64)));
  c.step = v;
  c.metadata["version"] = std::to_string(v);
  return c;
}

int64_t check_whole(const io::Checkpoint& c) {
  const int64_t v = c.step;
  EXPECT_EQ(c.metadata.at("version"), std::to_string(v));
  EXPECT_EQ(c.optimizer.at("state.0.step").item<int64_t>(), v);
  EXPECT_TRUE(gl::equal(c.model.at("big"), gl::full({512, 1024}, static_cast<double>(v))));
  EXPECT_TRUE(gl::equal(c.model.at("small"),
                        gl::full({7}, static_cast<double>(v), gl::dtype(gl::kFloat64))));
  return v;
}

struct KillStats {
  int kills = 0, loads_ok = 0, old_file = 0, new_file = 0, mid_write = 0;
  int64_t last_version = 0;
};

KillStats run_kills(int kills, int max_delay_us, uint64_t seed) {
  const fs::path dir = io_test::temp_path("kill-" + std::to_string(seed));
  fs::create_directories(dir);
  const fs::path path = dir / "live.safetensors";
  io::save_checkpoint(version(0), path);
  KillStats s;
  std::mt19937_64 rng(seed);
  for (int k = 0; k < kills; ++k) {
    const int64_t start = s.last_version + 1;
    const pid_t child = ::fork();
    if (child == 0) {
      // Child: save newer and newer versions until killed.
      for (int64_t v = start;; ++v) io::save_checkpoint(version(v), path);
    }
    if (child < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    std::this_thread::sleep_for(
        std::chrono::microseconds(rng() % static_cast<uint64_t>(max_delay_us)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ++s.kills;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child died of the kill";
    // A temporary of the dead child means it was killed in the middle of a write.
    bool temp = false;
    for (const auto& e : fs::directory_iterator(dir))
      temp |= e.path().filename().string().find(".tmp-" + std::to_string(child) + "-") !=
              std::string::npos;
    s.mid_write += temp;
    EXPECT_EQ(io::remove_stale_temporaries(dir), temp ? 1u : 0u);
    try {
      const int64_t v = check_whole(io::load_checkpoint(path));
      ++s.loads_ok;
      EXPECT_GE(v, s.last_version) << "the file never goes back to an older checkpoint";
      (v == s.last_version ? s.old_file : s.new_file) += 1;
      s.last_version = v;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "after kill " << k << " the checkpoint does not load: " << e.what();
    }
  }
  fs::remove_all(dir);
  return s;
}

void report(const char* name, const KillStats& s) {
  std::cout << "[ kill-test ] " << name << ": " << s.kills << " kills, " << s.loads_ok
            << " loads verified, " << s.old_file << " old / " << s.new_file << " new checkpoint, "
            << s.mid_write << " kills in the middle of a write (temporary left), " << s.last_version
            << " checkpoints written in all\n";
  ::testing::Test::RecordProperty("kills", s.kills);
  ::testing::Test::RecordProperty("mid_write_kills", s.mid_write);
}

}  // namespace

TEST(KillDuringSave, EveryKillLeavesTheOldOrTheNewCheckpoint) {
  const KillStats s = run_kills(200, 30000, 1);
  report("200 kills", s);
  EXPECT_EQ(s.kills, 200);
  EXPECT_EQ(s.loads_ok, 200);
  EXPECT_GT(s.mid_write, 0) << "some kills landed inside a save (else the test shows nothing)";
  EXPECT_GT(s.new_file, 0) << "the child made progress between kills";
}

TEST(KillDuringSave, SlowManyKills) {
  const KillStats s = run_kills(1000, 20000, 2);
  report("1000 kills", s);
  EXPECT_EQ(s.loads_ok, 1000);
  EXPECT_GT(s.mid_write, 0);
}
