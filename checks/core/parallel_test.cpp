// Intra-op threads: the thread count (set_num_threads, the environment, the OpenMP count oneDNN
// reads) and parallel_for (chunks cover the range once, nested calls run serially, exceptions
// reach the caller, a forked child runs serially).

#include "gradlab/backend/cpu/parallel.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "gradlab/gradlab.hpp"
#include "core/fork_child.hpp"

namespace gradlab {
namespace {

using ::testing::HasSubstr;

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

// Runs body() once per thread runtime this build has (OpenMP's team, gradlab's pool).
template <class F>
void for_each_runtime(F body) {
  const std::string saved = cpu::detail::runtime_name();
  for (const char* rt : {"openmp", "pool"}) {
    try {
      cpu::detail::set_runtime(rt);
    } catch (const ValueError&) {
      continue;  // built without OpenMP
    }
    SCOPED_TRACE(std::string("runtime ") + rt);
    body();
  }
  cpu::detail::set_runtime(saved);
}

TEST(Threads, EnvironmentPicksTheCount) {
  std::string w;
  EXPECT_EQ(detail::num_threads_from_env(nullptr, nullptr, 6, w), 6);  // default: the cores
  EXPECT_EQ(w, "");
  EXPECT_EQ(detail::num_threads_from_env("3", nullptr, 6, w), 3);
  EXPECT_EQ(detail::num_threads_from_env(nullptr, "5", 6, w), 5);
  EXPECT_EQ(detail::num_threads_from_env("2", "5", 6, w), 2);        // GRADLAB_ first
  EXPECT_EQ(detail::num_threads_from_env(nullptr, "4,2", 6, w), 4);  // OpenMP's nested list
  EXPECT_EQ(detail::num_threads_from_env("", "5", 6, w), 5);         // empty: unset
  EXPECT_EQ(w, "");
}

TEST(Threads, BadEnvironmentValuesWarnAndUseTheCores) {
  for (const char* bad : {"0", "-2", "two", "3x", "1.5", "99999999999", "4,2"}) {
    std::string w;
    EXPECT_EQ(detail::num_threads_from_env(bad, nullptr, 6, w), 6) << bad;
    EXPECT_THAT(w, HasSubstr(std::string("ignoring GRADLAB_NUM_THREADS='") + bad + "'"));
    EXPECT_THAT(w, HasSubstr("expected a positive integer"));
    EXPECT_THAT(w, HasSubstr("using 6 threads"));
  }
  std::string w;
  EXPECT_EQ(detail::num_threads_from_env(nullptr, "abc", 3, w), 3);
  EXPECT_THAT(w, HasSubstr("ignoring OMP_NUM_THREADS='abc'"));
}

// Run by StartupReadsTheEnvironment in a child process (disabled in a normal run).
// "openmp=" is the count oneDNN would use: the start-up count reaches OpenMP too.
TEST(Threads, DISABLED_PrintCount) {
  const int n = get_num_threads();
  std::printf("count=%d openmp=%d\n", n, cpu::detail::runtime_threads());
}

// What this test binary prints (stdout and stderr) when started with `env` in front.
std::string run_self(const std::string& env) {
  // NOTE: resolved here: inside the command, /proc/self/exe would be the shell's.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "env -u GRADLAB_NUM_THREADS -u OMP_NUM_THREADS " + env + " '" + self +
                          "' --gtest_also_run_disabled_tests"
                          " --gtest_filter=Threads.DISABLED_PrintCount 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 256> buf;
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  pclose(p);
  return out;
}

TEST(Threads, StartupReadsTheEnvironment) {
  const std::string c = std::to_string(detail::available_cores());
  const std::string cores = "count=" + c + " openmp=" + c + "\n";
  EXPECT_THAT(run_self(""), HasSubstr(cores));
  EXPECT_THAT(run_self("GRADLAB_NUM_THREADS=3"), HasSubstr("count=3 openmp=3\n"));
  EXPECT_THAT(run_self("OMP_NUM_THREADS=5"), HasSubstr("count=5 openmp=5\n"));
  EXPECT_THAT(run_self("GRADLAB_NUM_THREADS=2 OMP_NUM_THREADS=5"), HasSubstr("count=2 openmp=2\n"));
  const std::string bad = run_self("GRADLAB_NUM_THREADS=lots");
  EXPECT_THAT(
      bad, HasSubstr("gradlab: ignoring GRADLAB_NUM_THREADS='lots'; expected a positive integer"));
  EXPECT_THAT(bad, HasSubstr(cores));
}

TEST(Threads, AvailableCoresIsPositive) { EXPECT_GE(detail::available_cores(), 1); }

TEST(Threads, SetNumThreadsRejectsNonPositive) {
  ThreadsGuard guard;
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  for (int bad : {0, -1}) {
    try {
      set_num_threads(bad);
      ADD_FAILURE() << "no exception for " << bad;
    } catch (const ValueError& e) {
      EXPECT_THAT(e.what(), HasSubstr("set_num_threads: the thread count must be positive"));
      EXPECT_THAT(e.what(), HasSubstr("expected n >= 1, got " + std::to_string(bad)));
    }
  }
  EXPECT_EQ(get_num_threads(), 3);
}

TEST(ParallelFor, ChunksCoverTheRangeOnceAndRespectTheGrain) {
  ThreadsGuard guard;
  for_each_runtime([&] {
    for (int t : {1, 2, 3, 8}) {
      set_num_threads(t);
      for (int64_t n : {0, 1, 99, 100, 101, 1000, 12345}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n) + 1);
        std::atomic<int> chunks{0};
        std::atomic<int64_t> smallest{n};
        cpu::parallel_for(1, n + 1, 100, [&](int64_t b, int64_t e) {
          ++chunks;
          int64_t s = smallest.load();
          while (e - b < s && !smallest.compare_exchange_weak(s, e - b)) {
          }
          for (int64_t i = b; i < e; ++i) ++hits[i];
        });
        for (int64_t i = 1; i <= n; ++i)
          ASSERT_EQ(hits[i], 1) << "t=" << t << " n=" << n << " i=" << i;
        EXPECT_LE(chunks, t);
        if (chunks > 1) {
          EXPECT_GE(smallest.load(), 100) << "t=" << t << " n=" << n;
        }
        if (n < 200) {
          EXPECT_LE(chunks, 1);
        }
      }
    }
  });
}

TEST(ParallelFor, NestedCallsRunSerially) {
  ThreadsGuard guard;
  for_each_runtime([&] {
    set_num_threads(4);
    EXPECT_FALSE(cpu::in_parallel_region());
    std::atomic<int> inner_chunks{0}, outer_chunks{0};
    cpu::parallel_for(0, 4, 1, [&](int64_t, int64_t) {
      ++outer_chunks;
      EXPECT_TRUE(cpu::in_parallel_region());
      cpu::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
        ++inner_chunks;
        EXPECT_EQ(b, 0);
        EXPECT_EQ(e, 1000);
      });
    });
    EXPECT_EQ(outer_chunks, 4);
    EXPECT_EQ(inner_chunks, 4);  // one whole-range chunk per outer chunk
    EXPECT_FALSE(cpu::in_parallel_region());
  });
}

TEST(ParallelFor, AnExceptionInAChunkReachesTheCaller) {
  ThreadsGuard guard;
  for_each_runtime([&] {
    set_num_threads(4);
    for (int rep = 0; rep < 20; ++rep) {
      try {
        cpu::parallel_for(0, 400, 1, [&](int64_t b, int64_t) {
          if (b >= 200) throw ValueError("chunk " + std::to_string(b));
        });
        ADD_FAILURE() << "no exception";
      } catch (const ValueError& e) {
        EXPECT_THAT(e.what(), HasSubstr("chunk "));
      }
    }
    // The pool still works afterwards, and so does a whole op.
    std::atomic<int64_t> total{0};
    cpu::parallel_for(0, 400, 1, [&](int64_t b, int64_t e) { total += e - b; });
    EXPECT_EQ(total, 400);
    EXPECT_EQ(sum(ones({300000})).item<float>(), 300000.0f);
  });
}

TEST(ParallelFor, CallsFromSeveralThreadsAtOnceAllComplete) {
  ThreadsGuard guard;
  for_each_runtime([&] {
    set_num_threads(3);
    std::vector<std::thread> users;
    std::atomic<int64_t> total{0};
    for (int u = 0; u < 4; ++u)
      users.emplace_back([&] {
        for (int rep = 0; rep < 200; ++rep)
          cpu::parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
      });
    for (auto& th : users) th.join();
    EXPECT_EQ(total, 4 * 200 * 1000);
  });
}

// oneDNN sizes its regions by omp_get_max_threads(), a per-thread OpenMP setting: set_num_threads
// sets it on the calling thread, and sync_runtime_threads() (called before every oneDNN primitive)
// on any other thread.
TEST(Threads, SetNumThreadsGovernsTheOpenMPCount) {
  ThreadsGuard guard;
  std::printf("parallel_for runs on: %s\n", cpu::detail::runtime_name());
  for (int n : {3, 1, 2}) {
    set_num_threads(n);
    EXPECT_EQ(cpu::detail::runtime_threads(), n);
    int other = 0;
    std::thread([&] {
      cpu::detail::sync_runtime_threads();
      other = cpu::detail::runtime_threads();
    }).join();
    EXPECT_EQ(other, n) << "a second thread, before a oneDNN call";
  }
}

// init_num_threads (LibTorch's) gives a thread the program started the intra-op count in its own
// OpenMP setting, which oneDNN reads.
TEST(Threads, InitNumThreadsAppliesTheCountToTheCallingThread) {
  ThreadsGuard guard;
  auto in_new_thread = [](bool init) {
    int seen = 0;
    std::thread([&] {
      if (init) init_num_threads();
      seen = cpu::detail::runtime_threads();
    }).join();
    return seen;
  };
  // A new thread starts with OpenMP's default (its own setting); counts other than it show the
  // call's effect.
  const int fresh = in_new_thread(false);
  for (int n : {fresh + 1, fresh + 2}) {
    set_num_threads(n);
    EXPECT_EQ(in_new_thread(true), n);
  }
}

// The inter-op count, LibTorch's rules: n >= 1, set once, before the first get (which fixes it).
// Each sequence runs in a forked child, since the count is fixed for the life of a process.
TEST(Threads, InterOpCountIsSetOnceBeforeItIsRead) {
  auto in_child = [](const char* what, auto body) {
    std::fflush(nullptr);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(body() ? 0 : 1);
    testing_fork::expect_child_succeeds(child, what, what);
  };
  auto throws_value_error = [](auto f, const char* part) {
    try {
      f();
    } catch (const ValueError& e) {
      return std::string(e.what()).find(part) != std::string::npos;
    }
    return false;
  };
  in_child("set 3, then get 3; a second set throws and keeps 3", [&] {
    set_num_interop_threads(3);
    const bool second = throws_value_error([] { set_num_interop_threads(2); },
                                           "set_num_interop_threads: the inter-op thread count is already fixed");
    return second && get_num_interop_threads() == 3;
  });
  in_child("get first gives the cores and fixes the count", [&] {
    const int first = get_num_interop_threads();
    const bool late = throws_value_error([] { set_num_interop_threads(1); }, "already fixed");
    return first == detail::available_cores() && late && get_num_interop_threads() == first;
  });
  in_child("non-positive counts throw and leave the count open", [&] {
    const bool bad = throws_value_error([] { set_num_interop_threads(0); }, "expected n >= 1, got 0") &&
                     throws_value_error([] { set_num_interop_threads(-2); }, "expected n >= 1, got -2");
    set_num_interop_threads(1);
    return bad && get_num_interop_threads() == 1;
  });
}

TEST(Threads, SetRuntimeRejectsAnUnknownName) {
  const std::string saved = cpu::detail::runtime_name();
  try {
    cpu::detail::set_runtime("tbb");
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("set_runtime: unknown or unavailable thread runtime"));
  }
  EXPECT_EQ(cpu::detail::runtime_name(), saved);
}

// A forked child (an MPI relaunch, a DataLoader worker) does not have the parent's OpenMP team or
// pool threads (libgomp's region would hang there): its parallel_for runs every chunk on its own
// thread, and oneDNN gets 1 thread.
// The child reports through its exit status; a hang is killed after 30 s and fails the test.
TEST(ParallelFor, AForkedChildRunsSerially) {
  ThreadsGuard guard;
  for_each_runtime([&] {
    set_num_threads(2);
    std::atomic<int64_t> total{0};
    for (int rep = 0; rep < 10; ++rep)  // the parent's team exists before the fork
      cpu::parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    ASSERT_EQ(total, 10 * 1000);
    // A float32 convolution with 8 input channels: oneDNN's path where it is built (its OpenMP team
    // now exists in the parent too).
    manual_seed(5);
    const Tensor x = randn({4, 8, 16, 16}), w = randn({8, 8, 3, 3});
    const Tensor y = conv2d(x, w);
    // A bfloat16 matmul: oneDNN's native bf16 path where the CPU has AVX-512 BF16 (bf16_native.cpp
    // keeps its own primitives), else float32 OpenBLAS.
    const Tensor h = randn({64, 64}).to(kBFloat16), hh = matmul(h, h);
    std::fflush(nullptr);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const std::thread::id self = std::this_thread::get_id();
      std::atomic<int> chunks{0}, elsewhere{0};
      cpu::parallel_for(0, 1000, 10, [&](int64_t, int64_t) {
        ++chunks;
        if (std::this_thread::get_id() != self) ++elsewhere;
      });
      cpu::detail::sync_runtime_threads();
      const bool ok = chunks == 2 && elsewhere == 0 && cpu::detail::runtime_threads() == 1 &&
                      sum(ones({300000})).item<float>() == 300000.0f &&
                      conv2d(x, w).sizes() == y.sizes() && matmul(h, h).sizes() == hh.sizes();
      ::_exit(ok ? 0 : 1);
    }
    testing_fork::expect_child_succeeds(child, "parallel_for", "the child ran chunks on other threads or got a wrong sum");
  });
}

TEST(ParallelFor, LargeOpsMatchTheirOneThreadResults) {
  ThreadsGuard guard;
  manual_seed(3);
  const Tensor x = randn({300, 400});
  set_num_threads(1);
  const Tensor e1 = exp(x), c1 = x.t().contiguous(), s1 = sum(x, {1}), m1 = std::get<1>(x.max(1));
  set_num_threads(2);
  EXPECT_TRUE(equal(exp(x), e1));
  EXPECT_TRUE(equal(x.t().contiguous(), c1));
  EXPECT_TRUE(equal(sum(x, {1}), s1));
  EXPECT_TRUE(equal(std::get<1>(x.max(1)), m1));
}

}  // namespace
}  // namespace gradlab
