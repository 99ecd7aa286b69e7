#pragma once
// Process groups and collectives (torch.distributed): one process per rank, started by a
// launcher (`mpirun -np 2 ./train`), joined by init_process_group, talking through collectives
// on tensors. Backends: "mpi" (OpenMPI; CPU tensors) and "nccl" (CUDA tensors; NCCL from the
// CUDA toolkit, bootstrapped over MPI).
//
//   distributed::init_process_group("mpi");          // rank and world size from mpirun
//   distributed::all_reduce(t, ReduceOp::AVG);       // in place, on every rank
//   if (distributed::get_rank() == 0) save(...);
//   distributed::barrier();
//
// Failure: every wait is bounded by the group's timeout. A rank whose collective does not
// complete in time (another rank died, hangs, or called a different collective) prints why and
// ends the whole job (MPI_Abort), and so does an exception that escapes main on any rank (the
// group installs a std::terminate handler): no rank is left hanging. A polled wait (Work::wait,
// which DDP's buckets use) asks every peer where it is in the last quarter of its timeout (at
// most 2 s), and at the timeout names the ranks that did not answer ("no answer from rank 2, 3":
// gone, hung, unreachable, or inside a blocking collective); the blocking collectives' watchdog
// names the collective only.
// Ranks calling different collectives (op, size, dtype) is undefined behaviour in MPI; with
// GRADLAB_DISTRIBUTED_DEBUG=DETAIL every collective first compares the calls across ranks and
// throws a DistributedError naming both.
// NOTE: no MPI or NCCL header here; the library builds (and these functions raise a clear
// DistributedError) without them.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::distributed {

/// A collective failed or was misused (MPI errors become this, naming the collective).
class DistributedError : public Error {
 public:
  using Error::Error;
};

/// How all_reduce / reduce_scatter combine the ranks' values (torch.distributed.ReduceOp).
/// AVG = SUM / world_size (floating-point tensors only).
enum class ReduceOp { SUM, AVG, MAX };
std::string to_string(ReduceOp op);

/// PyTorch's default: 30 minutes.
inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

/// Joins the default process group. backend "mpi" (CPU tensors) or "nccl" (CUDA tensors; one GPU
/// per rank, chosen by the rank's local index). Rank and world size come from the launcher;
/// without one the process is a group of 1. `timeout` bounds every wait (then the job aborts).
void init_process_group(const std::string& backend = "mpi",
                        std::chrono::milliseconds timeout = kDefaultTimeout);
/// Whether init_process_group has run (and destroy_process_group has not).
bool is_initialized();
/// Whether this build of gradlab has the backend (compiled against MPI / NCCL).
bool is_mpi_available();
bool is_nccl_available();
/// True when this process was started by an MPI launcher (mpirun / mpiexec).
bool is_launched();
/// This process's rank in [0, world_size).
int get_rank();
int get_world_size();
/// "mpi" or "nccl".
std::string get_backend();
std::chrono::milliseconds get_timeout();
/// Changes the bound of every later wait.
void set_timeout(std::chrono::milliseconds timeout);
/// Leaves the group (MPI_Finalize happens at exit). init_process_group may not be called again.
void destroy_process_group();

namespace detail {
class WorkImpl;
}

/// A collective in flight (async_op=True in PyTorch): is_completed() polls (and so lets MPI make
/// progress), wait() blocks up to the group's timeout, then aborts the job.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkImpl> impl);
  bool is_completed();
  void wait();
  bool defined() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkImpl> impl_;
};

/// Combines `tensor` over all ranks, in place (every rank gets the result).
void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM);
/// Same, non-blocking: the result is there after wait(). Do not touch `tensor` before.
Work all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::SUM);
/// Copies rank `src`'s tensor into `tensor` on every rank.
void broadcast(const Tensor& tensor, int src);
/// broadcast of several tensors packed into one message per dtype (DDP's start-up sync).
void broadcast_coalesced(const std::vector<Tensor>& tensors, int src);
/// outputs[r] = rank r's `input`; outputs has world_size tensors of input's shape and dtype.
void all_gather(std::vector<Tensor>& outputs, const Tensor& input);
/// output = op over ranks of inputs[rank]; inputs has world_size tensors of output's shape.
void reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                    ReduceOp op = ReduceOp::SUM);
/// Returns once every rank has called it.
void barrier();

/// Prints "gradlab.distributed: rank R of N: <message>" to stderr and ends every process of the
/// job (MPI_Abort with exit code 1). Outside a group: prints and std::abort()s this process.
[[noreturn]] void abort_job(const std::string& message);

/// Not under a launcher: runs this program again as `mpirun -np <world_size> --oversubscribe`
/// (with OPENBLAS_NUM_THREADS=1 and GRADLAB_NUM_THREADS=1 unless set) and returns mpirun's exit
/// status. Under a launcher: nullopt. NOTE: it never allows Open MPI to run as root; a caller that runs as root sets
/// OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 itself (lesson 11 does).
///   int main(int argc, char** argv) {
///     if (auto rc = distributed::relaunch_with_mpirun(2, argc, argv)) return *rc;
///     distributed::init_process_group("mpi"); ...
std::optional<int> relaunch_with_mpirun(int world_size, int argc, char** argv);

}  // namespace gradlab::distributed
