#include "gradlab/distributed/process_group.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/distributed/backend.hpp"

namespace gradlab::distributed {

namespace {

std::string seconds(std::chrono::milliseconds t) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", static_cast<double>(t.count()) / 1000.0);
  return s;
}

// `peers`: what Backend::take_notes heard after ask_peers, entry `self` being this rank (empty:
// nobody was asked).
std::string timeout_message(const std::string& what, std::chrono::milliseconds timeout,
                            const std::vector<std::optional<std::string>>& peers = {}, size_t self = 0,
                            std::chrono::milliseconds grace = {}) {
  std::string why = "another rank failed, hangs, or called a different collective";
  if (!peers.empty()) {
    std::string silent, same, elsewhere;
    for (size_t r = 0; r < peers.size(); ++r) {
      if (r == self) continue;
      const auto& p = peers[r];
      const std::string name = std::to_string(r);
      if (!p) {
        silent += (silent.empty() ? "" : ", ") + name;
        continue;
      }
      const size_t in = p->find(" in ");
      if (in != std::string::npos && p->substr(in + 4) == what) same += (same.empty() ? "" : ", ") + name;
      else elsewhere += "; rank " + name + " " + *p;
    }
    why = silent.empty() ? "every peer answered" : "no answer from rank " + silent + " within " +
                                                      seconds(grace) + " s (gone, hung, unreachable, "
                                                      "or inside a blocking collective)";
    if (!same.empty()) why += "; rank " + same + " waits in the same collective";
    why += elsewhere;
  }
  return what + " did not complete within " + seconds(timeout) + " s: " + why +
         "; aborting the job so that no rank waits forever";
}

// Bounds the blocking collectives (which cannot be polled): a thread that ends the job when one
// is still running at its deadline.
class Watchdog {
 public:
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void arm(const std::string& what, std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> l(m_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    what_ = what;
    timeout_ = timeout;
    deadline_ = std::chrono::steady_clock::now() + timeout;
    active_ = true;
    ++serial_;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> l(m_);
    active_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> l(m_);
    while (!stop_) {
      if (!active_) {
        cv_.wait(l);
        continue;
      }
      const uint64_t serial = serial_;
      if (cv_.wait_until(l, deadline_, [&] { return stop_ || !active_ || serial_ != serial; })) continue;
      const std::string message = timeout_message(what_, timeout_);
      l.unlock();
      abort_job(message);
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::thread thread_;
  std::string what_;
  std::chrono::milliseconds timeout_{0};
  std::chrono::steady_clock::time_point deadline_;
  bool active_ = false, stop_ = false;
  uint64_t serial_ = 0;
};

struct Group {
  std::unique_ptr<detail::Backend> backend;
  std::chrono::milliseconds timeout = kDefaultTimeout;
  bool destroyed = false;  // MPI cannot be initialized twice in one process
  Watchdog watchdog;
};
Group& group() {
  static Group g;
  return g;
}

detail::Backend& backend_for(const char* op) {
  Group& g = group();
  if (!g.backend) {
    throw DistributedError(error_message(
        op, "the default process group is not initialized", "init_process_group() first",
        g.destroyed ? "a destroyed group" : "no group",
        "call distributed::init_process_group(\"mpi\") at the start of main, and launch the "
        "program with mpirun -np <N>"));
  }
  return *g.backend;
}

std::string describe(const Tensor& t) { return to_string(t.dtype()) + " " + shape_str(t.sizes()); }

// Every collective's input check: one place, one wording.
void check_tensor(detail::Backend& b, const char* op, const Tensor& t, const char* role = "tensor") {
  GRADLAB_CHECK(t.defined(), ValueError, op, std::string(role) + " is undefined", "a tensor",
                "an undefined Tensor");
  if (t.device().type != b.device_type()) {
    throw DistributedError(error_message(
        op, std::string("the ") + b.name() + " backend cannot take this " + role + "'s device",
        b.device_type() == kCPU ? "a cpu tensor" : "a cuda tensor", "a " + t.device().str() + " tensor",
        b.device_type() == kCPU ? "use init_process_group(\"nccl\") for CUDA tensors, or move "
                                  "the tensor with .cpu()"
                                : "move the tensor with .cuda(), or use the mpi backend for CPU tensors"));
  }
  if (!b.supports(t.dtype())) {
    throw DistributedError(error_message(op, std::string("dtype not supported by the ") + b.name() + " backend",
                                         "float32, float64, int64 (mpi: also float16, bfloat16)", to_string(t.dtype()),
                                         "convert with .to(kFloat32) before the collective"));
  }
  GRADLAB_CHECK(t.is_contiguous(), ValueError, op, std::string(role) + " must be contiguous",
                "a contiguous tensor", "strides " + shape_str(Shape(t.strides().begin(), t.strides().end())),
                "call .contiguous() first and use the result");
}

void check_op(const char* op, ReduceOp rop, const Tensor& t) {
  GRADLAB_CHECK(rop != ReduceOp::AVG || t.is_floating_point(), DistributedError, op,
                "ReduceOp::AVG needs a floating-point tensor", "float32 or float64",
                to_string(t.dtype()), "use ReduceOp::SUM and divide yourself");
}

void check_src(detail::Backend& b, const char* op, int src) {
  GRADLAB_CHECK(src >= 0 && src < b.world_size(), ValueError, op, "src is not a rank of the group",
                "0 <= src < " + std::to_string(b.world_size()), std::to_string(src));
}

void bump(const Tensor& t) { t.impl()->storage->bump_version(Site::current()); }

// Polls until done or the deadline, answering peers that ask where this rank is. A quarter of
// the timeout (at most 2 s) before the deadline it asks the peers itself and keeps polling; at the
// deadline the job goes down with a message naming the collective and the peers that did not
// answer. So the rank ends at its timeout, and a collective that completes late still completes.
void wait_bounded(detail::WorkImpl& w) {
  if (w.completed) return;
  Group& g = group();
  const auto timeout = g.timeout;
  const auto grace = std::clamp<std::chrono::milliseconds>(timeout / 4, std::chrono::milliseconds(1),
                                                           std::chrono::seconds(2));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::optional<std::string>> heard;  // empty until asked; then one entry per rank
  const size_t self = g.backend ? static_cast<size_t>(g.backend->rank()) : 0;
  unsigned spins = 0;
  while (!w.test()) {
    const auto now = std::chrono::steady_clock::now();
    if (heard.empty() && g.backend && now >= deadline - grace && g.backend->ask_peers(w.what)) {
      heard.assign(static_cast<size_t>(g.backend->world_size()), std::nullopt);
      heard[self] = w.what;
    }
    if (now > deadline) {
      if (g.backend) g.backend->take_notes(w.what, heard);
      abort_job(timeout_message(w.what, timeout, heard, self, grace));
    }
    if (++spins % 64 == 0) {
      if (g.backend) g.backend->take_notes(w.what, heard);
      std::this_thread::yield();
    }
  }
  w.completed = true;
  if (w.on_complete) w.on_complete();
}

// GRADLAB_DISTRIBUTED_DEBUG=DETAIL (PyTorch: TORCH_DISTRIBUTED_DEBUG=DETAIL): before every
// collective the ranks compare what they are about to call, so a rank calling another collective,
// size or dtype gets a DistributedError instead of MPI's undefined behaviour (a hang, a crash or
// garbage). Costs one small all_gather per collective; CPU (mpi) groups only.
bool debug_detail() {
  static const bool on = [] {
    const char* v = std::getenv("GRADLAB_DISTRIBUTED_DEBUG");
    return v && std::string(v) == "DETAIL";
  }();
  return on;
}

void check_same_collective(detail::Backend& b, const std::string& what) {
  if (!debug_detail() || b.world_size() == 1 || b.device_type() != kCPU) return;
  constexpr int64_t kWords = 16;  // the first 127 bytes of the description, NUL-padded
  const int n = b.world_size();
  Tensor mine = zeros({kWords}, TensorOptions().dtype(kInt64));
  std::memcpy(mine.impl()->data(), what.data(), std::min<size_t>(what.size(), kWords * 8 - 1));
  Tensor all = zeros({kWords * n}, TensorOptions().dtype(kInt64));
  auto w = b.all_gather(mine, all, /*blocking=*/true);
  while (!w->test()) {
  }
  auto text = [&](int r) { return std::string(static_cast<const char*>(all.impl()->data()) + r * kWords * 8); };
  const std::string first = text(0);
  for (int r = 1; r < n; ++r) {
    if (text(r) == first) continue;
    throw DistributedError(error_message(
        what.substr(0, what.find(' ')), "the ranks called different collectives",
        "rank 0: " + first, "rank " + std::to_string(r) + ": " + text(r),
        "every rank must call the same collectives in the same order, with the same shapes and dtypes"));
  }
}

Work start(std::unique_ptr<detail::WorkImpl> w, std::string what) {
  w->what = std::move(what);
  return Work(std::shared_ptr<detail::WorkImpl>(std::move(w)));
}

// A blocking collective under the watchdog, then (for a backend whose "blocking" call only
// queues work, NCCL) a bounded poll.
template <class F>
void run_blocking(const std::string& what, F&& start_op) {
  Group& g = group();
  check_same_collective(*g.backend, what);
  g.watchdog.arm(what, g.timeout);
  std::unique_ptr<detail::WorkImpl> w;
  try {
    w = start_op();
  } catch (...) {
    g.watchdog.disarm();
    throw;
  }
  g.watchdog.disarm();
  w->what = what;
  wait_bounded(*w);
}

void uncaught_exception_handler() {
  std::string what = "std::terminate was called without an exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = std::string("uncaught exception: ") + x.what();
    } catch (...) {
      what = "uncaught exception of a non-std type";
    }
  }
  abort_job(what);
}

}  // namespace

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

// ---- Work -------------------------------------------------------------------------------------

Work::Work(std::shared_ptr<detail::WorkImpl> impl) : impl_(std::move(impl)) {}

bool Work::is_completed() {
  if (!impl_) return true;
  if (impl_->completed) return true;
  if (!impl_->test()) return false;
  impl_->completed = true;
  if (impl_->on_complete) impl_->on_complete();
  return true;
}

void Work::wait() {
  if (impl_) wait_bounded(*impl_);
}

// ---- the group ----------------------------------------------------------------------------------

void init_process_group(const std::string& backend, std::chrono::milliseconds timeout) {
  Group& g = group();
  GRADLAB_CHECK(!g.backend, DistributedError, "init_process_group",
                "the default process group is already initialized", "one call per process",
                "a second call (backend " + (g.backend ? g.backend->name() : std::string()) + ")");
  GRADLAB_CHECK(!g.destroyed, DistributedError, "init_process_group",
                "the default process group was destroyed; MPI cannot start twice in one process",
                "one group per process", "a call after destroy_process_group()");
  GRADLAB_CHECK(timeout.count() > 0, ValueError, "init_process_group", "timeout must be positive",
                "> 0 ms", std::to_string(timeout.count()) + " ms");
  if (backend == "mpi") {
    g.backend = detail::make_mpi_backend();
  } else if (backend == "nccl") {
    g.backend = detail::make_nccl_backend();
  } else {
    throw DistributedError(error_message("init_process_group", "unknown backend", "\"mpi\" or \"nccl\"",
                                         "\"" + backend + "\"",
                                         "gloo is not part of gradlab; use \"mpi\" for CPU tensors"));
  }
  g.timeout = timeout;
  // A rank that dies by an exception takes the job down with its message (instead of leaving
  // the others blocked in their next collective until their timeout).
  std::set_terminate(uncaught_exception_handler);
}

bool is_initialized() { return group().backend != nullptr; }
bool is_mpi_available() { return detail::mpi_compiled(); }

bool is_launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

int get_rank() { return backend_for("get_rank").rank(); }
int get_world_size() { return backend_for("get_world_size").world_size(); }
std::string get_backend() { return backend_for("get_backend").name(); }
std::chrono::milliseconds get_timeout() { return group().timeout; }
void set_timeout(std::chrono::milliseconds timeout) {
  GRADLAB_CHECK(timeout.count() > 0, ValueError, "set_timeout", "timeout must be positive", "> 0 ms",
                std::to_string(timeout.count()) + " ms");
  group().timeout = timeout;
}

void destroy_process_group() {
  Group& g = group();
  if (!g.backend) return;
  g.backend.reset();
  g.destroyed = true;
}

// ---- collectives --------------------------------------------------------------------------------

namespace {
std::string check_all_reduce(detail::Backend& b, const Tensor& tensor, ReduceOp op) {
  check_tensor(b, "all_reduce", tensor);
  check_op("all_reduce", op, tensor);
  bump(tensor);
  return "all_reduce (" + to_string(op) + ", " + describe(tensor) + ")";
}
void divide(const Tensor& t, int n) {
  NoGradGuard ng;
  Tensor(t).div_(n);
}
}  // namespace

Work all_reduce_async(const Tensor& tensor, ReduceOp op) {
  detail::Backend& b = backend_for("all_reduce");
  std::string what = check_all_reduce(b, tensor, op);
  check_same_collective(b, what);
  auto w = b.all_reduce(tensor, op == ReduceOp::AVG ? ReduceOp::SUM : op, /*blocking=*/false);
  if (op == ReduceOp::AVG && b.world_size() > 1) w->on_complete = [tensor, n = b.world_size()] { divide(tensor, n); };
  return start(std::move(w), std::move(what));
}

void all_reduce(const Tensor& tensor, ReduceOp op) {
  detail::Backend& b = backend_for("all_reduce");
  const std::string what = check_all_reduce(b, tensor, op);
  run_blocking(what, [&] { return b.all_reduce(tensor, op == ReduceOp::AVG ? ReduceOp::SUM : op, true); });
  if (op == ReduceOp::AVG && b.world_size() > 1) divide(tensor, b.world_size());
}

void broadcast(const Tensor& tensor, int src) {
  detail::Backend& b = backend_for("broadcast");
  check_tensor(b, "broadcast", tensor);
  check_src(b, "broadcast", src);
  bump(tensor);
  run_blocking("broadcast (src " + std::to_string(src) + ", " + describe(tensor) + ")",
               [&] { return b.broadcast(tensor, src, true); });
}

void broadcast_coalesced(const std::vector<Tensor>& tensors, int src) {
  detail::Backend& b = backend_for("broadcast_coalesced");
  check_src(b, "broadcast_coalesced", src);
  NoGradGuard ng;
  // One flat message per dtype, in first-seen order (the same on every rank for the same list).
  std::vector<ScalarType> dtypes;
  for (const Tensor& t : tensors) {
    check_tensor(b, "broadcast_coalesced", t);
    if (std::find(dtypes.begin(), dtypes.end(), t.dtype()) == dtypes.end()) dtypes.push_back(t.dtype());
  }
  for (ScalarType dt : dtypes) {
    int64_t n = 0;
    for (const Tensor& t : tensors)
      if (t.dtype() == dt) n += t.numel();
    Tensor flat = empty({n}, TensorOptions().dtype(dt).device(tensors.front().device()));
    int64_t off = 0;
    for (const Tensor& t : tensors)
      if (t.dtype() == dt) {
        flat.narrow(0, off, t.numel()).copy_(t.reshape({t.numel()}));
        off += t.numel();
      }
    broadcast(flat, src);
    off = 0;
    for (const Tensor& t : tensors)
      if (t.dtype() == dt) {
        Tensor(t).copy_(flat.narrow(0, off, t.numel()).reshape(t.sizes()));
        off += t.numel();
      }
  }
}

void all_gather(std::vector<Tensor>& outputs, const Tensor& input) {
  detail::Backend& b = backend_for("all_gather");
  check_tensor(b, "all_gather", input, "input");
  const auto n = static_cast<size_t>(b.world_size());
  GRADLAB_CHECK(outputs.size() == n, ValueError, "all_gather", "one output tensor per rank is needed",
                std::to_string(n) + " tensors", std::to_string(outputs.size()) + " tensors");
  for (Tensor& o : outputs) {
    if (!o.defined()) o = empty(input.sizes(), input.options());
    GRADLAB_CHECK(o.sizes() == input.sizes() && o.dtype() == input.dtype(), ShapeError, "all_gather",
                  "every output must have the input's shape and dtype", describe(input), describe(o));
  }
  Tensor flat = empty({static_cast<int64_t>(n) * input.numel()}, input.options());
  run_blocking("all_gather (" + describe(input) + ")", [&] { return b.all_gather(input, flat, true); });
  NoGradGuard ng;
  for (size_t r = 0; r < n; ++r)
    outputs[r].copy_(flat.narrow(0, static_cast<int64_t>(r) * input.numel(), input.numel()).reshape(input.sizes()));
}

void reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) {
  detail::Backend& b = backend_for("reduce_scatter");
  check_tensor(b, "reduce_scatter", output, "output");
  check_op("reduce_scatter", op, output);
  const auto n = static_cast<size_t>(b.world_size());
  GRADLAB_CHECK(inputs.size() == n, ValueError, "reduce_scatter", "one input tensor per rank is needed",
                std::to_string(n) + " tensors", std::to_string(inputs.size()) + " tensors");
  NoGradGuard ng;
  Tensor flat = empty({static_cast<int64_t>(n) * output.numel()}, output.options());
  for (size_t r = 0; r < n; ++r) {
    GRADLAB_CHECK(inputs[r].defined() && inputs[r].sizes() == output.sizes() && inputs[r].dtype() == output.dtype(),
                  ShapeError, "reduce_scatter", "every input must have the output's shape and dtype",
                  describe(output), inputs[r].defined() ? describe(inputs[r]) : "an undefined Tensor");
    flat.narrow(0, static_cast<int64_t>(r) * output.numel(), output.numel()).copy_(inputs[r].reshape({output.numel()}));
  }
  bump(output);
  run_blocking("reduce_scatter (" + to_string(op) + ", " + describe(output) + ")",
               [&] { return b.reduce_scatter(flat, output, op == ReduceOp::AVG ? ReduceOp::SUM : op, true); });
  if (op == ReduceOp::AVG && n > 1) Tensor(output).div_(static_cast<int64_t>(n));
}

void barrier() {
  detail::Backend& b = backend_for("barrier");
  run_blocking("barrier", [&] { return b.barrier(true); });
}

void abort_job(const std::string& message) {
  Group& g = group();
  std::fflush(stdout);
  std::cout.flush();
  if (g.backend) {
    std::fprintf(stderr, "gradlab.distributed: rank %d of %d: %s\n", g.backend->rank(),
                 g.backend->world_size(), message.c_str());
    std::fflush(stderr);
    g.backend->abort_job();
  }
  std::fprintf(stderr, "gradlab.distributed: %s\n", message.c_str());
  std::fflush(stderr);
  detail::mpi_abort_world();
  std::abort();
}

// ---- relaunch -----------------------------------------------------------------------------------

#ifndef GRADLAB_MPIEXEC
#define GRADLAB_MPIEXEC "mpirun"
#endif

std::optional<int> relaunch_with_mpirun(int world_size, int argc, char** argv) {
  if (is_launched()) return std::nullopt;
  GRADLAB_CHECK(world_size >= 1, ValueError, "relaunch_with_mpirun", "world_size must be >= 1", ">= 1",
                std::to_string(world_size));
  GRADLAB_CHECK(detail::mpi_compiled(), DistributedError, "relaunch_with_mpirun",
                "gradlab was built without MPI", "a build that found MPI (libopenmpi-dev)", "no MPI",
                "install libopenmpi-dev openmpi-bin (tools/setup.sh) and reconfigure");
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  GRADLAB_CHECK(len > 0, DistributedError, "relaunch_with_mpirun", "cannot find this program's path",
                "/proc/self/exe", "no link");
  self[len] = '\0';
  std::vector<std::string> args = {GRADLAB_MPIEXEC, "-np", std::to_string(world_size)};
  // NOTE: --oversubscribe is Open MPI's flag (more ranks than cores); MPICH's mpiexec has none.
  if (detail::mpi_library_version().find("Open MPI") != std::string::npos) args.push_back("--oversubscribe");
  args.push_back(self);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::cout.flush();
  const pid_t pid = ::fork();
  GRADLAB_CHECK(pid >= 0, DistributedError, "relaunch_with_mpirun", "fork failed", "a child process", "none");
  if (pid == 0) {
    // NOTE: no OMPI_ALLOW_RUN_AS_ROOT here: running MPI as root is the caller's decision (a
    // launch script, a test's ENVIRONMENT or the program's main set it where they mean it).
    ::setenv("OPENBLAS_NUM_THREADS", "1", 0);  // 2 ranks on 2 cores: no BLAS threads on top
    ::setenv("GRADLAB_NUM_THREADS", "1", 0);   // nor intra-op threads
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "relaunch_with_mpirun: cannot run %s; hint: install openmpi-bin\n", cargs[0]);
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    GRADLAB_CHECK(errno == EINTR, DistributedError, "relaunch_with_mpirun", "waitpid failed",
                  "mpirun's exit status", "errno " + std::to_string(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace gradlab::distributed
