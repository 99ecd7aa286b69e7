// SummaryWriter: file names, what each record holds (decoded by an independent decoder), the
// histogram buckets, add_scalars' sub-runs, and the errors. TensorBoard's own reader checks the
// same files in tensorboard_reader.py (ctest tensorboard_reader).

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <gradlab/gradlab.hpp>
#include <limits>
#include <map>
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

// The message of `e` (or "" when f does not throw T): the message of the error, for the checks.
template <class T, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const T& e) {
    return e.what();
  }
  return "";
}

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

TEST(SummaryWriter, AddImageWritesAPng) {
  const fs::path dir = fresh_dir("image");
  train::SummaryWriter w(dir.string());
  // [C=3, H=1, W=2]: pixel 0 = (0, 0.5, 1), pixel 1 = (0.2, 0.002, 0.999)
  w.add_image("img", tensor({0.0, 0.2, 0.5, 0.002, 1.0, 0.999}).reshape({3, 1, 2}), 4);
  const auto scan = train::read_tfrecords(w.file_path());
  ASSERT_EQ(scan.records.size(), 2u);
  const auto ev = decode(scan.records[1]);
  EXPECT_EQ(find(ev, 2)->u, 4u);  // step
  const auto value = decode(find(decode(find(ev, 5)->bytes), 1)->bytes);
  EXPECT_EQ(find(value, 1)->bytes, "img");
  const auto im = decode(find(value, 4)->bytes);  // Summary.Value.image
  EXPECT_EQ(find(im, 1)->u, 1u);                  // height
  EXPECT_EQ(find(im, 2)->u, 2u);                  // width
  EXPECT_EQ(find(im, 3)->u, 3u);                  // colorspace
  const std::string png = find(im, 4)->bytes;
  ASSERT_GE(png.size(), 8u + 25 + 12 + 12);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(png, 16), 2u);  // width
  EXPECT_EQ(be32(png, 20), 1u);  // height
  EXPECT_EQ(png[24], 8);         // bit depth
  EXPECT_EQ(png[25], 2);         // color type RGB
  // every chunk's CRC, and the IDAT inflated by zlib: one filter byte, then RGB RGB
  std::string idat;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t len = be32(png, at);
    const std::string body = png.substr(at + 4, 4 + len);
    EXPECT_EQ(be32(png, at + 8 + len),
              crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size())))
        << body.substr(0, 4);
    if (body.substr(0, 4) == "IDAT") idat += body.substr(4);
    at += 12 + len;
  }
  std::string raw(64, '\0');
  uLongf n = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &n,
                       reinterpret_cast<const Bytef*>(idat.data()), uLong(idat.size())),
            Z_OK);
  raw.resize(n);
  // round(255 v): 0, 128, 255 | 51, 1, 255 (0.002 * 255 = 0.51 rounds up; 0.999 -> 254.7 -> 255)
  EXPECT_EQ(raw, std::string("\0\x00\x80\xff\x33\x01\xff", 7));
  fs::remove_all(dir);
}

TEST(SummaryWriter, AddImageErrors) {
  const fs::path dir = fresh_dir("image_err");
  train::SummaryWriter w(dir.string());
  const Tensor ok = zeros({3, 4, 5});
  std::string m = error_of<ShapeError>([&] { w.add_image("x", zeros({2, 3, 4, 5})); });
  EXPECT_NE(m.find("add_image"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 3, 4, 5]"), std::string::npos) << m;
  EXPECT_NE(m.find("pass one image"), std::string::npos) << m;
  m = error_of<ShapeError>([&] { w.add_image("x", zeros({2, 4, 5})); });
  EXPECT_NE(m.find("C = 2"), std::string::npos) << m;
  m = error_of<ShapeError>([&] { w.add_image("x", zeros({5, 7, 3})); });  // HWC passed as CHW
  EXPECT_NE(m.find("dataformats \"HWC\""), std::string::npos) << m;
  m = error_of<ShapeError>([&] { w.add_image("x", ok, 0, "HW"); });
  EXPECT_NE(m.find("2 dims"), std::string::npos) << m;
  m = error_of<ValueError>([&] { w.add_image("x", ok, 0, "NCHW"); });
  EXPECT_NE(m.find("unknown dataformats"), std::string::npos) << m;
  m = error_of<ValueError>([&] {
    Tensor t = zeros({1, 2, 2});
    t = t + tensor({0.0, 0.0, 1.5, 0.0}).reshape({1, 2, 2});
    w.add_image("x", t);
  });
  EXPECT_NE(m.find("outside [0, 1]"), std::string::npos) << m;
  EXPECT_NE(m.find("1.5"), std::string::npos) << m;
  EXPECT_NE(m.find("at flat index 2"), std::string::npos) << m;
  m = error_of<ValueError>([&] {
    w.add_image("x", tensor({0.0, std::numeric_limits<double>::quiet_NaN()}).reshape({1, 2}), 0,
                "HW");
  });
  EXPECT_NE(m.find("outside [0, 1]"), std::string::npos) << m;
  m = error_of<DTypeError>([&] { w.add_image("x", zeros({3, 4, 5}, kInt64)); });
  EXPECT_NE(m.find("int64"), std::string::npos) << m;
  EXPECT_NE(m.find("uint8"), std::string::npos) << m;
  m = error_of<ShapeError>([&] { w.add_image("x", zeros({3, 0, 5})); });
  EXPECT_NE(m.find("empty image"), std::string::npos) << m;
  // nothing was written by the failed calls; uint8 up to 255 and HW float images are fine
  EXPECT_EQ(train::read_tfrecords(w.file_path()).records.size(), 1u);
  w.add_image("u8", full({2, 2, 1}, 255.0).to(kUInt8), 0, "HWC");
  w.add_image("hw", full({2, 2}, 1.0), 0, "HW");
  EXPECT_EQ(train::read_tfrecords(w.file_path()).records.size(), 3u);
  w.close();
  EXPECT_THROW(w.add_image("x", ok), ValueError);
  fs::remove_all(dir);
}

// The node names of the GraphDef in the add_graph event `rec`.
std::vector<std::string> graph_nodes(const std::string& rec,
                                     std::vector<std::vector<std::string>>* inputs = nullptr) {
  const auto ev = decode(rec);
  std::vector<std::string> names;
  for (const auto& node : decode(find(ev, 4)->bytes)) {  // Event.graph_def
    if (node.number != 1) continue;                      // GraphDef.node
    const auto nd = decode(node.bytes);
    names.push_back(find(nd, 1)->bytes);
    if (inputs) {
      inputs->emplace_back();
      for (const auto& f : nd)
        if (f.number == 3) inputs->back().push_back(f.bytes);
    }
  }
  return names;
}

// A residual block: the add runs in the block itself, after its child.
struct ResidualImpl : nn::Module {
  nn::Linear fc{nullptr};
  ResidualImpl() { fc = register_module("fc", nn::Linear(3, 3)); }
  Tensor forward(const Tensor& x) { return x + fc(x); }
};
GRADLAB_MODULE(Residual);

TEST(SummaryWriter, AddGraphScopesAndSharedInputs) {
  const fs::path dir = fresh_dir("graph_res");
  train::SummaryWriter w(dir.string());
  nn::Sequential model{Residual(), nn::Tanh()};
  w.add_graph(model, randn({2, 3}));
  const auto scan = train::read_tfrecords(w.file_path());
  ASSERT_EQ(scan.records.size(), 2u);
  std::vector<std::vector<std::string>> ins;
  const std::vector<std::string> names = graph_nodes(scan.records[1], &ins);
  std::map<std::string, std::vector<std::string>> got;
  for (size_t i = 0; i < names.size(); ++i) got[names[i]] = ins[i];
  // the input feeds two nodes; the block's own add is under "0", its child's addmm under "0/fc"
  const std::map<std::string, std::vector<std::string>> want = {
      {"input", {}},
      {"0.fc.weight", {}},
      {"0.fc.bias", {}},
      {"0/fc/AddmmBackward0", {"input", "0.fc.weight", "0.fc.bias"}},
      {"0/AddBackward0", {"input", "0/fc/AddmmBackward0"}},
      {"1/TanhBackward0", {"0/AddBackward0"}},
      {"output", {"1/TanhBackward0"}}};
  EXPECT_EQ(got, want);
  fs::remove_all(dir);
}

TEST(SummaryWriter, AddGraph) {
  const fs::path dir = fresh_dir("graph");
  train::SummaryWriter w(dir.string());
  manual_seed(0);
  nn::Sequential model(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 1));
  {
    NoGradGuard off;  // add_graph records even when the caller has grad off
    w.add_graph(model, randn({2, 3}));
  }
  w.add_graph(model, randn({2, 3}));  // twice: the first call's hooks are gone
  const auto scan = train::read_tfrecords(w.file_path());
  ASSERT_EQ(scan.records.size(), 3u);
  std::vector<std::vector<std::string>> ins;
  std::vector<std::string> names = graph_nodes(scan.records[1], &ins);
  EXPECT_EQ(graph_nodes(scan.records[2]), names);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"0.bias", "0.weight", "0/AddmmBackward0",
                                              "1/ReluBackward0", "2.bias", "2.weight",
                                              "2/AddmmBackward0", "input", "output"}));
  const auto at = [&](const std::string& n) {
    return ins[size_t(std::find(names.begin(), names.end(), n) - names.begin())];
  };
  EXPECT_EQ(at("0/AddmmBackward0"), (std::vector<std::string>{"input", "0.weight", "0.bias"}));
  EXPECT_EQ(at("2/AddmmBackward0"),
            (std::vector<std::string>{"1/ReluBackward0", "2.weight", "2.bias"}));
  EXPECT_EQ(at("output"), std::vector<std::string>{"2/AddmmBackward0"});
  // the parameters got no gradient and the input handle is untouched
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());

  // errors: an output without a graph names the cause
  nn::Linear frozen(3, 1);
  for (auto& p : frozen->parameters()) p.requires_grad_(false);
  const std::string m = error_of<ValueError>([&] {
    w.add_graph(
        *frozen.ptr(), [&](const Tensor& x) { return frozen(x).detach(); }, randn({2, 3}));
  });
  EXPECT_NE(m.find("add_graph"), std::string::npos) << m;
  EXPECT_NE(m.find("no autograd graph"), std::string::npos) << m;
  EXPECT_THROW(w.add_graph(model, Tensor()), ValueError);
  EXPECT_EQ(train::read_tfrecords(w.file_path()).records.size(), 3u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradlab
