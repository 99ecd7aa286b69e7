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
//   * register_comm_hook(hook): each full bucket goes to `hook` instead of the plain all-reduce
//     (PyTorch's DDP communication hooks); comm_hooks::fp16_compress_hook / bf16_compress_hook
//     send the bucket as 16-bit floats: half the bytes, gradients rounded to 11 / 8 bits.
//   * gradient_as_bucket_view: each .grad becomes a view into its bucket, so gradients are not
//     stored twice (one parameter-sized copy less) and nothing is copied back after the
//     all-reduce. zero_grad(false) keeps the views; after zero_grad() (set_to_none) the next
//     backward makes them views again.
//   * static_graph: the set of parameters that get gradients is the same in every iteration, so
//     the graph is walked once (the first iteration) instead of every time with
//     find_unused_parameters; unused parameters are found without that option too.
//   * Join (below): ranks with uneven numbers of batches. A rank that runs out shadows the
//     collectives of the others' steps with zero gradients until every rank is out.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "gradlab/distributed/process_group.hpp"
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
  /// Each parameter's .grad is a view into its bucket (PyTorch's gradient_as_bucket_view).
  GRADLAB_ARG(bool, gradient_as_bucket_view) = false;
  /// The used parameters are the same every iteration: walk the graph once (PyTorch's static_graph).
  GRADLAB_ARG(bool, static_graph) = false;
};

/// One bucket handed to a communication hook (PyTorch's dist.GradBucket): this rank's gradients
/// of the bucket's parameters, flattened into buffer() (float32 / float64, one dtype a bucket).
/// After the hook's future completes, buffer() must hold the gradients every rank uses.
class GradBucket {
 public:
  GradBucket(int64_t index, Tensor buffer, bool is_last)
      : index_(index), buffer_(std::move(buffer)), is_last_(is_last) {}
  int64_t index() const { return index_; }
  const Tensor& buffer() const { return buffer_; }
  /// True for the bucket reduced last in the iteration.
  bool is_last() const { return is_last_; }

 private:
  int64_t index_;
  Tensor buffer_;
  bool is_last_;
};

/// What a hook returns (PyTorch's Future of the bucket): the collective in flight and the step
/// that finishes the bucket once it landed (decompressing, say). `bytes` is what the hook put on
/// the wire per rank (the payload handed to the collective), summed in DDPStats::comm_bytes.
class HookFuture {
 public:
  HookFuture() = default;
  HookFuture(distributed::Work work, std::function<void()> then, int64_t bytes)
      : work_(std::move(work)), then_(std::move(then)), bytes_(bytes) {}
  bool is_completed() { return !work_.defined() || work_.is_completed(); }
  /// Waits for the collective (bounded by the group's timeout), then runs the finishing step once.
  void wait();
  int64_t bytes() const { return bytes_; }

 private:
  distributed::Work work_;
  std::function<void()> then_;
  int64_t bytes_ = 0;
};
using CommHook = std::function<HookFuture(GradBucket&)>;

/// PyTorch's torch.distributed.algorithms.ddp_comm_hooks.default_hooks.
namespace comm_hooks {
/// The default: all_reduce(AVG) of the bucket as it is.
HookFuture allreduce_hook(GradBucket& bucket);
/// buffer / world_size rounded to float16, all_reduce(SUM) in float16 (2 bytes an element), then
/// widened back into the buffer. Overflows (inf) where |sum| > 65504.
HookFuture fp16_compress_hook(GradBucket& bucket);
/// The same in bfloat16: float32's range, 8 bits of mantissa.
HookFuture bf16_compress_hook(GradBucket& bucket);
}  // namespace comm_hooks

/// What the last synchronized backward did (for tests, lessons and benchmarks).
struct DDPStats {
  int64_t buckets = 0;
  /// Buckets whose all-reduce started while backward still had gradients to compute.
  int64_t launched_during_backward = 0;
  /// Synchronized backward passes so far.
  int64_t reductions = 0;
  /// Bytes the buckets' collectives carried per rank in the last synchronized backward.
  int64_t comm_bytes = 0;
  /// Graph walks for unused parameters so far (one per iteration with find_unused_parameters,
  /// one in all with static_graph).
  int64_t graph_walks = 0;
  /// Iterations this rank shadowed inside a Join after running out of batches.
  int64_t joined_steps = 0;
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
  /// Sends each full bucket through `hook` instead of the plain all-reduce. Once, before the
  /// first backward (as PyTorch); the same hook on every rank.
  void register_comm_hook(CommHook hook);

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
  friend class Join;
  class Join* join_ = nullptr;  // the Join this replica is in, if any
};

/// Uneven inputs (PyTorch's torch.distributed.algorithms.Join([ddp])): inside a Join, every
/// forward first tells the group that this rank is still training; a rank that is out of
/// batches calls join() (or leaves the scope) and then shadows the others' iterations: the
/// buffer broadcast and every bucket's collective, with zero gradients, until all ranks are out.
/// Then every rank takes the parameters and buffers of a rank that trained to the end (the
/// early joiners' optimizers sat the last steps out), as PyTorch's DDP join hook does.
///
///   { nn::parallel::Join join(ddp);
///     for (auto& b : my_loader) { ...; ddp(b.data) ... backward(); opt.step(); }
///     join.join(); }                       // or let the destructor do it
///
/// divide_by_initial_world_size (PyTorch's default, true): a step some ranks sat out averages
/// over all ranks, the joined ones counting as zeros; false: over the ranks that took part.
/// Without a Join, a rank that stops early leaves the others waiting in their next collective
/// until the group's timeout ends the job. no_sync() steps inside a Join are not supported.
class Join {
 public:
  explicit Join(DistributedDataParallelBase& ddp, bool divide_by_initial_world_size = true);
  /// join() unless it ran or an exception is leaving the scope.
  ~Join() noexcept(false);
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;
  /// This rank has no more batches: shadow the others' iterations until every rank joined.
  void join();

 private:
  friend class DistributedDataParallelBase;
  // Called by every forward of a still-training rank: the group's count of training ranks.
  int64_t notify_training(bool will_sync);
  DistributedDataParallelBase* ddp_;
  bool divide_by_initial_;
  bool joined_ = false;
  int uncaught_ = 0;
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
