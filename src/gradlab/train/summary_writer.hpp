#pragma once
// TensorBoard event files, as torch.utils.tensorboard.SummaryWriter writes them.
//
//   train::SummaryWriter w("runs/exp1");            // SummaryWriter(log_dir="runs/exp1")
//   w.add_scalar("loss/train", loss, step);         // w.add_scalar("loss/train", loss, step)
//   w.add_scalars("loss", {{"train", a}, {"val", b}}, step);   // one sub-run per key
//   w.add_histogram("fc1.weight", weight, step);    // weights or gradients
//   w.add_text("notes", "lr 0.05, seed 0", 0);
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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gradlab/train/run_info.hpp"

namespace gradlab {
class Tensor;
}

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
