// TFRecord framing and CRC32C: known vectors, the frame layout, truncated and corrupt files, and
// a writer killed by SIGKILL while it appends (every complete record stays readable).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iterator>
#include <string>
#include <thread>

#include "train/event_decode.hpp"
#include "train/train_test_util.hpp"

namespace gradlab {
namespace {

namespace fs = std::filesystem;
using testing_train::fresh_dir;
using testing_train::slurp;
using testing_train::decode_scalar_event;

fs::path only_event_file(const fs::path& dir) {
  fs::path found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().starts_with("events.out.tfevents."))
      found = e.path();
  return found;
}

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 and the classic check value of CRC-32C.
  EXPECT_EQ(train::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(train::crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(train::crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) up.push_back(static_cast<char>(i)), down.push_back(static_cast<char>(31 - i));
  EXPECT_EQ(train::crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(train::crc32c(down), 0x113FDB5Cu);
  EXPECT_EQ(train::crc32c(""), 0u);
  // continuing a checksum equals checksumming the concatenation
  EXPECT_EQ(train::crc32c("6789", 4, train::crc32c("12345")), 0xE3069283u);
}

TEST(Crc32c, MaskIsTheTFRecordRotation) {
  const uint32_t c = train::crc32c("123456789");
  EXPECT_EQ(train::masked_crc32c("123456789"), ((c >> 15) | (c << 17)) + 0xa282ead8u);
  EXPECT_NE(train::masked_crc32c("123456789"), c);
}

TEST(TFRecord, FrameLayout) {
  const std::string payload = "hello";
  const std::string rec = train::tfrecord_frame(payload);
  ASSERT_EQ(rec.size(), 8 + 4 + payload.size() + 4);
  EXPECT_EQ(rec.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));  // little-endian length
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(rec[at + i])) << (8 * i);
    return v;
  };
  EXPECT_EQ(u32(8), train::masked_crc32c(rec.substr(0, 8)));
  EXPECT_EQ(rec.substr(12, 5), payload);
  EXPECT_EQ(u32(17), train::masked_crc32c(payload));
}

TEST(TFRecord, EveryCutOfTheLastRecordKeepsTheCompleteOnes) {
  const fs::path dir = fresh_dir("cut");
  std::string path;
  {
    train::SummaryWriter w(dir.string());
    for (int s = 0; s < 4; ++s) w.add_scalar("loss", 1.0 / (s + 1), s, 100.0 + s);
    path = w.file_path();
  }
  const std::string full = slurp(path);
  const auto all = train::read_tfrecords(path);
  ASSERT_EQ(all.records.size(), 5u);  // the version header + 4 scalars
  EXPECT_FALSE(all.truncated_tail || all.corrupt) << all.problem;
  const size_t last_start = full.size() - train::tfrecord_frame(all.records.back()).size();
  // a killed writer leaves the file cut at any byte of the last record
  for (size_t cut = last_start; cut < full.size(); ++cut) {
    const fs::path p = dir / "cut.tfevents";
    std::ofstream(p, std::ios::binary) << full.substr(0, cut);
    const auto scan = train::read_tfrecords(p.string());
    ASSERT_EQ(scan.records.size(), 4u) << "cut at " << cut;
    EXPECT_EQ(scan.truncated_tail, cut != last_start) << "cut at " << cut;
    EXPECT_FALSE(scan.corrupt);
    EXPECT_EQ(scan.valid_bytes, last_start);
    EXPECT_EQ(decode_scalar_event(scan.records[3]).step, 2);
  }
  // one flipped payload bit is caught by the CRC, and reading stops there
  std::string bad = full;
  bad[last_start - 6] ^= 0x01;
  const fs::path p = dir / "bad.tfevents";
  std::ofstream(p, std::ios::binary) << bad;
  const auto scan = train::read_tfrecords(p.string());
  EXPECT_TRUE(scan.corrupt);
  EXPECT_EQ(scan.records.size(), 3u);
  EXPECT_NE(scan.problem.find("bad data CRC"), std::string::npos) << scan.problem;
  EXPECT_THROW(train::read_tfrecords((dir / "missing").string()), IOError);
  fs::remove_all(dir);
}

TEST(TFRecord, AWriterKilledWhileAppendingLeavesEveryCompleteRecord) {
  const fs::path dir = fresh_dir("killed");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the writer: appends as fast as it can until it is killed
    try {
      train::SummaryWriter w(dir.string());
      for (int64_t s = 0;; ++s) w.add_scalar("loss", std::exp(-1e-4 * static_cast<double>(s)), s);
    } catch (...) {
    }
    ::_exit(3);
  }
  // wait until the file has some records, then SIGKILL (no destructor, no flush, no close)
  fs::path file;
  for (int i = 0; i < 400 && (file.empty() || fs::file_size(file) < 20000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (file.empty()) file = only_event_file(dir);
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_FALSE(file.empty());
  const auto scan = train::read_tfrecords(file.string());
  EXPECT_FALSE(scan.corrupt) << scan.problem;
  ASSERT_GT(scan.records.size(), 100u);
  // every record after the header is the next step, in order, with its value
  for (size_t i = 1; i < scan.records.size(); ++i) {
    const auto e = decode_scalar_event(scan.records[i]);
    ASSERT_EQ(e.step, static_cast<int64_t>(i - 1));
    ASSERT_EQ(e.value, static_cast<float>(std::exp(-1e-4 * static_cast<double>(i - 1))));
  }
  std::cout << "killed writer: " << scan.records.size() - 1 << " complete scalar records, "
            << scan.file_bytes - scan.valid_bytes << " bytes of a partial tail\n";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradlab
