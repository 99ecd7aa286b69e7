// SummaryWriter: file names, what each record holds (decoded by an independent decoder), the
// histogram buckets, add_scalars' sub-runs, and the errors. TensorBoard's own reader checks the
// same files in tensorboard_reader.py (ctest tensorboard_reader).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <gradlab/gradlab.hpp>
#include <limits>
#include <regex>
#include <string>

#include "train/event_decode.hpp"
#include "train/train_test_util.hpp"

namespace gradlab {
namespace {

namespace fs = std::filesystem;
using testing_train::fresh_dir;
using testing_train::slurp;
using testing_train::decode;
using testing_train::decode_scalar_event;
using testing_train::find;

TEST(SummaryWriter, FileNameAndVersionHeader) {
  const fs::path dir = fresh_dir("name");
  train::SummaryWriter a(dir.string()), b(dir.string());
  const std::string name = fs::path(a.file_path()).filename().string();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::regex re(R"(events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(name, m, re)) << name;
  EXPECT_EQ(m[2].str(), host);
  EXPECT_EQ(m[3].str(), std::to_string(::getpid()));
  EXPECT_NE(a.file_path(), b.file_path()) << "two writers in one second need two files";
  EXPECT_EQ(fs::path(a.file_path()).parent_path(), dir);
  const auto scan = train::read_tfrecords(a.file_path());
  ASSERT_EQ(scan.records.size(), 1u);
  const auto header = decode(scan.records[0]);
  EXPECT_EQ(find(header, 3)->bytes, "brain.Event:2");
  fs::remove_all(dir);
}

TEST(SummaryWriter, ScalarRecordsAreAppendedAtOnce) {
  const fs::path dir = fresh_dir("scalar");
  train::SummaryWriter w(dir.string());
  w.add_scalar("loss/train", 0.1, 7, 1234.5);
  // no flush, no close: the record is already in the file
  const auto scan = train::read_tfrecords(w.file_path());
  ASSERT_EQ(scan.records.size(), 2u);
  const auto e = decode_scalar_event(scan.records[1]);
  EXPECT_EQ(e.tag, "loss/train");
  EXPECT_EQ(e.step, 7);
  EXPECT_EQ(e.wall_time, 1234.5);
  EXPECT_EQ(e.value, 0.1f);  // float32, as TensorBoard stores it
  w.add_scalar("big_step", -2.0, int64_t{1} << 40, 1.0);
  EXPECT_EQ(decode_scalar_event(train::read_tfrecords(w.file_path()).records[2]).step,
            int64_t{1} << 40);
  fs::remove_all(dir);
}

TEST(SummaryWriter, AddScalarsWritesOneRunPerKey) {
  const fs::path dir = fresh_dir("scalars");
  train::SummaryWriter w(dir.string());
  w.add_scalars("loss/both", {{"train", 0.5}, {"val", 0.75}}, 3, 10.0);
  for (const auto& [key, v] : std::map<std::string, double>{{"train", 0.5}, {"val", 0.75}}) {
    const fs::path sub = dir / ("loss_both_" + key);
    ASSERT_TRUE(fs::is_directory(sub)) << sub;
    fs::path file;
    for (const auto& e : fs::directory_iterator(sub)) file = e.path();
    const auto scan = train::read_tfrecords(file.string());
    ASSERT_EQ(scan.records.size(), 2u);
    const auto e = decode_scalar_event(scan.records[1]);
    EXPECT_EQ(e.tag, "loss/both");
    EXPECT_EQ(e.value, static_cast<float>(v));
  }
  fs::remove_all(dir);
}

TEST(SummaryWriter, HistogramBuckets) {
  // values 0..9 in 5 buckets of width 1.8: (-, 1.8] (1.8, 3.6] (3.6, 5.4] (5.4, 7.2] (7.2, 9]
  std::vector<double> v;
  for (int i = 0; i < 10; ++i) v.push_back(i);
  const auto h = train::make_histogram(v, 5);
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 9);
  EXPECT_EQ(h.num, 10);
  EXPECT_EQ(h.sum, 45);
  EXPECT_EQ(h.sum_squares, 285);
  ASSERT_EQ(h.bucket_limit.size(), 5u);
  EXPECT_EQ(h.bucket_limit.back(), 9.0);
  EXPECT_EQ(h.bucket, (std::vector<double>{2, 2, 2, 2, 2}));
  // a value on a limit belongs to the bucket that limit closes: 0..4 in 4 buckets -> 2, 1, 1, 1
  EXPECT_EQ(train::make_histogram({0, 1, 2, 3, 4}, 4).bucket, (std::vector<double>{2, 1, 1, 1}));
  const auto one = train::make_histogram({0.25, 0.25, 0.25}, 30);
  EXPECT_EQ(one.bucket, std::vector<double>{3});
  EXPECT_EQ(one.bucket_limit, std::vector<double>{0.25});
  EXPECT_THROW(train::make_histogram({}, 5), ValueError);
  EXPECT_THROW(train::make_histogram({1.0, std::numeric_limits<double>::quiet_NaN()}, 5),
               ValueError);
  EXPECT_THROW(train::make_histogram({1.0}, 0), ValueError);

  const fs::path dir = fresh_dir("hist");
  train::SummaryWriter w(dir.string());
  w.add_histogram("w", v, 2, 5, 1.0);
  const auto scan = train::read_tfrecords(w.file_path());
  ASSERT_EQ(scan.records.size(), 2u);
  const auto value = decode(find(decode(find(decode(scan.records[1]), 5)->bytes), 1)->bytes);
  EXPECT_EQ(find(value, 1)->bytes, "w");
  const auto hp = decode(find(value, 5)->bytes);  // HistogramProto
  EXPECT_EQ(find(hp, 2)->as_double(), 9.0);      // max
  EXPECT_EQ(find(hp, 7)->bytes.size(), 5u * 8);   // 5 packed doubles
  fs::remove_all(dir);
}

TEST(SummaryWriter, Errors) {
  EXPECT_THROW(train::SummaryWriter("/proc/no-such-dir/x"), IOError);
  try {
    train::SummaryWriter("/proc/no-such-dir/x");
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the log directory"), std::string::npos)
        << e.what();
  }
  const fs::path dir = fresh_dir("closed");
  train::SummaryWriter w(dir.string());
  w.close();
  w.close();  // idempotent
  EXPECT_THROW(w.add_scalar("x", 1.0), ValueError);
  EXPECT_THROW(w.flush(), ValueError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradlab
