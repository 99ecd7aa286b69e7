// Crash safety: a child process saves checkpoints over one path in a loop and is killed with
// SIGKILL at random moments, many times. After every kill the file must load, verify, and be
// one whole checkpoint: the last one before the kill ("old") or a newer one ("new").

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

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
  double save_us = 0;    // the measured time of one save
  double spread_us = 0;  // kills land uniformly in [0, spread] after the fork (at the end)
};

// The median time of one save here, in microseconds: a sanitized build or a loaded machine is
// ten times slower or more, so the kill times are derived from it, not fixed.
double measure_save_us(const fs::path& path) {
  std::vector<double> us;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    io::save_checkpoint(version(0), path);
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[2];
}

// Kills a saving child `kills` times at random moments in [0, 3 T] after the fork (T: one
// save's measured time), so that kills land inside writes and between them. When ten kills in a
// row find no newer checkpoint (the machine got slower), the spread doubles.
KillStats run_kills(int kills, uint64_t seed) {
  const fs::path dir = io_test::temp_path("kill-" + std::to_string(seed));
  fs::create_directories(dir);
  const fs::path path = dir / "live.safetensors";
  KillStats s;
  s.save_us = measure_save_us(path);
  s.spread_us = 3 * s.save_us;
  int stuck = 0;
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
    std::this_thread::sleep_for(std::chrono::microseconds(
        static_cast<int64_t>(std::uniform_real_distribution<double>(0, s.spread_us)(rng))));
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
      stuck = v == s.last_version ? stuck + 1 : 0;
      if (stuck >= 10) s.spread_us *= 2, stuck = 0;
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
            << " checkpoints written in all; one save " << s.save_us / 1000 << " ms, kills within "
            << s.spread_us / 1000 << " ms of the fork\n";
  ::testing::Test::RecordProperty("kills", s.kills);
  ::testing::Test::RecordProperty("mid_write_kills", s.mid_write);
}

}  // namespace

TEST(KillDuringSave, EveryKillLeavesTheOldOrTheNewCheckpoint) {
  const KillStats s = run_kills(200, 1);
  report("200 kills", s);
  EXPECT_EQ(s.kills, 200);
  EXPECT_EQ(s.loads_ok, 200);
  EXPECT_GT(s.mid_write, 0) << "some kills landed inside a save (else the test shows nothing)";
  EXPECT_GT(s.new_file, 0) << "the child made progress between kills";
}

TEST(KillDuringSave, SlowManyKills) {
  const KillStats s = run_kills(1000, 2);
  report("1000 kills", s);
  EXPECT_EQ(s.loads_ok, 1000);
  EXPECT_GT(s.mid_write, 0);
}

// ---- file hygiene: direct saves clean up after dead writers of the same file ----------------

namespace {

// Temporaries of `target` in its directory (".<name>.tmp-<pid>-<n>").
int count_temporaries(const fs::path& target) {
  int n = 0;
  std::string prefix(".");  // NOTE: not "." + string&&: GCC 12 warns falsely (-Wrestrict)
  prefix += target.filename().string();
  prefix += ".tmp-";
  for (const auto& e : fs::directory_iterator(target.parent_path()))
    n += e.path().filename().string().starts_with(prefix);
  return n;
}

pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

// 60 writers killed while saving with io::save_checkpoint (no CheckpointManager, nobody calls
// remove_stale_temporaries): each new writer's first save removes what the dead ones left for
// the same file, so the temporaries do not pile up (before: 27 files of 4 MB after 60 kills).
TEST(KillDuringSave, KilledDirectSavesLeaveNoPileOfTemporaries) {
  const fs::path dir = io_test::temp_path("hygiene");
  fs::create_directories(dir);
  const fs::path path = dir / "direct.safetensors";
  const double spread_us = 3 * measure_save_us(path);
  std::mt19937_64 rng(3);
  int most = 0, left_behind = 0;
  for (int k = 0; k < 60; ++k) {
    const pid_t child = ::fork();
    if (child == 0)
      for (int64_t v = 1;; ++v) io::save_checkpoint(version(v), path);
    ASSERT_GT(child, 0) << "fork failed";
    std::this_thread::sleep_for(std::chrono::microseconds(
        static_cast<int64_t>(std::uniform_real_distribution<double>(0, spread_us)(rng))));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    const int n = count_temporaries(path);
    most = std::max(most, n);
    for (const auto& e : fs::directory_iterator(dir))
      left_behind += e.path().filename().string().find(".tmp-" + std::to_string(child) + "-") !=
                     std::string::npos;
  }
  std::cout << "[ hygiene ] 60 kills: " << left_behind << " left a temporary, at most " << most
            << " temporaries at once\n";
  EXPECT_GT(left_behind, 0) << "some kills landed inside a save (else the test shows nothing)";
  // A writer killed before its own cleanup ran leaves the previous one's file for the next.
  EXPECT_LE(most, 3);
  io::save_checkpoint(version(1), path);
  EXPECT_EQ(count_temporaries(path), 0);
  check_whole(io::load_checkpoint(path));
  fs::remove_all(dir);
}

// Only dead writers' temporaries of the same file go: not a live process's, not one whose pid is
// gone but whose lock is held (a writer in another pid namespace), not another file's.
TEST(AtomicFile, SaveKeepsTheTemporariesOfLiveWritersAndOtherFiles) {
  const fs::path dir = io_test::temp_path("hygiene-live");
  fs::create_directories(dir);
  const fs::path path = dir / "w.safetensors";
  const std::string pre = ".w.safetensors.tmp-";
  const pid_t live = ::fork();
  if (live == 0) {
    ::pause();
    ::_exit(0);
  }
  const fs::path dead = dir / (pre + std::to_string(dead_pid()) + "-0");
  const fs::path of_live = dir / (pre + std::to_string(live) + "-0");
  const fs::path locked = dir / (pre + std::to_string(dead_pid()) + "-1");
  const fs::path other_file = dir / (".w.safetensors2.tmp-" + std::to_string(dead_pid()) + "-0");
  const fs::path not_a_temp = dir / (pre + std::to_string(dead_pid()) + "-0-x");
  for (const fs::path& p : {dead, of_live, locked, other_file, not_a_temp})
    io_test::write_bytes(p, "half a file");
  const int fd = ::open(locked.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  io::save_checkpoint(version(2), path);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(of_live));
  EXPECT_TRUE(fs::exists(locked));
  EXPECT_TRUE(fs::exists(other_file));
  EXPECT_TRUE(fs::exists(not_a_temp));
  ::close(fd);  // the lock is gone: the next save removes it
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  gl::io::save_safetensors(gl::StateDict(), path);
  EXPECT_FALSE(fs::exists(locked));
  EXPECT_FALSE(fs::exists(of_live));
  EXPECT_TRUE(fs::exists(other_file));
  fs::remove_all(dir);
}
