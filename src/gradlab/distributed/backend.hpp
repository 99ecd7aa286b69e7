#pragma once
// Internal: what a communication backend (MPI, NCCL) provides to process_group.cpp. Tensors
// reaching a backend are checked already (defined, contiguous, supported dtype and device, sizes
// agree), so a backend only moves bytes. No MPI or NCCL type appears here.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/distributed/process_group.hpp"

namespace gradlab::distributed::detail {

/// One collective in flight.
class WorkImpl {
 public:
  virtual ~WorkImpl() = default;
  /// True once the backend's operation is done (polls it; never blocks).
  virtual bool test() = 0;
  /// "all_reduce (SUM, float64 [10])": what a timeout or an error message names.
  std::string what;
  /// Runs once, on the thread that sees the operation complete (AVG's division, unpacking).
  std::function<void()> on_complete;
  bool completed = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// The device tensors must be on (CPU for MPI, CUDA for NCCL).
  virtual DeviceType device_type() const = 0;
  /// Whether `dtype` can travel (MPI: float32, float64, int64).
  virtual bool supports(ScalarType dtype) const = 0;
  // Each operation starts non-blocking (a Work to poll), or with `blocking` runs to completion
  // in the call (MPI's blocking collectives are the tuned ones: faster than their non-blocking
  // twins; process_group.cpp bounds them with a watchdog instead of a poll).
  // In place on `t` (op is SUM or MAX; AVG is SUM then a division done by the caller).
  virtual std::unique_ptr<WorkImpl> all_reduce(const Tensor& t, ReduceOp op, bool blocking) = 0;
  virtual std::unique_ptr<WorkImpl> broadcast(const Tensor& t, int src, bool blocking) = 0;
  /// flat_out (world_size * input.numel() elements) = every rank's input, in rank order.
  virtual std::unique_ptr<WorkImpl> all_gather(const Tensor& input, const Tensor& flat_out,
                                               bool blocking) = 0;
  /// output = op over ranks of block `rank` of flat_in (world_size * output.numel() elements).
  virtual std::unique_ptr<WorkImpl> reduce_scatter(const Tensor& flat_in, const Tensor& output,
                                                   ReduceOp op, bool blocking) = 0;
  virtual std::unique_ptr<WorkImpl> barrier(bool blocking) = 0;
  /// A polled wait in `what` that is about to time out tells every peer "timed out in <what>".
  /// Returns false when this backend cannot ask (the timeout message then names no peer).
  virtual bool ask_peers(const std::string& what) {
    (void)what;
    return false;
  }
  /// Handles the notes that arrived, called from the polled wait loop (one cheap probe when none
  /// did): a peer's ask is answered with "is waiting in <what>", and what each peer said ("is
  /// waiting in ..." or "timed out in ...") goes to `heard[rank]` when `heard` is not empty.
  virtual void take_notes(const std::string& what, std::vector<std::optional<std::string>>& heard) {
    (void)what;
    (void)heard;
  }
  /// Ends every process of the job; `message` is already printed.
  [[noreturn]] virtual void abort_job() = 0;
};

/// The MPI backend (MPI_Init_thread on first use). Throws DistributedError when gradlab was
/// built without MPI.
std::unique_ptr<Backend> make_mpi_backend();
/// The NCCL backend, bootstrapped over MPI. Throws DistributedError when gradlab was built
/// without NCCL or no CUDA device is usable.
std::unique_ptr<Backend> make_nccl_backend();

/// MPI's own state, for abort and relaunch without a group.
bool mpi_compiled();
/// MPI_Abort(MPI_COMM_WORLD, 1) when MPI is initialized; otherwise returns.
void mpi_abort_world();
/// "Open MPI v4.1.4, ..." (MPI_Get_library_version; callable before MPI_Init); "" without MPI.
std::string mpi_library_version();

/// Throws DistributedError("<collective>: MPI error <code>: <MPI_Error_string>") unless
/// rc == MPI_SUCCESS. Without MPI: throws for any rc != 0.
void check_mpi(int rc, const std::string& collective);

}  // namespace gradlab::distributed::detail
