#include "gradlab/train/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <iostream>
#include <limits>
#include <ostream>

#include "gradlab/core/error.hpp"

namespace gradlab::train {
namespace {

const char* const kSpark[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

bool stream_is_tty(std::ostream& out) {
  const bool is_out = &out == &std::cout, is_err = &out == &std::cerr || &out == &std::clog;
  if (!is_out && !is_err) return false;  // a string stream, a file stream: never a terminal
  // GRADLAB_PROGRESS=plain / tty overrides the detection (tools/run_lessons.sh pipes a lesson
  // through tee but shows it on a terminal)
  if (const char* env = std::getenv("GRADLAB_PROGRESS"); env && *env) {
    if (std::string_view(env) == "plain") return false;
    if (std::string_view(env) == "tty") return true;
  }
  return ::isatty(is_out ? STDOUT_FILENO : STDERR_FILENO) == 1;
}

std::string seconds(double s) {
  char b[32];
  if (!std::isfinite(s)) return "? s";
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

std::string number(const char* f, double v) {
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

namespace {

// The mean of each of min(n, width) groups of consecutive values: group g holds [g*n/w, (g+1)*n/w).
std::vector<double> group_means(const std::vector<double>& values, int width) {
  const size_t n = values.size(), w = std::min(n, static_cast<size_t>(width));
  std::vector<double> g(w);
  for (size_t i = 0; i < w; ++i) {
    const size_t a = i * n / w, b = (i + 1) * n / w;
    double s = 0;
    for (size_t k = a; k < b; ++k) s += values[k];
    g[i] = s / static_cast<double>(b - a);
  }
  return g;
}

}  // namespace

std::string sparkline(const std::vector<double>& values, int width, double lo, double hi) {
  if (values.empty() || width < 1) return "";
  std::string out;
  for (double v : group_means(values, width)) {
    if (!std::isfinite(v)) {
      out += "!";
    } else if (!(hi > lo)) {
      out += kSpark[3];
    } else {
      const double t = std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
      out += kSpark[static_cast<int>(std::lround(t * 7))];
    }
  }
  return out;
}

std::string sparkline(const std::vector<double>& values, int width) {
  if (values.empty() || width < 1) return "";
  const std::vector<double> g = group_means(values, width);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : g)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  std::string out;
  for (double v : g) {
    if (!std::isfinite(v)) {
      out += "!";
    } else if (!(hi > lo)) {
      out += kSpark[3];
    } else {
      const int level = static_cast<int>(std::lround((v - lo) / (hi - lo) * 7));
      out += kSpark[std::clamp(level, 0, 7)];
    }
  }
  return out;
}

ProgressBar::ProgressBar(int64_t total, ProgressOptions options)
    : ProgressBar(total, std::move(options), std::cout) {}

ProgressBar::ProgressBar(int64_t total, ProgressOptions options, std::ostream& out)
    : total_(total), opt_(std::move(options)), out_(out) {
  GRADLAB_CHECK(total >= 0, ValueError, "ProgressBar", "negative total", "total >= 0",
                std::to_string(total));
  tty_ = opt_.tty().value_or(stream_is_tty(out_));
  every_ = opt_.plain_every() > 0 ? opt_.plain_every() : std::max<int64_t>(1, total_ / 10);
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

ProgressBar::~ProgressBar() {
  try {
    close();
  } catch (...) {  // NOTE: never throw from a destructor (a stream may be in a bad state)
  }
}

double ProgressBar::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressBar::status() const {
  const double t = elapsed();
  const double rate = t > 0 ? static_cast<double>(count_) / t : 0.0;
  const double eta =
      rate > 0 ? static_cast<double>(std::max<int64_t>(0, total_ - count_)) / rate : NAN;
  std::string s = opt_.desc() + (opt_.desc().empty() ? "" : " ") + std::to_string(count_);
  if (total_ > 0) {
    // NOTE: appended piece by piece: g++ 12 -O2 gives a false -Wrestrict on "lit" + string&&
    s += '/';
    s += std::to_string(total_);
    s += " (";
    s += std::to_string(count_ * 100 / std::max<int64_t>(1, total_));
    s += "%)";
  }
  if (!losses_.empty())
    s += "  loss " + number("%.4f", losses_.back()) + "  " + sparkline(losses_, opt_.spark_width());
  s += "  elapsed " + seconds(t) + "  ETA " + seconds(eta) + "  " + number("%.1f", rate) +
       " steps/s";
  return s;
}

std::string ProgressBar::bar_line() const {
  const double t = elapsed();
  const double rate = t > 0 ? static_cast<double>(count_) / t : 0.0;
  const double eta =
      rate > 0 ? static_cast<double>(std::max<int64_t>(0, total_ - count_)) / rate : NAN;
  const double frac =
      total_ > 0 ? std::min(1.0, static_cast<double>(count_) / static_cast<double>(total_)) : 0;
  const int full = static_cast<int>(frac * opt_.width());
  std::string bar;
  for (int i = 0; i < opt_.width(); ++i) bar += i < full ? "█" : " ";
  std::string s = opt_.desc() + (opt_.desc().empty() ? "" : " ") +
                  number("%3.0f", 100 * frac) + "%|" + bar + "| " + std::to_string(count_) +
                  "/" + std::to_string(total_);
  if (!losses_.empty())
    s += "  loss " + number("%.4f", losses_.back()) + " " + sparkline(losses_, opt_.spark_width());
  s += "  " + number("%.1f", rate) + " steps/s  ETA " + seconds(eta);
  return s;
}

void ProgressBar::draw(bool final) {
  if (tty_) {
    out_ << "\r" << bar_line() << "\x1b[K";  // carriage return, the line, erase to its end
    if (final) out_ << "\n";
    out_.flush();
    drawn_ = !final;
  } else {
    out_ << status() << "\n";
    out_.flush();
  }
  last_draw_ = std::chrono::steady_clock::now();
}

void ProgressBar::update(double loss, int64_t n) {
  if (closed_) return;
  count_ += n;
  losses_.push_back(loss);
  if (tty_) {
    const double since =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_draw_).count();
    if (since >= opt_.min_interval_s() || count_ == total_ || !drawn_) draw(false);
  } else if (count_ % every_ == 0 || count_ == total_) {
    draw(false);
  }
}

void ProgressBar::write(const std::string& message) {
  if (tty_ && drawn_) out_ << "\r\x1b[K";
  out_ << message << "\n";
  if (tty_ && drawn_ && !closed_) draw(false);
  out_.flush();
}

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (tty_) {
    draw(true);
  } else if (count_ % every_ != 0 && count_ != total_) {
    draw(true);  // plain mode: the last state, unless the last update already printed it
  }
}

}  // namespace gradlab::train
