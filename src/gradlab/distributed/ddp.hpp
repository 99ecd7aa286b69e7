#pragma once
// nn::parallel::DistributedDataParallel: one process per device, each with a full replica of the
// model and its own slice of every batch (torch.nn.parallel.DistributedDataParallel).
//
//   distributed::init_process_group("mpi");
//   nn::parallel::DistributedDataParallel ddp(model);            // rank 0's weights everywhere
//   optim::SGD opt(ddp.parameters(), 0.1);
//   for (auto& b : loader) {                                     // DistributedSampler: 1/N each
//     opt.zero_grad();
//     nn::functional::mse_loss(ddp(b.data), b.target).backward();  // gradients averaged
//     opt.step();                                                // same step on every rank
//   }
//
// How it works (PyTorch's Reducer):
//   * construction: every rank checks that it holds the same parameter shapes as rank 0, then
//     parameters and buffers are broadcast from rank 0.
//   * parameters go into buckets of ~bucket_cap_mb (25 MB default), in reverse registration
//     order (the order backward produces their gradients).
//   * a post-accumulate-grad hook on every parameter copies its .grad into its bucket; when a
//     bucket is full it is all-reduced (non-blocking), in bucket order on every rank, while
//     backward goes on computing the next gradients (the overlap). When the last gradient is in,
//     the ranks wait for every bucket and write the averages back into .grad.
//   * grad_i = (1/N) sum_r grad_i^(r); with each rank's loss a mean over its B samples this is
//     the gradient of the mean over all N * B samples: one process on the concatenated batch.
//   * no_sync(): backward only accumulates locally; the next synchronized backward reduces the
//     accumulated sum (gradient accumulation with one all-reduce).
//   * a parameter that gets no gradient: without find_unused_parameters the reduction never
//     finishes and the next forward raises PyTorch's error; with it, forward walks the graph and
//     marks such parameters ready at once (they contribute zeros).
//   * state_dict() keys carry "module." (the model is registered as child "module");
//     io::strip_prefix(sd, "module.") loads them into a bare model.

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn::parallel {

/// Options of DistributedDataParallel, LibTorch style: DDPOptions().bucket_cap_mb(1).
struct DDPOptions {
  /// Bucket size in MiB (PyTorch's bucket_cap_mb). A parameter larger than it gets its own.
  GRADLAB_ARG(double, bucket_cap_mb) = 25;
  /// Walk the graph after forward and mark parameters that got no part in the output ready.
  GRADLAB_ARG(bool, find_unused_parameters) = false;
  /// Broadcast buffers (BatchNorm's running stats) from rank 0 before each forward.
  GRADLAB_ARG(bool, broadcast_buffers) = true;
  /// false: start every all-reduce only after backward produced the last gradient (no overlap;
  /// for measuring what the overlap buys).
  GRADLAB_ARG(bool, overlap) = true;
};

/// What the last synchronized backward did (for tests, lessons and benchmarks).
struct DDPStats {
  int64_t buckets = 0;
  /// Buckets whose all-reduce started while backward still had gradients to compute.
  int64_t launched_during_backward = 0;
  /// Synchronized backward passes so far.
  int64_t reductions = 0;
};

namespace detail {
class Reducer;
}

/// The part of DistributedDataParallel that does not depend on the wrapped module's type.
class DistributedDataParallelBase : public Module {
 public:
  ~DistributedDataParallelBase() override;

  /// While alive, forward/backward only accumulate gradients locally (PyTorch's no_sync()).
  class [[nodiscard]] NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallelBase& ddp) : ddp_(&ddp), previous_(ddp.require_sync_) {
      ddp.require_sync_ = false;
    }
    ~NoSyncGuard() { ddp_->require_sync_ = previous_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallelBase* ddp_;
    bool previous_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// Parameter indices (into parameters()) of each bucket, in all-reduce order.
  std::vector<std::vector<int64_t>> bucket_indices() const;
  const DDPStats& stats() const;
  const DDPOptions& options() const { return options_; }

 protected:
  DistributedDataParallelBase(std::shared_ptr<Module> module, DDPOptions options);
  /// Checks the last reduction finished; broadcasts buffers.
  void pre_forward();
  /// Arms the gradient hooks for the coming backward (grad mode on and not under no_sync).
  void post_forward(const std::vector<Tensor>& outputs);

 private:
  DDPOptions options_;
  std::unique_ptr<detail::Reducer> reducer_;
  bool require_sync_ = true;
};

namespace detail {
inline void collect(std::vector<Tensor>& out, const Tensor& t) { out.push_back(t); }
inline void collect(std::vector<Tensor>& out, const std::vector<Tensor>& ts) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <class... T>
void collect(std::vector<Tensor>& out, const std::tuple<T...>& tup) {
  std::apply([&](const auto&... e) { (collect(out, e), ...); }, tup);
}
template <class H>
std::shared_ptr<Module> module_ptr(const H& h) {
  if constexpr (nn::detail::has_ptr_v<H>) return h.ptr();
  else return h;
}
}  // namespace detail

/// Wraps a module (a holder such as nn::Sequential, or a shared_ptr to a Module) for
/// data-parallel training. Needs init_process_group() first.
template <class Holder>
class DistributedDataParallel : public DistributedDataParallelBase {
 public:
  explicit DistributedDataParallel(Holder module, DDPOptions options = {})
      : DistributedDataParallelBase(detail::module_ptr(module), options), module_(std::move(module)) {}

  /// The wrapped module's forward. Outputs may be a Tensor, a vector or a tuple of Tensors.
  template <class... Args>
  auto forward(Args&&... args) {
    pre_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    std::vector<Tensor> outs;
    detail::collect(outs, out);
    post_forward(outs);
    return out;
  }
  template <class... Args>
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }
  /// The wrapped module (PyTorch's ddp.module).
  const Holder& module() const { return module_; }

 private:
  Holder module_;
};

template <class H>
DistributedDataParallel(H) -> DistributedDataParallel<H>;
template <class H>
DistributedDataParallel(H, DDPOptions) -> DistributedDataParallel<H>;

}  // namespace gradlab::nn::parallel
