// Start-up time of gradlab's Jupyter kernel: from exec to a finished first gradlab op, with the
// precompiled prelude (the default) and without it (XGRADLAB_PCH=0: clang parses gradlab.hpp).
//
//   kernel_start/precompiled   `xgradlab --start-only` (start the Interpreter, load libgradlab,
//                              libgradlab_display and the prelude, run ones({3}).sum(), exit)
//   kernel_start/parsed        the same with XGRADLAB_PCH=0
//   exec_baseline              exec of /bin/true, measured in the same run: what any process
//                              start costs here
// Wall-clock time per start (UseRealTime), a few starts each. Run from the repository root:
//   build/release/bench/bench_kernel_start
// Built only with the kernel (kernel/CMakeLists.txt); XGRADLAB_EXECUTABLE is its path.

#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

// Runs `argv` with `extra_env` added to this process's environment; returns its exit status.
int run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  std::vector<char*> args, env;
  std::vector<std::string> a = argv, e = extra_env;
  for (std::string& s : a) args.push_back(s.data());
  args.push_back(nullptr);
  for (char** p = environ; *p != nullptr; ++p) env.push_back(*p);
  for (std::string& s : e) env.push_back(s.data());
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1 /* O_WRONLY */, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void start(benchmark::State& state, bool precompiled) {
  const std::vector<std::string> env = {precompiled ? "XGRADLAB_PCH=1" : "XGRADLAB_PCH=0"};
  for (auto _ : state) {
    if (run({XGRADLAB_EXECUTABLE, "--start-only"}, env) != 0) {
      state.SkipWithError("xgradlab --start-only failed (run it by hand to see why)");
      return;
    }
  }
}

void BM_kernel_start_precompiled(benchmark::State& state) { start(state, true); }
void BM_kernel_start_parsed(benchmark::State& state) { start(state, false); }
void BM_exec_baseline(benchmark::State& state) {
  for (auto _ : state) run({"/bin/true"}, {});
}

}  // namespace

BENCHMARK(BM_kernel_start_precompiled)->Name("kernel_start/precompiled")->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_kernel_start_parsed)->Name("kernel_start/parsed")->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_exec_baseline)->Name("exec_baseline")->Iterations(20)->UseRealTime()->Unit(benchmark::kMillisecond);
