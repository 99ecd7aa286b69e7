// The "mpi" backend: every collective is a non-blocking MPI call (MPI_Iallreduce, MPI_Ibcast,
// ...) on a private duplicate of MPI_COMM_WORLD whose error handler returns codes instead of
// aborting, so an MPI error becomes a DistributedError naming the collective, and every wait is
// a poll (MPI_Test) that process_group.cpp bounds by the group's timeout. A second duplicate
// carries the short notes with which a rank whose wait timed out asks its peers where they are
// (ask_peers / answer_peers), so the timeout message can name the rank that is gone.
// Compiled to stubs that throw when CMake did not find MPI (GRADLAB_HAVE_MPI undefined).

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include "gradlab/core/half.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/distributed/backend.hpp"

#ifdef GRADLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace gradlab::distributed::detail {

#ifdef GRADLAB_HAVE_MPI

namespace {

// Finalizes MPI at exit when gradlab initialized it (a rank leaving without MPI_Finalize makes
// mpirun report the job as failed).
void finalize_at_exit() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}

// float16 and bfloat16 travel as 16-bit words (2 bytes an element on the wire, the point of
// DDP's fp16 / bf16 compression hooks). MPI has no arithmetic on them, so their SUM and MAX are
// user-defined ops: each element widened to float, combined, rounded back once (round to
// nearest even), as a half kernel does. Commutative, so MPI may pair the ranks in any order;
// with two ranks the result does not depend on it.
template <class H, float (*ToFloat)(H), H (*FromFloat)(float), bool Max>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = ToFloat(a[i]), y = ToFloat(b[i]);
    b[i] = FromFloat(Max ? (x > y || x != x ? x : y) : x + y);
  }
}
struct HalfOps {
  MPI_Op sum[2], max[2];  // [0] float16, [1] bfloat16
  HalfOps() {
    MPI_Op_create(&half_op<Half, &half_to_float, &half_from_float, false>, 1, &sum[0]);
    MPI_Op_create(&half_op<Half, &half_to_float, &half_from_float, true>, 1, &max[0]);
    MPI_Op_create(&half_op<BFloat16, &bf16_to_float, &bf16_from_float, false>, 1, &sum[1]);
    MPI_Op_create(&half_op<BFloat16, &bf16_to_float, &bf16_from_float, true>, 1, &max[1]);
  }
};
// Made on first use, after MPI_Init (never freed: MPI_Finalize releases them).
const HalfOps& half_ops() {
  static const HalfOps ops;
  return ops;
}

MPI_Datatype mpi_type(ScalarType t) {
  switch (t) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kInt64: return MPI_INT64_T;
    case kFloat16:
    case kBFloat16: return MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;  // rejected by supports() before
  }
}

MPI_Op mpi_op(ReduceOp op, ScalarType t) {
  if (t == kFloat16 || t == kBFloat16) {
    const int k = t == kFloat16 ? 0 : 1;
    return op == ReduceOp::MAX ? half_ops().max[k] : half_ops().sum[k];
  }
  return op == ReduceOp::MAX ? MPI_MAX : MPI_SUM;
}

int count_of(const Tensor& t) {
  GRADLAB_CHECK(t.numel() <= INT32_MAX, DistributedError, "mpi backend",
                "a message of more than 2^31 - 1 elements", "<= 2147483647 elements",
                std::to_string(t.numel()), "split the tensor (DDP's buckets do)");
  return static_cast<int>(t.numel());
}

class MpiWork final : public WorkImpl {
 public:
  MPI_Request request = MPI_REQUEST_NULL;
  std::string op;
  Tensor keep_alive[2];  // the buffers MPI reads and writes until completion
  bool test() override {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), op);
    return done != 0;
  }
};

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      int provided = 0;
      // FUNNELED: only the thread that called init_process_group talks to MPI (DataLoader
      // workers never do).
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init_process_group");
      std::atexit(finalize_at_exit);
    }
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "init_process_group");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &notes_), "init_process_group");
    MPI_Comm_set_errhandler(notes_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  DeviceType device_type() const override { return kCPU; }
  bool supports(ScalarType t) const override { return mpi_type(t) != MPI_DATATYPE_NULL; }

  // NOTE: a blocking call leaves the request MPI_REQUEST_NULL, which MPI_Test reports as done.
  std::unique_ptr<WorkImpl> all_reduce(const Tensor& t, ReduceOp op, bool blocking) override {
    auto w = work("all_reduce", t);
    void* p = t.impl()->data();
    const MPI_Datatype dt = mpi_type(t.dtype());
    check_mpi(blocking ? MPI_Allreduce(MPI_IN_PLACE, p, count_of(t), dt, mpi_op(op, t.dtype()), comm_)
                       : MPI_Iallreduce(MPI_IN_PLACE, p, count_of(t), dt, mpi_op(op, t.dtype()), comm_, &w->request),
              "all_reduce");
    return w;
  }
  std::unique_ptr<WorkImpl> broadcast(const Tensor& t, int src, bool blocking) override {
    auto w = work("broadcast", t);
    void* p = t.impl()->data();
    const MPI_Datatype dt = mpi_type(t.dtype());
    check_mpi(blocking ? MPI_Bcast(p, count_of(t), dt, src, comm_)
                       : MPI_Ibcast(p, count_of(t), dt, src, comm_, &w->request),
              "broadcast");
    return w;
  }
  std::unique_ptr<WorkImpl> all_gather(const Tensor& in, const Tensor& out, bool blocking) override {
    auto w = work("all_gather", in, out);
    void* ip = in.impl()->data();
    void* op = out.impl()->data();
    const MPI_Datatype dt = mpi_type(in.dtype());
    const int n = count_of(in);
    check_mpi(blocking ? MPI_Allgather(ip, n, dt, op, n, dt, comm_)
                       : MPI_Iallgather(ip, n, dt, op, n, dt, comm_, &w->request),
              "all_gather");
    return w;
  }
  std::unique_ptr<WorkImpl> reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op,
                                           bool blocking) override {
    auto w = work("reduce_scatter", in, out);
    void* ip = in.impl()->data();
    void* outp = out.impl()->data();
    const MPI_Datatype dt = mpi_type(out.dtype());
    const int n = count_of(out);
    check_mpi(blocking ? MPI_Reduce_scatter_block(ip, outp, n, dt, mpi_op(op, out.dtype()), comm_)
                       : MPI_Ireduce_scatter_block(ip, outp, n, dt, mpi_op(op, out.dtype()), comm_, &w->request),
              "reduce_scatter");
    return w;
  }
  std::unique_ptr<WorkImpl> barrier(bool blocking) override {
    auto w = work("barrier", Tensor());
    check_mpi(blocking ? MPI_Barrier(comm_) : MPI_Ibarrier(comm_, &w->request), "barrier");
    return w;
  }
  bool ask_peers(const std::string& what) override {
    for (int r = 0; r < size_; ++r)
      if (r != rank_) send_note(r, kAsk, "timed out in " + what);
    return true;
  }
  // A peer that times out too sends its own ask; one still waiting answers ours. Either proves it
  // is alive and says where it is.
  void take_notes(const std::string& what, std::vector<std::optional<std::string>>& heard) override {
    int from = 0, tag = 0;
    std::string text;
    while (take_note(from, tag, text)) {
      if (tag == kAsk) send_note(from, kAnswer, "is waiting in " + what);
      if (!heard.empty()) heard[static_cast<size_t>(from)] = text;
    }
  }
  void abort_job() override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  static std::unique_ptr<MpiWork> work(const char* op, const Tensor& a, const Tensor& b = {}) {
    auto w = std::make_unique<MpiWork>();
    w->op = op;
    w->keep_alive[0] = a;
    w->keep_alive[1] = b;
    return w;
  }
  // Notes: fixed-size NUL-padded text. NOTE: a deque keeps each note's address while MPI sends
  // it (the request is freed, so nobody waits for it: the peer may be gone); only timeouts write
  // notes, so they are few.
  static constexpr int kAsk = 1, kAnswer = 2, kNoteBytes = 192;
  using Note = std::array<char, kNoteBytes>;
  void send_note(int to, int tag, const std::string& text) {
    Note& n = outbox_.emplace_back();
    n.fill('\0');
    std::memcpy(n.data(), text.data(), std::min<size_t>(text.size(), kNoteBytes - 1));
    MPI_Request r = MPI_REQUEST_NULL;
    if (MPI_Isend(n.data(), kNoteBytes, MPI_CHAR, to, tag, notes_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
  }
  bool take_note(int& from, int& tag, std::string& text) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, notes_, &flag, &st) != MPI_SUCCESS || !flag) return false;
    Note n{};
    if (MPI_Recv(n.data(), kNoteBytes, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, notes_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return false;
    from = st.MPI_SOURCE;
    tag = st.MPI_TAG;
    text.assign(n.data(), strnlen(n.data(), kNoteBytes));
    return true;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm notes_ = MPI_COMM_NULL;
  std::deque<Note> outbox_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }
bool mpi_compiled() { return true; }

void mpi_abort_world() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
}

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  return std::string(v, static_cast<size_t>(len));
}

void check_mpi(int rc, const std::string& collective) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  std::string s = MPI_Error_string(rc, text, &len) == MPI_SUCCESS ? std::string(text, static_cast<size_t>(len))
                                                                   : "unknown error";
  throw DistributedError(error_message(collective, "MPI error " + std::to_string(rc) + ": " + s,
                                       "MPI_SUCCESS", std::to_string(rc),
                                       "every rank must call the same collectives in the same order "
                                       "with the same sizes and dtypes"));
}

#else  // no MPI

namespace {
[[noreturn]] void no_mpi(const char* what) {
  throw DistributedError(error_message(
      what, "gradlab was built without MPI", "a build that found MPI (find_package(MPI))", "no MPI",
      "install libopenmpi-dev and openmpi-bin (bash tools/setup.sh), then reconfigure and rebuild"));
}
}  // namespace

std::unique_ptr<Backend> make_mpi_backend() { no_mpi("init_process_group(\"mpi\")"); }
bool mpi_compiled() { return false; }
void mpi_abort_world() {}
std::string mpi_library_version() { return ""; }
void check_mpi(int rc, const std::string& collective) {
  if (rc != 0) throw DistributedError(error_message(collective, "error " + std::to_string(rc)));
}

#endif

}  // namespace gradlab::distributed::detail
