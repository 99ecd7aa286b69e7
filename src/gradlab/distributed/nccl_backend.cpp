// The "nccl" backend: collectives on CUDA tensors with NCCL (shipped with the CUDA toolkit).
// Started over MPI: rank 0 makes the ncclUniqueId and MPI broadcasts it; each rank takes GPU
// (local rank % device count). Operations are queued on the default stream, the one gradlab's
// kernels use, so they are ordered after the kernels that wrote the gradients; a Work is a CUDA
// event whose query is the poll that process_group.cpp bounds by the group's timeout.
// Compiled when CMake found CUDA, NCCL and MPI (GRADLAB_HAVE_NCCL); a build without them has no
// nccl backend, and init_process_group("nccl") raises a DistributedError saying what to install.
// NOTE: this file has only been compiled, not run, on machines without a GPU.

#include <string>

#include "gradlab/core/cuda.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/distributed/backend.hpp"

#ifdef GRADLAB_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "gradlab/core/factories.hpp"
#endif

namespace gradlab::distributed::detail {

#ifdef GRADLAB_HAVE_NCCL

namespace {

void check_cuda(cudaError_t e, const std::string& op) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw DistributedError(error_message(op, std::string("CUDA error: ") + cudaGetErrorString(e)));
}

void check_nccl(ncclResult_t r, const std::string& op) {
  if (r == ncclSuccess) return;
  throw DistributedError(error_message(op, std::string("NCCL error: ") + ncclGetErrorString(r),
                                       "ncclSuccess", std::to_string(static_cast<int>(r)),
                                       "NCCL_DEBUG=INFO prints what NCCL saw"));
}

ncclDataType_t nccl_type(ScalarType t) {
  switch (t) {
    case kFloat32: return ncclFloat32;
    case kFloat64: return ncclFloat64;
    case kInt64: return ncclInt64;
    case kFloat16: return ncclFloat16;
    case kBFloat16: return ncclBfloat16;
    case kUInt8: return ncclUint8;
    default: return ncclNumTypes;  // rejected by supports()
  }
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::MAX ? ncclMax : ncclSum; }

class NcclWork final : public WorkImpl {
 public:
  NcclWork(std::string op, ncclComm_t comm) : op_(std::move(op)), comm_(comm) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), op_);
    check_cuda(cudaEventRecord(event_, nullptr), op_);
  }
  ~NcclWork() override { cudaEventDestroy(event_); }
  bool test() override {
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async), op_);
    check_nccl(async, op_);
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, op_);
    return true;
  }
  Tensor keep_alive[2];

 private:
  std::string op_;
  ncclComm_t comm_;
  cudaEvent_t event_ = nullptr;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend() : mpi_(make_mpi_backend()) {
    if (!cuda::is_available() || cuda::emulator::enabled()) {
      throw DistributedError(error_message(
          "init_process_group(\"nccl\")", "no usable CUDA device", "one GPU per rank",
          cuda::emulator::enabled() ? "the host emulator (NCCL needs real GPUs)" : cuda::unavailable_reason(),
          "use init_process_group(\"mpi\") for CPU tensors"));
    }
    const int count = cuda::device_count();
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    const int local_rank = local ? std::atoi(local) : mpi_->rank();
    check_cuda(cudaSetDevice(local_rank % count), "init_process_group(\"nccl\")");
    // The unique id travels as 128 bytes in an int64 CPU tensor over the MPI group.
    static_assert(sizeof(ncclUniqueId) % sizeof(int64_t) == 0);
    Tensor id_bytes = zeros({static_cast<int64_t>(sizeof(ncclUniqueId) / sizeof(int64_t))},
                            TensorOptions().dtype(kInt64));
    ncclUniqueId id;
    if (mpi_->rank() == 0) {
      check_nccl(ncclGetUniqueId(&id), "init_process_group(\"nccl\")");
      std::memcpy(id_bytes.impl()->data(), &id, sizeof id);
    }
    auto w = mpi_->broadcast(id_bytes, 0, true);
    while (!w->test()) {
    }
    std::memcpy(&id, id_bytes.impl()->data(), sizeof id);
    check_nccl(ncclCommInitRank(&comm_, mpi_->world_size(), id, mpi_->rank()), "init_process_group(\"nccl\")");
  }
  ~NcclBackend() override {
    if (comm_) ncclCommDestroy(comm_);
  }
  std::string name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int world_size() const override { return mpi_->world_size(); }
  DeviceType device_type() const override { return kCUDA; }
  bool supports(ScalarType t) const override { return nccl_type(t) != ncclNumTypes; }

  std::unique_ptr<WorkImpl> all_reduce(const Tensor& t, ReduceOp op, bool) override {
    void* p = t.impl()->data();
    check_nccl(ncclAllReduce(p, p, static_cast<size_t>(t.numel()), nccl_type(t.dtype()), nccl_op(op), comm_, nullptr),
               "all_reduce");
    return work("all_reduce", t);
  }
  std::unique_ptr<WorkImpl> broadcast(const Tensor& t, int src, bool) override {
    void* p = t.impl()->data();
    check_nccl(ncclBroadcast(p, p, static_cast<size_t>(t.numel()), nccl_type(t.dtype()), src, comm_, nullptr),
               "broadcast");
    return work("broadcast", t);
  }
  std::unique_ptr<WorkImpl> all_gather(const Tensor& in, const Tensor& out, bool) override {
    check_nccl(ncclAllGather(in.impl()->data(), out.impl()->data(), static_cast<size_t>(in.numel()),
                             nccl_type(in.dtype()), comm_, nullptr),
               "all_gather");
    return work("all_gather", in, out);
  }
  std::unique_ptr<WorkImpl> reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op, bool) override {
    check_nccl(ncclReduceScatter(in.impl()->data(), out.impl()->data(), static_cast<size_t>(out.numel()),
                                 nccl_type(out.dtype()), nccl_op(op), comm_, nullptr),
               "reduce_scatter");
    return work("reduce_scatter", in, out);
  }
  std::unique_ptr<WorkImpl> barrier(bool) override {
    // Device work first, then the ranks meet over MPI.
    check_cuda(cudaDeviceSynchronize(), "barrier");
    return mpi_->barrier(true);
  }
  void abort_job() override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    mpi_->abort_job();
  }

 private:
  std::unique_ptr<NcclWork> work(const char* op, const Tensor& a, const Tensor& b = {}) {
    auto w = std::make_unique<NcclWork>(op, comm_);
    w->keep_alive[0] = a;
    w->keep_alive[1] = b;
    return w;
  }
  std::unique_ptr<Backend> mpi_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend() { return std::make_unique<NcclBackend>(); }

#else

std::unique_ptr<Backend> make_nccl_backend() {
  throw DistributedError(error_message(
      "init_process_group(\"nccl\")", "gradlab was built without NCCL",
      "a build with CUDA, NCCL (nccl.h, libnccl in the CUDA toolkit) and MPI", "none of them or not all",
      "install the CUDA toolkit with NCCL and libopenmpi-dev, then reconfigure; use \"mpi\" for CPU tensors"));
}

#endif

}  // namespace gradlab::distributed::detail

namespace gradlab::distributed {
bool is_nccl_available() {
#ifdef GRADLAB_HAVE_NCCL
  return true;
#else
  return false;
#endif
}
}  // namespace gradlab::distributed
