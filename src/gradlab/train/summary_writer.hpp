#pragma once
// TensorBoard event files, as torch.utils.tensorboard.SummaryWriter writes them.
//
//   train::SummaryWriter w("runs/exp1");            // SummaryWriter(log_dir="runs/exp1")
//   w.add_scalar("loss/train", loss, step);         // w.add_scalar("loss/train", loss, step)
//   w.add_scalars("loss", {{"train", a}, {"val", b}}, step);   // one sub-run per key
//   w.add_histogram("fc1.weight", weight, step);    // weights or gradients
//   w.add_text("notes", "lr 0.05, seed 0", 0);
//   w.add_image("input/0", x[0], step);            // [C, H, W] in [0, 1] (or uint8) -> PNG
//   w.add_graph(model, x);                          // the Graphs tab: model's autograd graph
//   w.add_hparams({{"lr", 0.05}, {"seed", int64_t{0}}}, {{"hparam/accuracy", 0.97}});
//   w.close();                                      // open with: tensorboard --logdir runs
//
// File: <log_dir>/events.out.tfevents.<10-digit time>.<host>.<pid>.<n> (n counts the writers
// this process opened). Content: TFRecord framing (tfrecord.hpp) of Event protobuf messages, the
// first of which says file_version "brain.Event:2". Every add_* appends one record with a single
// write(2): a killed process leaves every complete record readable. flush() also fsyncs.
//
// NOTE: TensorBoard stores a scalar as float32 (Summary.Value.simple_value), so add_scalar(x)
// reads back as float(x), not x. Histograms keep float64 (min, max, sum, buckets).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gradlab/nn/module.hpp"
#include "gradlab/train/run_info.hpp"

namespace gradlab::train {

namespace detail {
class EventFile;
}

/// What add_histogram stores (HistogramProto): bucket i holds the values in
/// (bucket_limit[i-1], bucket_limit[i]] (the first from min), with uniform widths.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
};
/// The histogram of `values` in `bins` equal-width buckets between their min and max.
/// ValueError for no values, a non-finite value or bins < 1.
Histogram make_histogram(const std::vector<double>& values, int bins = 30);

/// Writes TensorBoard event files (see the top of this header).
class SummaryWriter {
 public:
  /// Opens a new event file in `log_dir` (created when missing). Empty: runs/<date>_<host>, as
  /// PyTorch. IOError when the folder cannot be created or the file cannot be opened.
  explicit SummaryWriter(std::string log_dir = "", std::string filename_suffix = "");
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;
  SummaryWriter(SummaryWriter&&) noexcept;
  SummaryWriter& operator=(SummaryWriter&&) noexcept;

  const std::string& log_dir() const { return log_dir_; }
  /// The path of this writer's event file.
  const std::string& file_path() const { return path_; }

  /// One scalar (stored as float32). walltime: seconds since the epoch (default: now).
  void add_scalar(const std::string& tag, double value, int64_t global_step = 0,
                  std::optional<double> walltime = std::nullopt);
  /// Several scalars in one chart: each key k is written to its own event file under
  /// <log_dir>/<main_tag with '/' -> '_'>_<k>, with tag main_tag (what PyTorch does).
  void add_scalars(const std::string& main_tag, const std::map<std::string, double>& tag_scalar,
                   int64_t global_step = 0, std::optional<double> walltime = std::nullopt);
  /// A histogram of the values (e.g. a layer's weights, or their .grad()).
  void add_histogram(const std::string& tag, const std::vector<double>& values,
                     int64_t global_step = 0, int bins = 30,
                     std::optional<double> walltime = std::nullopt);
  void add_histogram(const std::string& tag, const Tensor& values, int64_t global_step = 0,
                     int bins = 30, std::optional<double> walltime = std::nullopt);
  /// Text (markdown) under tag "<tag>/text_summary", as PyTorch.
  void add_text(const std::string& tag, const std::string& text, int64_t global_step = 0,
                std::optional<double> walltime = std::nullopt);
  /// An image for the Images tab, PNG-encoded (Summary.Value.image), as PyTorch's add_image.
  /// `dataformats` names the dims: "CHW" (default), "HWC" or "HW"; C is 1 (gray), 3 (RGB) or
  /// 4 (RGBA). A float image must hold finite values in [0, 1] (stored as round(255 * v)); a
  /// uint8 image is stored as is. ShapeError / DTypeError / ValueError name what was found.
  /// NOTE: PyTorch truncates 255 * v and turns gray into RGB; gradlab rounds and keeps gray.
  void add_image(const std::string& tag, const Tensor& img_tensor, int64_t global_step = 0,
                 const std::string& dataformats = "CHW",
                 std::optional<double> walltime = std::nullopt);
  /// The autograd graph of one forward of `model` on `input_to_model`, for the Graphs tab
  /// (Event.graph_def: a tensorflow.GraphDef), as PyTorch's add_graph. The forward runs with
  /// grad on, on a detached copy of the input that requires grad (when it is floating point).
  /// Nodes: "input" and "output" (op "IO Node"); each parameter under its dotted name (op
  /// "Parameter"); each backward node under the path of the module it ran in, dots as
  /// slashes ("encoder/0/AddmmBackward0", op "AddmmBackward0"; "_1", "_2" on repeats), with
  /// attrs "_output_shapes" and "site" (its creation site). Edges follow the forward data flow.
  /// NOTE: a module is known by its forward hook (calls through a holder or a Sequential);
  /// ops a container runs between its children go to the child that runs next.
  template <class H, std::enable_if_t<nn::detail::is_callable_holder_v<H>, int> = 0>
  void add_graph(const H& model, const Tensor& input_to_model) {
    add_graph(
        *model.ptr(), [&](const Tensor& x) -> Tensor { return model(x); }, input_to_model);
  }
  /// Same, for any forward: `forward(input)` is expected to call `model`'s submodules.
  void add_graph(nn::Module& model, const std::function<Tensor(const Tensor&)>& forward,
                 const Tensor& input_to_model);
  /// Hyper-parameters and final metrics for TensorBoard's HParams tab: writes the experiment,
  /// session start (the values) and session end records, then each metric as a scalar, into
  /// the sub-run <log_dir>/<run_name> (default: the current time, as PyTorch).
  void add_hparams(const std::map<std::string, HParam>& hparams,
                   const std::map<std::string, double>& metrics, std::string run_name = "",
                   int64_t global_step = 0);
  /// fsyncs every open event file (records are already written to the OS after each add_*).
  void flush();
  /// Flushes and closes every file; later add_* calls throw ValueError. Idempotent.
  void close();

 private:
  detail::EventFile& main();
  std::string log_dir_;
  std::string suffix_;
  std::string path_;
  std::unique_ptr<detail::EventFile> file_;
  std::map<std::string, std::unique_ptr<detail::EventFile>> sub_;  // add_scalars' runs
  bool closed_ = false;
};

}  // namespace gradlab::train
