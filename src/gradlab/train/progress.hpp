#pragma once
// A progress bar for training loops, as tqdm: steps done, steps/s, ETA, current loss and a
// sparkline of the loss so far.
//
//   train::ProgressBar bar(total_steps, train::ProgressOptions().desc("train"));
//   for (...) { ...; bar.update(loss.item<double>()); }
//   bar.close();
//
// On a terminal it redraws one line ("\r...\x1b[K"), at most every min_interval_s seconds:
//   train  45%|█████████           | 207/460  loss 0.3120 ▇▅▄▃▂▂▁  41.3 steps/s  ETA 6.1 s
// When the stream is not a terminal (CI, a log file, a pipe) it never writes a control code:
// one plain line every `plain_every` steps (default total/10) and one at the end:
//   train 207/460 (45%)  loss 0.3120  ▇▅▄▃▂▂▁  elapsed 5.0 s  ETA 6.1 s  41.3 steps/s

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/nn/arg.hpp"

namespace gradlab::train {

/// ProgressOptions().desc("epoch 3").tty(false).plain_every(50)
struct ProgressOptions {
  GRADLAB_ARG(std::string, desc) = "train";
  /// Terminal or plain lines; unset: $GRADLAB_PROGRESS ("tty" or "plain") when set, else a
  /// terminal when the stream is std::cout / std::cerr and isatty() says so.
  GRADLAB_ARG(std::optional<bool>, tty);
  /// plain mode: a line every n steps (0: total / 10, at least 1)
  GRADLAB_ARG(int64_t, plain_every) = 0;
  /// terminal mode: redraw at most this often (and at the end)
  GRADLAB_ARG(double, min_interval_s) = 0.1;
  GRADLAB_ARG(int, width) = 20;        ///< bar width in characters (terminal mode)
  GRADLAB_ARG(int, spark_width) = 16;  ///< sparkline length
};

/// "▁▂▃▄▅▆▇█" characters for `values` scaled between their min and max, averaged into at most
/// `width` equal groups (a flat curve is all "▄"); a non-finite group shows as "!".
std::string sparkline(const std::vector<double>& values, int width = 16);
/// The same on a fixed scale [lo, hi] (values outside it clamp to the first or last block; a
/// non-finite group is "!"), so
/// that curves printed one under the other compare: a flat curve prints flat.
std::string sparkline(const std::vector<double>& values, int width, double lo, double hi);

/// A tqdm-like progress bar (see the top of this header).
class ProgressBar {
 public:
  ProgressBar(int64_t total, ProgressOptions options = {});
  ProgressBar(int64_t total, ProgressOptions options, std::ostream& out);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// `n` more steps done; `loss` is the latest loss (shown, and added to the sparkline).
  void update(double loss, int64_t n = 1);
  /// Prints a message on its own line without breaking the bar (terminal: clears it first).
  void write(const std::string& message);
  /// The final line (terminal: the bar is left on screen and ends with a newline). Idempotent.
  void close();

  bool is_tty() const { return tty_; }
  int64_t count() const { return count_; }
  /// The status text of the current state, in plain format (no control codes).
  std::string status() const;

 private:
  void draw(bool final);
  std::string bar_line() const;
  double elapsed() const;

  int64_t total_;
  ProgressOptions opt_;
  std::ostream& out_;
  bool tty_;
  int64_t count_ = 0;
  int64_t every_;
  std::vector<double> losses_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
  bool closed_ = false;
};

}  // namespace gradlab::train
