#pragma once
// xgradlab's output capture (see xgradlab.cpp): fds 1 and 2 become pipes, drained by the xeus
// thread, and an ordered queue of what a cell produced (stream text and display bundles).

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <llvm/Support/raw_ostream.h>
#include <nlohmann/json.hpp>

namespace xgradlab {

namespace nl = nlohmann;

// ---- output capture: fds 1 and 2 become pipes, drained by the xeus thread ------------------------
class OutputPipes {
 public:
  OutputPipes() {
    saved_err_ = dup(STDERR_FILENO);  // the kernel's own log (Jupyter's terminal)
    for (int k = 0; k < 2; ++k) {
      int p[2];
      if (pipe(p) != 0) {
        std::perror("xgradlab: pipe");
        std::exit(1);
      }
      fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
      fcntl(p[0], F_SETPIPE_SZ, 1 << 20);  // a chatty cell blocks less often between drains
      std::fflush(k == 0 ? stdout : stderr);
      dup2(p[1], k == 0 ? STDOUT_FILENO : STDERR_FILENO);
      close(p[1]);
      read_fd_[k] = p[0];
    }
    // Line-buffered stdout: std::cout / printf lines reach the client while the cell runs.
    std::setvbuf(stdout, nullptr, _IOLBF, 1 << 16);
  }
  /// Everything written so far to stdout (k = 0) or stderr (k = 1).
  std::string drain(int k) {
    std::string out;
    char buf[1 << 14];
    for (;;) {
      const ssize_t got = read(read_fd_[k], buf, sizeof buf);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  void flush_streams() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    llvm::outs().flush();
    llvm::errs().flush();
  }
  /// What a cell produced, in order: stream text ("stdout" / "stderr") and display bundles.
  struct Event {
    std::string stream;  ///< empty for a display bundle
    std::string text;
    nl::json bundle;
  };
  /// Moves what fds 1 and 2 hold into the queue, then adds `display` (when not null). Called by
  /// the xeus thread (between polls) and by the worker (gradlab::display), so that an image
  /// lands after the text its cell printed before it.
  void queue(const nl::json* display = nullptr) {
    std::lock_guard<std::mutex> lock(events_m_);
    for (int k = 0; k < 2; ++k) {
      std::string t = drain(k);
      if (!t.empty()) events_.push_back(Event{k == 0 ? "stdout" : "stderr", std::move(t), {}});
    }
    if (display != nullptr) events_.push_back(Event{"", "", *display});
  }
  std::vector<Event> take_events() {
    queue();
    std::lock_guard<std::mutex> lock(events_m_);
    std::vector<Event> out;
    out.swap(events_);
    return out;
  }
  /// Writes to the terminal Jupyter started the kernel from (not to the notebook).
  void log(const std::string& text) const {
    const std::string line = "xgradlab: " + text + "\n";
    if (write(saved_err_, line.data(), line.size()) < 0) {
      // nothing to do: the log is best effort
    }
  }

 private:
  int read_fd_[2] = {-1, -1};
  int saved_err_ = -1;
  std::mutex events_m_;
  std::vector<Event> events_;
};
}  // namespace xgradlab
