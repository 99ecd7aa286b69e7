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
#include <set>
#include <system_error>
#include <unordered_map>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/train/png.hpp"
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

// Image { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string
// = 4; }   Summary.Value.image = 4
ProtoEncoder image_value(const std::string& tag, int64_t h, int64_t w, int64_t c,
                         const std::string& png) {
  ProtoEncoder img, val;
  img.int64(1, h).int64(2, w).int64(3, c).bytes(4, png);
  val.bytes(1, tag).message(4, img);
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

void SummaryWriter::add_image(const std::string& tag, const Tensor& img, int64_t global_step,
                              const std::string& dataformats, std::optional<double> walltime) {
  main();
  const char* op = "add_image";
  GRADLAB_CHECK(img.defined(), ValueError, op, "the image tensor is undefined",
                "a [C, H, W] tensor", "an undefined tensor");
  GRADLAB_CHECK(dataformats == "CHW" || dataformats == "HWC" || dataformats == "HW", ValueError, op,
                "unknown dataformats", "\"CHW\", \"HWC\" or \"HW\"", "\"" + dataformats + "\"",
                "a batch [N, C, H, W]: pass one image, e.g. x[0]");
  GRADLAB_CHECK(img.dim() == static_cast<int64_t>(dataformats.size()), ShapeError, op,
                "the image's dims do not match dataformats \"" + dataformats + "\"",
                std::to_string(dataformats.size()) + " dims", shape_str(img.sizes()),
                img.dim() == 4 ? "a batch: pass one image, e.g. x[0]"
                               : "pass dataformats that names each dim (\"CHW\", \"HWC\", \"HW\")");
  const Shape& s = img.sizes();
  int64_t c = 1, h = 0, w = 0;
  if (dataformats == "CHW") c = s[0], h = s[1], w = s[2];
  if (dataformats == "HWC") h = s[0], w = s[1], c = s[2];
  if (dataformats == "HW") h = s[0], w = s[1];
  GRADLAB_CHECK(c == 1 || c == 3 || c == 4, ShapeError, op,
                "bad channel count for dataformats \"" + dataformats + "\"",
                "C = 1 (gray), 3 (RGB) or 4 (RGBA)",
                "C = " + std::to_string(c) + " in " + shape_str(s),
                c > 4 && dataformats == "CHW" && (s[2] <= 4)
                    ? "the channels come last: pass dataformats \"HWC\""
                    : "one image at a time, channels as its own dim");
  GRADLAB_CHECK(h >= 1 && w >= 1, ShapeError, op, "an empty image", "height, width >= 1",
                shape_str(s));
  const ScalarType dt = img.dtype();
  const bool is_float = dt == kFloat32 || dt == kFloat64 || dt == kFloat16 || dt == kBFloat16;
  GRADLAB_CHECK(is_float || dt == kUInt8, DTypeError, op, "unsupported image dtype",
                "float (values in [0, 1]) or uint8 (0..255)", to_string(dt),
                "convert it: x.to(kFloat32) / 255 for 0..255 values");
  const std::vector<double> v = img.to_vector<double>();  // in dims order
  for (size_t i = 0; is_float && i < v.size(); ++i)
    GRADLAB_CHECK(std::isfinite(v[i]) && v[i] >= 0.0 && v[i] <= 1.0, ValueError, op,
                  "a float image value is outside [0, 1]", "finite values in [0, 1]",
                  std::to_string(v[i]) + " at flat index " + std::to_string(i),
                  "scale it first: (x - x.min()) / (x.max() - x.min()), or undo the "
                  "normalization (x * std + mean)");
  // HWC bytes: pixel (y, x), channel k
  std::vector<uint8_t> px(static_cast<size_t>(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        const int64_t src = dataformats == "CHW" ? (k * h + y) * w + x : (y * w + x) * c + k;
        const double e = v[static_cast<size_t>(src)];
        px[static_cast<size_t>((y * w + x) * c + k)] =
            static_cast<uint8_t>(is_float ? std::lround(e * 255.0) : std::lround(e));
      }
  main().append(
      event_with_summary(walltime.value_or(now_seconds()), global_step,
                         summary_of(image_value(tag, h, w, c, detail::encode_png(px, h, w, c)))));
}

namespace {

// TensorShapeProto { repeated Dim dim = 2; }  Dim { int64 size = 1; }
ProtoEncoder shape_proto(const Shape& s) {
  ProtoEncoder p;
  for (int64_t d : s) {
    ProtoEncoder dim;
    dim.int64(1, d);
    p.message(2, dim);
  }
  return p;
}

// One graph node for the GraphDef.
struct GNode {
  std::string name, op, site;
  std::vector<std::string> inputs;
  std::vector<Shape> shapes;
};

// NodeDef { string name = 1; string op = 2; repeated string input = 3;
//           map<string, AttrValue> attr = 5; }  (a map entry: { key = 1; value = 2 })
// AttrValue { ListValue list = 1; bytes s = 2; }  ListValue { repeated TensorShapeProto shape = 7;
// } GraphDef { repeated NodeDef node = 1; VersionDef versions = 4; }  VersionDef { producer = 1 }
std::string graph_def(const std::vector<GNode>& nodes) {
  ProtoEncoder g;
  for (const GNode& n : nodes) {
    ProtoEncoder nd, list, shapes_attr, shapes_entry;
    nd.bytes(1, n.name).bytes(2, n.op);
    for (const std::string& in : n.inputs) nd.bytes(3, in);
    for (const Shape& s : n.shapes) list.message(7, shape_proto(s));
    shapes_attr.message(1, list);
    shapes_entry.bytes(1, "_output_shapes").message(2, shapes_attr);
    nd.message(5, shapes_entry);
    if (!n.site.empty()) {
      ProtoEncoder site_attr, site_entry;
      site_attr.bytes(2, n.site);
      site_entry.bytes(1, "site").message(2, site_attr);
      nd.message(5, site_entry);
    }
    g.message(1, nd);
  }
  ProtoEncoder versions;
  versions.int64(1, 22);  // what PyTorch writes
  g.message(4, versions);
  return g.str();
}

}  // namespace

void SummaryWriter::add_graph(nn::Module& model,
                              const std::function<Tensor(const Tensor&)>& forward,
                              const Tensor& input_to_model) {
  main();
  const char* op = "add_graph";
  GRADLAB_CHECK(input_to_model.defined(), ValueError, op, "the example input is undefined",
                "a tensor the model takes", "an undefined tensor");
  // A module's forward hook sees its output after its forward: the output's grad_fn is the
  // last node it made. Hooks fire children first, so "every unnamed node made up to here"
  // is the module's own share.
  struct Mark {
    std::string path;
    uint64_t last = 0;
  };
  std::vector<Mark> marks;
  std::vector<std::pair<std::shared_ptr<nn::Module>, unsigned>> hooks;
  nn::NamedModules mods = model.named_modules();
  mods.emplace_back("", model.shared_from_this());
  struct Unhook {
    decltype(hooks)& h;
    ~Unhook() {
      for (auto& [m, id] : h) m->remove_forward_hook(id);
    }
  } unhook{hooks};
  for (const auto& [path, m] : mods)
    hooks.emplace_back(m, m->register_forward_hook([&marks, path](nn::Module&, const Tensor& out) {
      if (auto fn = out.defined() ? out.grad_fn() : nullptr)
        marks.push_back({path, fn->sequence_nr()});
    }));

  const ScalarType dt = input_to_model.dtype();
  const bool is_float = dt == kFloat32 || dt == kFloat64 || dt == kFloat16 || dt == kBFloat16;
  Tensor x = input_to_model.detach();
  if (is_float) x.requires_grad_(true);
  Tensor out;
  {
    EnableGradGuard grad_on;
    out = forward(x);
  }
  GRADLAB_CHECK(out.defined(), ValueError, op, "the forward returned an undefined tensor",
                "the model's output", "an undefined tensor");
  const autograd::Edge top = autograd::gradient_edge(out);
  GRADLAB_CHECK(top.valid() && !dynamic_cast<autograd::AccumulateGrad*>(top.fn.get()), ValueError,
                op, "the output has no autograd graph", "an output with a grad_fn", out.describe(),
                "does the model have parameters that require grad, and was it run under "
                "NoGradGuard?");

  // every node reachable from the output
  std::vector<autograd::Node*> all;
  std::set<autograd::Node*> seen;
  std::vector<autograd::Node*> stack{top.fn.get()};
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    all.push_back(n);
    for (const autograd::Edge& e : n->next_edges())
      if (e.valid()) stack.push_back(e.fn.get());
  }
  std::sort(all.begin(), all.end(), [](autograd::Node* a, autograd::Node* b) {
    return a->sequence_nr() < b->sequence_nr();
  });

  std::unordered_map<const TensorImpl*, std::string> param_names;
  for (const auto& [name, p] : model.named_parameters()) param_names[p.impl()] = name;
  std::unordered_map<autograd::Node*, std::string> names;
  std::set<std::string> taken{"input", "output"};
  auto unique = [&taken](std::string base) {
    std::string n = base;
    for (int i = 1; taken.count(n); ++i) n = base + "_" + std::to_string(i);
    taken.insert(n);
    return n;
  };
  std::vector<GNode> nodes;
  size_t m = 0;  // the next mark: nodes are visited in creation order
  for (autograd::Node* n : all) {
    if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(n)) {
      const TensorImpl* leaf = acc->leaf().get();
      GNode g;
      if (leaf == x.impl()) {
        g.name = "input", g.op = "IO Node";
      } else if (auto it = param_names.find(leaf); it != param_names.end()) {
        g.name = unique(it->second), g.op = "Parameter";
      } else {
        g.name = unique("leaf"), g.op = "Leaf";
      }
      g.shapes.push_back(leaf->sizes);
      names[n] = g.name;
      nodes.push_back(std::move(g));
      continue;
    }
    while (m < marks.size() && marks[m].last < n->sequence_nr()) ++m;
    std::string scope = m < marks.size() ? marks[m].path : "";
    std::replace(scope.begin(), scope.end(), '.', '/');
    GNode g;
    g.op = n->name();
    g.name = unique(scope.empty() ? g.op : scope + "/" + g.op);
    g.site = n->site.str();
    for (const autograd::TensorMeta& meta : n->output_meta()) g.shapes.push_back(meta.shape);
    names[n] = g.name;
    nodes.push_back(std::move(g));
  }
  // edges, now that every node has its name: node n's next edge i is the producer of input i
  for (size_t i = 0; i < all.size(); ++i)
    for (const autograd::Edge& e : all[i]->next_edges())
      if (e.valid())
        nodes[i].inputs.push_back(names[e.fn.get()] +
                                  (e.input_nr ? ":" + std::to_string(e.input_nr) : ""));
  GNode o;
  o.name = "output", o.op = "IO Node";
  o.inputs.push_back(names[top.fn.get()] +
                     (top.input_nr ? ":" + std::to_string(top.input_nr) : ""));
  o.shapes.push_back(out.sizes());
  nodes.push_back(std::move(o));

  // Event { double wall_time = 1; int64 step = 2; bytes graph_def = 4; }
  ProtoEncoder e;
  e.fixed64_double(1, now_seconds()).int64(2, 0).bytes(4, graph_def(nodes));
  main().append(e.str());
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
