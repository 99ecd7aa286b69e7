// Checkpoints: every part round-trips; keep-last-K; crash leftovers; the newest intact
// checkpoint wins; crash-safe writes leave no temporaries behind.

#include "gradlab/io/checkpoint.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "gradlab/core/generator.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
namespace fs = std::filesystem;
using io_test::temp_path;

namespace {

io::Checkpoint sample(int64_t step) {
  io::Checkpoint c;
  c.model.insert("fc.weight", gl::randn({3, 2}));
  c.model.insert("bn.num_batches_tracked", gl::tensor({step}));
  c.model.metadata["arch"] = "mlp";
  c.optimizer.insert("state.0.exp_avg", gl::randn({3, 2}));
  c.optimizer.insert("state.0.step",
                     gl::tensor(static_cast<double>(step), gl::dtype(gl::kFloat64)));
  c.optimizer.insert("param_groups.0.lr", gl::tensor(1e-3, gl::dtype(gl::kFloat64)));
  c.scheduler.insert("last_epoch", gl::tensor({int64_t{2}}));
  c.epoch = 2;
  c.step = step;
  c.loader = gl::data::LoaderState{42, 2, 7};
  c.capture_rng();
  c.rng["dropout"] = gl::Generator(9).get_state();
  c.metadata["git"] = "abc123";
  c.metadata["note"] = "lr warmup done";
  return c;
}

void expect_same_dict(const gl::StateDict& a, const gl::StateDict& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [k, t] : a) EXPECT_TRUE(gl::equal(t, b.at(k))) << k;
  EXPECT_EQ(a.metadata, b.metadata);
}

}  // namespace

TEST(Checkpoint, EveryPartRoundTrips) {
  gl::manual_seed(5);
  io::Checkpoint c = sample(123);
  const auto path = temp_path("ckpt.safetensors");
  io::save_checkpoint(c, path);
  io::Checkpoint r = io::load_checkpoint(path);
  expect_same_dict(c.model, r.model);
  expect_same_dict(c.optimizer, r.optimizer);
  expect_same_dict(c.scheduler, r.scheduler);
  EXPECT_EQ(r.epoch, 2);
  EXPECT_EQ(r.step, 123);
  ASSERT_TRUE(r.loader.has_value());
  EXPECT_EQ(*r.loader, (gl::data::LoaderState{42, 2, 7}));
  EXPECT_EQ(r.rng, c.rng);
  EXPECT_EQ(r.metadata, c.metadata);
}

TEST(Checkpoint, RestoreRngContinuesTheStream) {
  gl::manual_seed(11);
  (void)gl::randn({4});
  io::Checkpoint c;
  c.capture_rng();
  const auto path = temp_path("rng.safetensors");
  io::save_checkpoint(c, path);
  gl::Tensor expected = gl::randn({8});
  gl::manual_seed(999);  // the stream moves on elsewhere
  io::load_checkpoint(path).restore_rng();
  EXPECT_TRUE(gl::equal(gl::randn({8}), expected));
  EXPECT_THROW(io::Checkpoint().restore_rng(), gl::ValueError);
}

TEST(Checkpoint, PlainStateDictIsNotACheckpointAndChecksumIsRequired) {
  gl::StateDict sd;
  sd.insert("w", gl::ones({2}));
  const auto path = temp_path("plain.safetensors");
  io::save_safetensors(sd, path);
  try {
    io::load_checkpoint(path);
    FAIL();
  } catch (const io::CorruptFileError& e) {
    EXPECT_NE(std::string(e.what()).find("not a gradlab checkpoint"), std::string::npos)
        << e.what();
  }
  io_test::write_bytes(path, io::to_safetensors_bytes(sd, /*checksum=*/false));
  EXPECT_THROW(io::load_checkpoint(path), io::CorruptFileError);
}

TEST(Checkpoint, ManagerKeepsTheLastKAndLoadsTheNewestIntactOne) {
  const fs::path dir = temp_path("managed");
  io::CheckpointManager m(dir, "run", 3);
  for (int64_t step : {10, 20, 30, 40, 50}) m.save(sample(step));
  auto files = m.list();
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].filename(), "run-0000000030.safetensors");
  EXPECT_EQ(files[2].filename(), "run-0000000050.safetensors");
  EXPECT_EQ(m.load_latest()->step, 50);

  // The newest file damaged (e.g. by a disk): the one before it is used.
  std::string bytes = io_test::read_bytes(files[2]);
  bytes[bytes.size() / 2] ^= 0x10;
  io_test::write_bytes(files[2], bytes);
  EXPECT_EQ(m.load_latest()->step, 40);
  // All damaged: an error that lists every file.
  for (const auto& f : files) io_test::write_bytes(f, "garbage");
  try {
    (void)m.load_latest();
    FAIL();
  } catch (const gl::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("run-0000000030"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(io::CheckpointManager(temp_path("empty-dir")).load_latest().has_value());
}

TEST(Checkpoint, StaleTemporariesOfDeadProcessesAreRemoved) {
  const fs::path dir = temp_path("stale");
  io::CheckpointManager m(dir, "ckpt", 0);
  // A temporary as a killed process (pid 999999999 does not exist) would leave it, and one of
  // this live process.
  io_test::write_bytes(dir / ".ckpt-0000000001.safetensors.tmp-999999999-0", "half");
  io_test::write_bytes(
      dir / (".ckpt-0000000001.safetensors.tmp-" + std::to_string(::getpid()) + "-77"), "mine");
  io_test::write_bytes(dir / ".other.tmp-999999999-0", "not ours");
  m.save(sample(1));
  EXPECT_FALSE(fs::exists(dir / ".ckpt-0000000001.safetensors.tmp-999999999-0"));
  EXPECT_TRUE(
      fs::exists(dir / (".ckpt-0000000001.safetensors.tmp-" + std::to_string(::getpid()) + "-77")));
  EXPECT_TRUE(fs::exists(dir / ".other.tmp-999999999-0"));
}

TEST(AtomicFile, FailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path dir = temp_path("atomic");
  fs::create_directories(dir);
  const fs::path path = dir / "data.bin";
  io::write_file_atomic(path, [](io::FileWriter& w) { w.write("old", 3); });
  EXPECT_THROW(io::write_file_atomic(path,
                                     [](io::FileWriter& w) {
                                       w.write("new-but-", 8);
                                       throw std::runtime_error("serializer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(io_test::read_bytes(path), "old");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += (void(e), 1);
  EXPECT_EQ(files, 1u) << "the temporary was removed";
  EXPECT_THROW(io::write_file_atomic(temp_path("no-such-dir") / "x.bin", [](io::FileWriter&) {}),
               gl::IOError);
}
