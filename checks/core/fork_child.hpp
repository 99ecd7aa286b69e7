#pragma once
// Waits for a forked child with a deadline, for the checks that a child process (DataLoader
// workers, user code that forks) never hangs in a thread runtime inherited from its parent.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace gradlab::testing_fork {

/// Waits up to `seconds` for `child`; a child still running then is killed and reported as hung
/// (`what`: what it was doing). Passes when it exited with status 0; `failure` says what a
/// non-zero status means.
inline void expect_child_succeeds(pid_t child, const char* what, const char* failure, int seconds = 30) {
  int status = 0;
  pid_t done = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "the forked child hung in " << what;
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << failure;
}

}  // namespace gradlab::testing_fork
