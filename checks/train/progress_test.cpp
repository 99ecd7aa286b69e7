// ProgressBar: plain periodic lines without a single control code when the stream is not a
// terminal; a redrawn line on a terminal; terminal detection through a real pty and a pipe.

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <sstream>
#include <string>

namespace gradlab {
namespace {

bool has_control_codes(const std::string& s) {
  for (char c : s)
    if (c == '\r' || c == '\x1b' || c == '\b') return true;
  return false;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Sparkline, ScalesBetweenMinAndMax) {
  EXPECT_EQ(train::sparkline({0, 1, 2, 3, 4, 5, 6, 7}, 8), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(train::sparkline({7, 0}, 8), "█▁");
  EXPECT_EQ(train::sparkline({2, 2, 2}, 8), "▄▄▄");
  // 8 values averaged into 4 groups: 0.5, 2.5, 4.5, 6.5
  EXPECT_EQ(train::sparkline({0, 1, 2, 3, 4, 5, 6, 7}, 4), "▁▃▆█");
  EXPECT_EQ(train::sparkline({1, NAN, 0}, 8), "█!▁");
  EXPECT_EQ(train::sparkline({}, 8), "");
}

TEST(Sparkline, OnAFixedScaleAFlatCurvePrintsFlat) {
  // auto-scaled, a 2% drop fills the whole range; on a shared [0, 2.5] scale it stays at the top
  EXPECT_EQ(train::sparkline({2.30, 2.29, 2.27, 2.25}, 4), "█▇▄▁");
  EXPECT_EQ(train::sparkline({2.30, 2.29, 2.27, 2.25}, 4, 0, 2.5), "▇▇▇▇");
  EXPECT_EQ(train::sparkline({-1, 0, 1.25, 2.5, 9}, 8, 0, 2.5), "▁▁▅██");  // clamped
  EXPECT_EQ(train::sparkline({1, INFINITY, NAN}, 8, 0, 2.5), "▄!!");
  EXPECT_EQ(train::sparkline({1, 2}, 8, 1, 1), "▄▄");
}

TEST(ProgressBar, PlainModeWritesPeriodicLinesAndNoControlCodes) {
  std::ostringstream out;
  {
    train::ProgressBar bar(100, train::ProgressOptions().desc("fit").tty(false), out);
    EXPECT_FALSE(bar.is_tty());
    for (int i = 0; i < 100; ++i) bar.update(1.0 / (i + 1));
    bar.close();
  }
  const std::string s = out.str();
  EXPECT_FALSE(has_control_codes(s)) << s;
  EXPECT_EQ(count_lines(s), 10) << s;  // every total/10 steps, the last one at 100/100
  EXPECT_NE(s.find("fit 10/100 (10%)  loss 0.1000  "), std::string::npos) << s;
  EXPECT_NE(s.find("fit 100/100 (100%)  loss 0.0100  "), std::string::npos) << s;
  EXPECT_NE(s.find(" steps/s\n"), std::string::npos);
  EXPECT_NE(s.find("ETA "), std::string::npos);
  // stopped early: close() prints the last state once
  std::ostringstream early;
  {
    train::ProgressBar bar(100, train::ProgressOptions().tty(false).plain_every(50), early);
    for (int i = 0; i < 7; ++i) bar.update(2.0);
  }  // the destructor closes
  EXPECT_EQ(count_lines(early.str()), 1) << early.str();
  EXPECT_NE(early.str().find("train 7/100 (7%)"), std::string::npos) << early.str();
}

TEST(ProgressBar, TerminalModeRedrawsOneLine) {
  std::ostringstream out;
  {
    train::ProgressBar bar(50, train::ProgressOptions().tty(true).min_interval_s(0), out);
    for (int i = 0; i < 50; ++i) bar.update(1.0);
    bar.write("a message between two redraws");
  }
  const std::string s = out.str();
  EXPECT_NE(s.find('\r'), std::string::npos);
  EXPECT_NE(s.find("\x1b[K"), std::string::npos);
  EXPECT_NE(s.find("100%|████████████████████| 50/50"), std::string::npos) << s;
  EXPECT_NE(s.find("\r\x1b[Ka message between two redraws\n"), std::string::npos);
  EXPECT_EQ(s.back(), '\n');
}

// Runs a ProgressBar on std::cout in a child whose stdout is `fd`; returns what it wrote.
std::string child_output(bool use_pty) {
  int master = -1, slave = -1, pipefd[2] = {-1, -1};
  if (use_pty) {
    EXPECT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  } else {
    EXPECT_EQ(::pipe(pipefd), 0);
    master = pipefd[0], slave = pipefd[1];
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(slave, STDOUT_FILENO);
    ::close(master);
    {
      train::ProgressBar bar(20, train::ProgressOptions().min_interval_s(0));  // tty unset: detect
      for (int i = 0; i < 20; ++i) bar.update(0.5);
      std::cout << (bar.is_tty() ? "[tty]" : "[plain]") << "\n";
    }
    std::cout.flush();
    ::_exit(0);
  }
  ::close(slave);
  std::string got;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EOF (pipe) or EIO (pty: the child closed its side)
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return got;
}

TEST(ProgressBar, TheEnvironmentOverridesTheDetection) {
  std::ostringstream out;  // a string stream is never a terminal...
  ::setenv("GRADLAB_PROGRESS", "tty", 1);
  EXPECT_FALSE(train::ProgressBar(3, {}, out).is_tty());  // ...and the override is for std::cout
  const bool on_cout = train::ProgressBar(3, {}).is_tty();
  ::setenv("GRADLAB_PROGRESS", "plain", 1);
  const bool plain = train::ProgressBar(3, {}).is_tty();
  ::unsetenv("GRADLAB_PROGRESS");
  EXPECT_TRUE(on_cout);
  EXPECT_FALSE(plain);
}

TEST(ProgressBar, DetectsATerminalThroughAPtyAndPlainThroughAPipe) {
  const std::string tty = child_output(true);
  EXPECT_NE(tty.find("[tty]"), std::string::npos) << tty;
  EXPECT_NE(tty.find("\x1b[K"), std::string::npos) << tty;
  const std::string plain = child_output(false);
  EXPECT_NE(plain.find("[plain]"), std::string::npos) << plain;
  EXPECT_FALSE(has_control_codes(plain)) << plain;
  EXPECT_NE(plain.find("train 20/20 (100%)"), std::string::npos) << plain;
}

}  // namespace
}  // namespace gradlab
