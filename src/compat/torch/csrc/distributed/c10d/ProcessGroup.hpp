// The c10d face of the LibTorch port path: what a LibTorch C++ program that trains data-parallel
// uses from <torch/csrc/distributed/c10d/...> (its C++ API has no DistributedDataParallel module:
// programs allreduce the gradients themselves), over gradlab's MPI process group
// (gradlab/distributed/process_group.hpp).
//   c10::intrusive_ptr / c10::make_intrusive      std::shared_ptr / std::make_shared
//   c10d::ProcessGroup: getRank, getSize, allreduce, broadcast, allgather, barrier -> Work
//   c10d::Work: wait, isCompleted
// Each collective runs when it is called (wait() then returns at once); every rank must call the
// same collectives in the same order, as in LibTorch.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace c10 {
template <class T>
using intrusive_ptr = std::shared_ptr<T>;
template <class T, class... Args>
std::shared_ptr<T> make_intrusive(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}
}  // namespace c10

namespace c10d {

/// How allreduce combines the ranks' tensors (LibTorch's c10d::ReduceOp); gradlab has SUM, AVG
/// and MAX.
struct ReduceOp {
  enum RedOpType { SUM = 0, AVG = 1, MAX = 4 };
  ReduceOp(RedOpType op = SUM) : op_(op) {}  // NOLINT
  RedOpType op_;
};
struct AllreduceOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
};
struct BroadcastOptions {
  int64_t rootRank = 0;
  int64_t rootTensor = 0;
};
struct AllgatherOptions {};
struct BarrierOptions {};

/// A collective's handle; gradlab's have completed when they are returned.
class Work {
 public:
  virtual ~Work() = default;
  bool isCompleted() { return true; }
  bool isSuccess() const { return true; }
  bool wait(std::chrono::milliseconds = std::chrono::milliseconds(0)) { return true; }
};

/// The collectives of one process group, over gradlab::distributed's default group.
class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  int getRank() const { return rank_; }
  int getSize() const { return size_; }

  /// Every tensor in `tensors` combined over the ranks, in place.
  c10::intrusive_ptr<Work> allreduce(std::vector<torch::Tensor>& tensors,
                                     const AllreduceOptions& opts = AllreduceOptions()) {
    namespace d = gradlab::distributed;
    const d::ReduceOp op = opts.reduceOp.op_ == ReduceOp::AVG   ? d::ReduceOp::AVG
                           : opts.reduceOp.op_ == ReduceOp::MAX ? d::ReduceOp::MAX
                                                                : d::ReduceOp::SUM;
    for (const torch::Tensor& t : tensors) d::all_reduce(t, op);
    return c10::make_intrusive<Work>();
  }
  /// tensors[opts.rootTensor] of rank opts.rootRank, into the same tensor on every rank.
  c10::intrusive_ptr<Work> broadcast(std::vector<torch::Tensor>& tensors,
                                     const BroadcastOptions& opts = BroadcastOptions()) {
    GRADLAB_CHECK(opts.rootTensor >= 0 && opts.rootTensor < static_cast<int64_t>(tensors.size()),
                  gradlab::ValueError, "c10d::ProcessGroup::broadcast", "rootTensor out of range",
                  "an index < " + std::to_string(tensors.size()), std::to_string(opts.rootTensor));
    gradlab::distributed::broadcast(tensors[static_cast<size_t>(opts.rootTensor)],
                                    static_cast<int>(opts.rootRank));
    return c10::make_intrusive<Work>();
  }
  /// outputs[0][r] = inputs[0] of rank r.
  c10::intrusive_ptr<Work> allgather(std::vector<std::vector<torch::Tensor>>& outputs,
                                     std::vector<torch::Tensor>& inputs,
                                     const AllgatherOptions& = AllgatherOptions()) {
    GRADLAB_CHECK(outputs.size() == 1 && inputs.size() == 1, gradlab::ValueError,
                  "c10d::ProcessGroup::allgather", "gradlab gathers one tensor per call",
                  "one input and one output list", std::to_string(inputs.size()) + " inputs");
    gradlab::distributed::all_gather(outputs[0], inputs[0]);
    return c10::make_intrusive<Work>();
  }
  c10::intrusive_ptr<Work> barrier(const BarrierOptions& = BarrierOptions()) {
    gradlab::distributed::barrier();
    return c10::make_intrusive<Work>();
  }

 private:
  int rank_, size_;
};

}  // namespace c10d
