#include "gradlab/train/summary_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/train/proto_encoder.hpp"
#include "gradlab/train/tfrecord.hpp"

namespace gradlab::train {

using detail::ProtoEncoder;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char b[256] = {};
  if (::gethostname(b, sizeof b - 1) != 0 || !b[0]) return "localhost";
  return b;
}

// The <n> of the file name: how many event files this process opened before (torch's
// _global_uid), so two writers opened in the same second get different names.
std::atomic<int> g_file_count{0};

// ---- the messages (field numbers from TensorBoard's .proto files, see proto_encoder.hpp) ----

// Event { double wall_time = 1; int64 step = 2; oneof what { string file_version = 3;
//         Summary summary = 5; ... } }
std::string event_with_summary(double wall, int64_t step, const ProtoEncoder& summary) {
  ProtoEncoder e;
  e.fixed64_double(1, wall).int64(2, step).message(5, summary);
  return e.str();
}

// Summary { repeated Value value = 1; }
ProtoEncoder summary_of(const ProtoEncoder& value) {
  ProtoEncoder s;
  s.message(1, value);
  return s;
}

// SummaryMetadata { PluginData plugin_data = 1; }   PluginData { string plugin_name = 1;
// bytes content = 2; }
ProtoEncoder plugin_metadata(std::string_view plugin, std::string_view content) {
  ProtoEncoder pd, md;
  pd.bytes(1, plugin).bytes(2, content);
  md.message(1, pd);
  return md;
}

// Summary.Value { string tag = 1; SummaryMetadata metadata = 9; oneof value { float
// simple_value = 2; HistogramProto histo = 5; TensorProto tensor = 8; ... } }
ProtoEncoder scalar_value(const std::string& tag, double v) {
  ProtoEncoder val;
  val.bytes(1, tag).fixed32_float(2, static_cast<float>(v));
  return val;
}

// HistogramProto { double min = 1; max = 2; num = 3; sum = 4; sum_squares = 5;
//                  repeated double bucket_limit = 6 [packed]; repeated double bucket = 7 [packed]; }
ProtoEncoder histogram_value(const std::string& tag, const Histogram& h) {
  ProtoEncoder hp, val;
  hp.fixed64_double(1, h.min)
      .fixed64_double(2, h.max)
      .fixed64_double(3, h.num)
      .fixed64_double(4, h.sum)
      .fixed64_double(5, h.sum_squares)
      .packed_doubles(6, h.bucket_limit)
      .packed_doubles(7, h.bucket);
  val.bytes(1, tag).message(5, hp);
  return val;
}

// TensorProto { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2;
//               repeated bytes string_val = 8; }
// TensorShapeProto { repeated Dim dim = 2; }  Dim { int64 size = 1; }
// The text plugin's content is an empty TextPluginData (version 0 encodes to nothing).
ProtoEncoder text_value(const std::string& tag, const std::string& text) {
  ProtoEncoder dim, shape, tensor, val;
  dim.int64(1, 1);
  shape.message(2, dim);
  tensor.varint(1, 7).message(2, shape).bytes(8, text);
  val.bytes(1, tag).message(9, plugin_metadata("text", "")).message(8, tensor);
  return val;
}

// A value with hparams plugin metadata only: content is HParamsPluginData { int32 version = 1
// (0: left out); oneof data { Experiment experiment = 2; SessionStartInfo session_start_info = 3;
// SessionEndInfo session_end_info = 4; } }.
ProtoEncoder hparams_value(const std::string& tag, int data_field, const ProtoEncoder& data) {
  ProtoEncoder content, val;
  content.message(data_field, data);
  val.bytes(1, tag).message(9, plugin_metadata("hparams", content.str()));
  return val;
}

void check_open(bool closed, const char* op) {
  GRADLAB_CHECK(!closed, ValueError, op, "the writer is closed", "an open SummaryWriter",
                "closed", "create a new SummaryWriter, or call close() only at the end");
}

}  // namespace

namespace detail {

// One append-only event file. Every record goes out with one write(2) (no user-space buffer),
// so the OS holds it even if the process is killed right after.
class EventFile {
 public:
  EventFile(const std::string& dir, const std::string& suffix) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    GRADLAB_CHECK(!ec && std::filesystem::is_directory(dir), IOError, "SummaryWriter",
                  "cannot create the log directory", "a writable directory",
                  dir + (ec ? " (" + ec.message() + ")" : ""),
                  "pass a log_dir in a folder you can write to");
    char name[64];
    std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.",
                  static_cast<long long>(std::time(nullptr)));
    path_ = (std::filesystem::path(dir) / (name + host_name() + "." +
                                           std::to_string(::getpid()) + "." +
                                           std::to_string(g_file_count++) + suffix))
                .string();
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    GRADLAB_CHECK(fd_ >= 0, IOError, "SummaryWriter", "cannot open the event file",
                  "a writable file", path_ + " (" + std::strerror(errno) + ")");
    // Event { wall_time = 1; file_version = 3 }: the header every reader expects first.
    ProtoEncoder e;
    e.fixed64_double(1, now_seconds()).bytes(3, "brain.Event:2");
    append(e.str());
  }
  ~EventFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  void append(const std::string& event) {
    const std::string rec = tfrecord_frame(event);
    size_t done = 0;
    while (done < rec.size()) {
      const ssize_t n = ::write(fd_, rec.data() + done, rec.size() - done);
      if (n < 0 && errno == EINTR) continue;
      GRADLAB_CHECK(n > 0, IOError, "SummaryWriter", "writing an event record failed",
                    "a complete record", path_ + " (" + std::strerror(errno) + ")",
                    "is the disk full?");
      done += static_cast<size_t>(n);
    }
  }
  void sync() {
    if (fd_ >= 0) ::fsync(fd_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace detail

Histogram make_histogram(const std::vector<double>& values, int bins) {
  GRADLAB_CHECK(!values.empty(), ValueError, "add_histogram", "no values", "at least one value",
                "0");
  GRADLAB_CHECK(bins >= 1, ValueError, "add_histogram", "bad bin count", "bins >= 1",
                std::to_string(bins));
  Histogram h;
  h.min = values[0], h.max = values[0];
  for (double v : values) {
    GRADLAB_CHECK(std::isfinite(v), ValueError, "add_histogram", "a value is not finite",
                  "finite values", std::to_string(v),
                  "a NaN or Inf in weights or gradients: see lesson 13 (NaN hunting)");
    h.min = std::min(h.min, v), h.max = std::max(h.max, v);
    h.sum += v, h.sum_squares += v * v;
  }
  h.num = static_cast<double>(values.size());
  if (h.max == h.min) bins = 1;  // all equal: one bucket ending at the value
  const double width = (h.max - h.min) / bins;
  h.bucket.assign(static_cast<size_t>(bins), 0.0);
  for (int i = 0; i < bins; ++i) h.bucket_limit.push_back(h.min + width * (i + 1));
  h.bucket_limit.back() = h.max;  // NOTE: min + width * bins may round below max
  for (double v : values) {
    // bucket i covers (limit[i-1], limit[i]]; the value min goes into bucket 0.
    auto it = std::lower_bound(h.bucket_limit.begin(), h.bucket_limit.end(), v);
    h.bucket[static_cast<size_t>(it - h.bucket_limit.begin())] += 1;
  }
  return h;
}

SummaryWriter::SummaryWriter(std::string log_dir, std::string filename_suffix)
    : log_dir_(std::move(log_dir)), suffix_(std::move(filename_suffix)) {
  if (log_dir_.empty()) {  // torch: runs/<Mon DD_HH-MM-SS>_<host>
    char b[32];
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(b, sizeof b, "%b%d_%H-%M-%S", &tm);
    log_dir_ = (std::filesystem::path("runs") / (std::string(b) + "_" + host_name())).string();
  }
  file_ = std::make_unique<detail::EventFile>(log_dir_, suffix_);
  path_ = file_->path();
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (...) {  // NOTE: a destructor must not throw; close() only fsyncs and frees
  }
}
SummaryWriter::SummaryWriter(SummaryWriter&&) noexcept = default;
SummaryWriter& SummaryWriter::operator=(SummaryWriter&&) noexcept = default;

detail::EventFile& SummaryWriter::main() {
  check_open(closed_ || !file_, "SummaryWriter");
  return *file_;
}

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t global_step,
                               std::optional<double> walltime) {
  main().append(event_with_summary(walltime.value_or(now_seconds()), global_step,
                                   summary_of(scalar_value(tag, value))));
}

void SummaryWriter::add_scalars(const std::string& main_tag,
                                const std::map<std::string, double>& tag_scalar,
                                int64_t global_step, std::optional<double> walltime) {
  main();  // the closed check
  std::string base = main_tag;
  std::replace(base.begin(), base.end(), '/', '_');
  const double wall = walltime.value_or(now_seconds());
  for (const auto& [key, v] : tag_scalar) {
    const std::string dir = (std::filesystem::path(log_dir_) / (base + "_" + key)).string();
    auto& f = sub_[dir];
    if (!f) f = std::make_unique<detail::EventFile>(dir, suffix_);
    f->append(event_with_summary(wall, global_step, summary_of(scalar_value(main_tag, v))));
  }
}

void SummaryWriter::add_histogram(const std::string& tag, const std::vector<double>& values,
                                  int64_t global_step, int bins, std::optional<double> walltime) {
  const Histogram h = make_histogram(values, bins);
  main().append(event_with_summary(walltime.value_or(now_seconds()), global_step,
                                   summary_of(histogram_value(tag, h))));
}

void SummaryWriter::add_histogram(const std::string& tag, const Tensor& values,
                                  int64_t global_step, int bins, std::optional<double> walltime) {
  add_histogram(tag, values.to_vector<double>(), global_step, bins, walltime);
}

void SummaryWriter::add_text(const std::string& tag, const std::string& text, int64_t global_step,
                             std::optional<double> walltime) {
  main().append(event_with_summary(walltime.value_or(now_seconds()), global_step,
                                   summary_of(text_value(tag + "/text_summary", text))));
}

void SummaryWriter::add_hparams(const std::map<std::string, HParam>& hparams,
                                const std::map<std::string, double>& metrics,
                                std::string run_name, int64_t global_step) {
  main();
  const double wall = now_seconds();
  if (run_name.empty()) {  // torch: str(time.time())
    char b[32];
    std::snprintf(b, sizeof b, "%.6f", wall);
    run_name = b;
  }
  // Experiment { repeated HParamInfo hparam_infos = 4; repeated MetricInfo metric_infos = 5; }
  // HParamInfo { string name = 1; DataType type = 4 } (STRING 1, BOOL 2, FLOAT64 3)
  // MetricInfo { MetricName name = 1 }  MetricName { string tag = 2 }
  // SessionStartInfo { map<string, google.protobuf.Value> hparams = 1; double start_time_secs = 5 }
  //   (a map entry is a message { key = 1; value = 2 }; Value { double number_value = 2;
  //   string string_value = 3; bool bool_value = 4 })
  // SessionEndInfo { Status status = 1 (STATUS_SUCCESS = 1); double end_time_secs = 2 }
  ProtoEncoder experiment, start, end;
  for (const auto& [name, hp] : hparams) {
    ProtoEncoder info, v, entry;
    int type = 0;
    if (const double* d = std::get_if<double>(&hp.value)) {
      v.fixed64_double(2, *d), type = 3;
    } else if (const std::string* s = std::get_if<std::string>(&hp.value)) {
      v.bytes(3, *s), type = 1;
    } else {
      v.boolean(4, std::get<bool>(hp.value)), type = 2;
    }
    info.bytes(1, name).varint(4, static_cast<uint64_t>(type));
    experiment.message(4, info);
    entry.bytes(1, name).message(2, v);
    start.message(1, entry);
  }
  for (const auto& [tag, value] : metrics) {
    (void)value;
    ProtoEncoder mname, minfo;
    mname.bytes(2, tag);
    minfo.message(1, mname);
    experiment.message(5, minfo);
  }
  start.fixed64_double(5, wall);
  end.varint(1, 1).fixed64_double(2, wall);

  detail::EventFile run((std::filesystem::path(log_dir_) / run_name).string(), suffix_);
  run.append(event_with_summary(wall, global_step,
                                summary_of(hparams_value("_hparams_/experiment", 2, experiment))));
  run.append(event_with_summary(
      wall, global_step, summary_of(hparams_value("_hparams_/session_start_info", 3, start))));
  run.append(event_with_summary(
      wall, global_step, summary_of(hparams_value("_hparams_/session_end_info", 4, end))));
  for (const auto& [tag, value] : metrics)
    run.append(event_with_summary(wall, global_step, summary_of(scalar_value(tag, value))));
  run.sync();
}

void SummaryWriter::flush() {
  check_open(closed_ || !file_, "SummaryWriter::flush");
  file_->sync();
  for (auto& [dir, f] : sub_) f->sync();
}

void SummaryWriter::close() {
  if (closed_ || !file_) return;  // NOTE: a moved-from writer has no file
  file_->sync();
  for (auto& [dir, f] : sub_) f->sync();
  file_.reset();  // closes the descriptors
  sub_.clear();
  closed_ = true;
}

}  // namespace gradlab::train
