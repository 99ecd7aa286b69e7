#include "gradlab/distributed/ddp.hpp"

#include <algorithm>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/distributed/process_group.hpp"

namespace gradlab::nn::parallel {

namespace dist = gradlab::distributed;

void HookFuture::wait() {
  if (work_.defined()) work_.wait();
  if (then_) {
    auto then = std::move(then_);
    then_ = nullptr;
    then();
  }
}

namespace comm_hooks {

HookFuture allreduce_hook(GradBucket& bucket) {
  const Tensor& buf = bucket.buffer();
  return HookFuture(dist::all_reduce_async(buf, dist::ReduceOp::AVG), {},
                    buf.numel() * static_cast<int64_t>(element_size(buf.dtype())));
}

namespace {
// buffer / N in `dtype`, summed over the ranks in `dtype`, widened back into the buffer.
HookFuture compress_hook(GradBucket& bucket, ScalarType dtype) {
  NoGradGuard ng;
  const Tensor buf = bucket.buffer();
  Tensor packed = (buf / static_cast<double>(dist::get_world_size())).to(dtype).contiguous();
  dist::Work w = dist::all_reduce_async(packed, dist::ReduceOp::SUM);
  return HookFuture(std::move(w), [buf, packed] {
    NoGradGuard inner;
    Tensor(buf).copy_(packed.to(buf.dtype()));
  }, packed.numel() * static_cast<int64_t>(element_size(dtype)));
}
}  // namespace

HookFuture fp16_compress_hook(GradBucket& bucket) { return compress_hook(bucket, kFloat16); }
HookFuture bf16_compress_hook(GradBucket& bucket) { return compress_hook(bucket, kBFloat16); }

}  // namespace comm_hooks

namespace detail {

// Gradient buckets and the state of one backward pass (PyTorch's c10d::Reducer, much smaller).
class Reducer {
 public:
  Reducer(std::vector<Tensor> params, std::vector<std::string> names, const DDPOptions& options)
      : params_(std::move(params)), names_(std::move(names)), options_(options) {
    build_buckets();
    ready_.assign(params_.size(), 0);
    used_.assign(params_.size(), 0);
    for (size_t i = 0; i < params_.size(); ++i)
      hook_ids_.push_back(params_[i].register_post_accumulate_grad_hook([this, i](Tensor&) { mark_ready(i); }));
  }
  ~Reducer() {
    for (size_t i = 0; i < params_.size(); ++i) params_[i].remove_hook(hook_ids_[i]);
  }
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  const std::vector<std::vector<int64_t>>& bucket_indices() const { return bucket_indices_; }
  const DDPStats& stats() const { return stats_; }
  DDPStats& mutable_stats() { return stats_; }
  void set_hook(CommHook hook) {
    GRADLAB_CHECK(!hook_, ValueError, "register_comm_hook", "a hook is registered already",
                  "one register_comm_hook call", "a second one", "register the hook once, before training");
    GRADLAB_CHECK(stats_.reductions == 0 && !armed_, ValueError, "register_comm_hook",
                  "the first backward has run", "a hook registered before training",
                  std::to_string(stats_.reductions) + " reductions", "register it right after wrapping the model");
    hook_ = std::move(hook);
  }
  // A step of a Join that sat some ranks out: the averaged gradients times world / active.
  void set_grad_scale(double s) { grad_scale_ = s; }

  // A backward started by the last forward must have finished its reduction.
  void prepare_for_forward() {
    if (!armed_ || num_ready_ == 0) {
      armed_ = false;
      return;
    }
    std::string missing_idx, missing_names;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i]) {
        missing_idx.append(" ").append(std::to_string(i));
        missing_names.append(missing_names.empty() ? "" : ", ").append(names_[i]);
      }
    // Launched buckets are in flight on every rank: let them land before the buffers are reused.
    for (Bucket& b : buckets_)
      if (b.launched) b.fut.wait();
    reset();
    throw dist::DistributedError(
        "Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing "
        "loss. You can enable unused parameter detection by passing the keyword argument "
        "`find_unused_parameters=true` to `nn::parallel::DistributedDataParallel` "
        "(DDPOptions().find_unused_parameters(true)), and by making sure all `forward` function "
        "outputs participate in calculating loss.\nParameter indices which did not receive grad "
        "for rank " + std::to_string(dist::get_rank()) + ":" + missing_idx +
        "\nParameter names: " + missing_names);
  }

  void prepare_for_backward(const std::vector<Tensor>& outputs) {
    reset();
    armed_ = true;
    stats_.buckets = static_cast<int64_t>(buckets_.size());
    stats_.launched_during_backward = 0;
    stats_.comm_bytes = 0;
    if (options_.static_graph() && walked_) {
      // The graph is the same as in the first iteration: its unused parameters again.
      for (size_t i : static_unused_) mark_ready(i, /*used=*/false);
      return;
    }
    if (!options_.find_unused_parameters() && !options_.static_graph()) return;
    ++stats_.graph_walks;
    // Every node reachable from the outputs; a parameter whose accumulator is not among them
    // gets no gradient in this backward.
    std::unordered_set<autograd::Node*> seen;
    std::vector<autograd::Node*> stack;
    for (const Tensor& o : outputs) {
      if (!o.defined() || !o.requires_grad()) continue;
      autograd::Edge e = autograd::gradient_edge(o);
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
    while (!stack.empty()) {
      autograd::Node* n = stack.back();
      stack.pop_back();
      for (const autograd::Edge& e : n->next_edges())
        if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
    std::vector<size_t> unused;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!seen.count(autograd::gradient_edge(params_[i]).fn.get())) unused.push_back(i);
    if (options_.static_graph()) {
      static_unused_ = unused;
      walked_ = true;
    }
    for (size_t i : unused) mark_ready(i, /*used=*/false);
  }

  // A Join's shadow of one synchronized backward on a rank that has no batch: the same
  // collectives, in the same order, on zero gradients (the hook's too, so they match).
  void shadow_backward() {
    reset();
    for (size_t bi = 0; bi < buckets_.size(); ++bi) {
      Bucket& b = buckets_[bi];
      b.flat.zero_();
      launch(b, bi, bi + 1 == buckets_.size());
      b.fut.wait();
    }
    if (uses_mask_reduce()) {
      Tensor u = zeros({static_cast<int64_t>(params_.size())}, TensorOptions().dtype(kInt64));
      dist::all_reduce(u, dist::ReduceOp::MAX);
      if (options_.static_graph()) {
        const int64_t* up = u.data_ptr<int64_t>();
        static_used_.assign(params_.size(), 0);
        for (size_t i = 0; i < params_.size(); ++i) static_used_[i] = up[i] != 0;
      }
    }
    if (options_.static_graph()) walked_ = walked_before_finalize_ = true;
    ++stats_.joined_steps;
  }

 private:
  struct Bucket {
    std::vector<size_t> vars;
    std::vector<int64_t> offsets;  // element offset of each var in flat
    Tensor flat;
    size_t pending = 0;
    bool launched = false;
    HookFuture fut;
  };

  void build_buckets() {
    const double cap = options_.bucket_cap_mb() * 1024.0 * 1024.0;
    GRADLAB_CHECK(options_.bucket_cap_mb() > 0, ValueError, "DistributedDataParallel",
                  "bucket_cap_mb must be positive", "> 0", std::to_string(options_.bucket_cap_mb()));
    // Reverse order: backward produces the last layer's gradients first.
    Bucket cur;
    double bytes = 0;
    auto close = [&] {
      if (cur.vars.empty()) return;
      int64_t n = 0;
      for (size_t v : cur.vars) {
        cur.offsets.push_back(n);
        n += params_[v].numel();
      }
      cur.flat = zeros({n}, params_[cur.vars.front()].options());
      buckets_.push_back(std::move(cur));
      cur = Bucket();
      bytes = 0;
    };
    for (size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k];
      const double b = static_cast<double>(p.numel()) * static_cast<double>(element_size(p.dtype()));
      const bool other_kind = !cur.vars.empty() && (params_[cur.vars.front()].dtype() != p.dtype() ||
                                                    params_[cur.vars.front()].device() != p.device());
      if (other_kind || (!cur.vars.empty() && bytes + b > cap)) close();
      cur.vars.push_back(k);
      bytes += b;
    }
    close();
    bucket_of_.assign(params_.size(), {0, 0});
    for (size_t bi = 0; bi < buckets_.size(); ++bi) {
      std::vector<int64_t> idx;
      for (size_t j = 0; j < buckets_[bi].vars.size(); ++j) {
        bucket_of_[buckets_[bi].vars[j]] = {bi, j};
        idx.push_back(static_cast<int64_t>(buckets_[bi].vars[j]));
      }
      bucket_indices_.push_back(idx);
    }
  }

  void reset() {
    armed_ = false;
    num_ready_ = 0;
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), 0);
    std::fill(used_.begin(), used_.end(), 0);
    for (Bucket& b : buckets_) {
      b.pending = b.vars.size();
      b.launched = false;
    }
  }

  // A parameter's gradient is final for this backward: into its bucket it goes.
  void mark_ready(size_t i, bool used = true) {
    if (!armed_) return;  // under no_sync, or a backward not prepared by forward
    if (ready_[i]) {
      throw AutogradError(
          "Expected to mark a variable ready only once. This error is caused by one of the "
          "following reasons: 1) Use of a module parameter outside the `forward` function. Please "
          "make sure model parameters are not shared across multiple concurrent forward-backward "
          "passes. 2) Reused parameters in multiple reentrant backward passes. Parameter at index " +
          std::to_string(i) + " with name " + names_[i] + " has been marked as ready twice.");
    }
    ready_[i] = 1;
    used_[i] = used ? 1 : 0;
    ++num_ready_;
    auto [bi, j] = bucket_of_[i];
    Bucket& b = buckets_[bi];
    {
      NoGradGuard ng;
      const Tensor& p = params_[i];
      Tensor slot = b.flat.narrow(0, b.offsets[j], p.numel());
      const bool is_view = p.grad().defined() && p.grad().is_same_storage(b.flat) &&
                           p.grad().storage_offset() == b.flat.storage_offset() + b.offsets[j];
      if (!is_view) {
        if (p.grad().defined()) slot.copy_(p.grad().reshape({p.numel()}));
        else slot.zero_();
        // From now on the gradient lives in the bucket (the separate one is freed).
        if (options_.gradient_as_bucket_view() && used) p.mutable_grad() = slot.view(p.sizes());
      }
    }
    --b.pending;
    const bool last = num_ready_ == params_.size();
    if (options_.overlap() || last) launch_ready(last);
    // Let MPI move the buckets already in flight (it progresses only inside MPI calls).
    for (size_t k = 0; k < next_launch_; ++k) buckets_[k].fut.is_completed();
    if (last) finalize();
  }

  // Buckets start in index order on every rank (MPI requires the same collective order).
  void launch_ready(bool last) {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      const size_t bi = next_launch_++;
      launch(buckets_[bi], bi, bi + 1 == buckets_.size());
      if (!last) ++stats_.launched_during_backward;
    }
  }

  // The bucket's collective: the registered hook, or all_reduce(AVG).
  void launch(Bucket& b, size_t index, bool is_last) {
    if (hook_) {
      GradBucket gb(static_cast<int64_t>(index), b.flat, is_last);
      b.fut = hook_(gb);
    } else {
      GradBucket gb(static_cast<int64_t>(index), b.flat, is_last);
      b.fut = comm_hooks::allreduce_hook(gb);
    }
    b.launched = true;
    stats_.comm_bytes += b.fut.bytes();
  }

  bool uses_mask_reduce() const {
    return (options_.find_unused_parameters() || options_.static_graph()) &&
           !(options_.static_graph() && walked_before_finalize_);
  }

  void finalize() {
    for (Bucket& b : buckets_) b.fut.wait();
    std::vector<char> globally_used(params_.size(), 1);
    if (options_.static_graph() && walked_before_finalize_) globally_used = static_used_;
    if (uses_mask_reduce()) {
      // A parameter unused on every rank keeps its .grad as it was (PyTorch leaves it alone).
      Tensor u = empty({static_cast<int64_t>(params_.size())}, TensorOptions().dtype(kInt64));
      int64_t* up = u.data_ptr<int64_t>();
      for (size_t i = 0; i < params_.size(); ++i) up[i] = used_[i];
      dist::all_reduce(u, dist::ReduceOp::MAX);
      for (size_t i = 0; i < params_.size(); ++i) globally_used[i] = up[i] != 0;
      if (options_.static_graph()) static_used_ = globally_used;
    }
    NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!globally_used[i]) continue;
      auto [bi, j] = bucket_of_[i];
      Tensor& p = params_[i];
      Tensor avg = buckets_[bi].flat.narrow(0, buckets_[bi].offsets[j], p.numel()).reshape(p.sizes());
      if (grad_scale_ != 1.0) avg.mul_(grad_scale_);
      if (options_.gradient_as_bucket_view()) {
        if (!p.grad().defined() || !p.grad().is_same_storage(buckets_[bi].flat)) p.mutable_grad() = avg;
      } else if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
    }
    grad_scale_ = 1.0;
    walked_before_finalize_ = walked_;
    ++stats_.reductions;
    armed_ = false;
  }

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  DDPOptions options_;
  std::vector<unsigned> hook_ids_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> bucket_of_;  // param -> (bucket, slot)
  std::vector<std::vector<int64_t>> bucket_indices_;
  std::vector<char> ready_, used_;
  size_t num_ready_ = 0, next_launch_ = 0;
  bool armed_ = false;
  DDPStats stats_;
  CommHook hook_;
  double grad_scale_ = 1.0;
  // static_graph: the first iteration's walk and its unused parameters. The used-mask reduce of
  // find_unused_parameters runs in the first iteration only (walked_before_finalize_ turns true
  // after it), on every rank alike.
  bool walked_ = false, walked_before_finalize_ = false;
  std::vector<size_t> static_unused_;
  std::vector<char> static_used_;
};

}  // namespace detail

namespace {

// Same parameter count, shapes and dtypes as rank 0, or a clear error (before any collective on
// mismatched buffers could hang or corrupt memory).
void check_same_model(const NamedTensors& named) {
  // FNV-1a over (numel, dtype) of every parameter, plus the count.
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  for (const auto& [name, p] : named) {
    for (int64_t s : p.sizes()) mix(static_cast<uint64_t>(s));
    mix(static_cast<uint64_t>(p.dtype()));
  }
  const int n = dist::get_world_size();
  Tensor mine = empty({2}, TensorOptions().dtype(kInt64));
  mine.data_ptr<int64_t>()[0] = static_cast<int64_t>(named.size());
  mine.data_ptr<int64_t>()[1] = static_cast<int64_t>(h >> 1);
  std::vector<Tensor> all(static_cast<size_t>(n));
  dist::all_gather(all, mine);
  const int64_t* r0 = all[0].data_ptr<int64_t>();
  for (int r = 1; r < n; ++r) {
    const int64_t* rr = all[static_cast<size_t>(r)].data_ptr<int64_t>();
    if (rr[0] != r0[0] || rr[1] != r0[1]) {
      throw dist::DistributedError(error_message(
          "DistributedDataParallel", "rank " + std::to_string(r) + " holds a different model than rank 0",
          std::to_string(r0[0]) + " parameters with rank 0's shapes and dtypes",
          std::to_string(rr[0]) + " parameters" + (rr[0] == r0[0] ? " with other shapes or dtypes" : ""),
          "build the same model on every rank before wrapping it"));
    }
  }
}

}  // namespace

DistributedDataParallelBase::DistributedDataParallelBase(std::shared_ptr<Module> module,
                                                         DDPOptions options)
    : Module("DistributedDataParallel"), options_(options) {
  GRADLAB_CHECK(module != nullptr, ValueError, "DistributedDataParallel", "the module is empty",
                "a constructed module", "nullptr");
  GRADLAB_CHECK(dist::is_initialized(), dist::DistributedError, "DistributedDataParallel",
                "the default process group is not initialized", "init_process_group() first",
                "no group", "call distributed::init_process_group(\"mpi\") before wrapping the model");
  register_module("module", module);
  NamedTensors named = module->named_parameters();
  check_same_model(named);
  // Rank 0's initial weights (and buffers) everywhere: every replica starts identical.
  std::vector<Tensor> state;
  for (auto& [n, p] : named) state.push_back(p);
  for (auto& [n, b] : module->named_buffers()) state.push_back(b);
  if (!state.empty()) dist::broadcast_coalesced(state, 0);
  std::vector<Tensor> trained;
  std::vector<std::string> names;
  for (auto& [n, p] : named)
    if (p.requires_grad()) {
      trained.push_back(p);
      names.push_back("module." + n);
    }
  reducer_ = std::make_unique<detail::Reducer>(std::move(trained), std::move(names), options_);
}

DistributedDataParallelBase::~DistributedDataParallelBase() = default;

std::vector<std::vector<int64_t>> DistributedDataParallelBase::bucket_indices() const {
  return reducer_->bucket_indices();
}
const DDPStats& DistributedDataParallelBase::stats() const { return reducer_->stats(); }

void DistributedDataParallelBase::register_comm_hook(CommHook hook) {
  GRADLAB_CHECK(static_cast<bool>(hook), ValueError, "register_comm_hook", "the hook is empty",
                "a callable", "an empty std::function");
  reducer_->set_hook(std::move(hook));
}

void DistributedDataParallelBase::pre_forward() {
  reducer_->prepare_for_forward();
  if (join_ != nullptr) {
    const bool will_sync = require_sync_ && GradMode::is_enabled();
    GRADLAB_CHECK(require_sync_, ValueError, "Join", "no_sync() inside a Join",
                  "synchronized steps only", "a step under no_sync()",
                  "accumulate outside the Join, or leave no_sync() out");
    const int64_t active = join_->notify_training(will_sync);
    const double n = static_cast<double>(distributed::get_world_size());
    reducer_->set_grad_scale(join_->divide_by_initial_ || active <= 0 ? 1.0 : n / static_cast<double>(active));
  }
  if (options_.broadcast_buffers() && dist::get_world_size() > 1) {
    std::vector<Tensor> bufs = buffers();
    if (!bufs.empty()) dist::broadcast_coalesced(bufs, 0);
  }
}

void DistributedDataParallelBase::post_forward(const std::vector<Tensor>& outputs) {
  if (GradMode::is_enabled() && require_sync_) reducer_->prepare_for_backward(outputs);
}

}  // namespace gradlab::nn::parallel

namespace gradlab::nn::parallel {

// The Join protocol. Every iteration of every rank starts with one all_reduce(SUM) of
// [training, syncing]: a training rank sends [1, 1] (or [1, 0] for a step without backward
// sync, e.g. under NoGradGuard), a joined rank [0, 0]. The joined rank reads the sums: no rank
// training -> done; otherwise it does what the training ranks' step does next: the buffer
// broadcast (when broadcast_buffers) and, when they sync, every bucket's collective on zeros.
Join::Join(DistributedDataParallelBase& ddp, bool divide_by_initial_world_size)
    : ddp_(&ddp), divide_by_initial_(divide_by_initial_world_size), uncaught_(std::uncaught_exceptions()) {
  GRADLAB_CHECK(ddp.join_ == nullptr, ValueError, "Join", "the model is in a Join already",
                "one Join at a time", "a second one", "nest no Joins");
  ddp.join_ = this;
}

Join::~Join() noexcept(false) {
  const bool unwinding = std::uncaught_exceptions() > uncaught_;
  if (!joined_ && !unwinding) join();
  ddp_->join_ = nullptr;
}

int64_t Join::notify_training(bool will_sync) {
  GRADLAB_CHECK(!joined_, ValueError, "Join", "a forward after join()", "no forward once joined",
                "a forward", "call join() after the rank's last batch");
  Tensor flag = empty({2}, TensorOptions().dtype(kInt64));
  flag.data_ptr<int64_t>()[0] = 1;
  flag.data_ptr<int64_t>()[1] = will_sync ? 1 : 0;
  distributed::all_reduce(flag, distributed::ReduceOp::SUM);
  return flag.data_ptr<int64_t>()[0];
}

void Join::join() {
  if (joined_) return;
  joined_ = true;
  bool last_joiner = true;
  for (;;) {
    Tensor flag = zeros({2}, TensorOptions().dtype(kInt64));
    distributed::all_reduce(flag, distributed::ReduceOp::SUM);
    const int64_t training = flag.data_ptr<int64_t>()[0], syncing = flag.data_ptr<int64_t>()[1];
    if (training == 0) break;
    last_joiner = false;
    if (ddp_->options_.broadcast_buffers() && distributed::get_world_size() > 1) {
      std::vector<Tensor> bufs = ddp_->buffers();
      if (!bufs.empty()) distributed::broadcast_coalesced(bufs, 0);
    }
    if (syncing > 0) ddp_->reducer_->shadow_backward();
  }
  // Ranks that joined early did not step their optimizers after: everyone takes the model of a
  // rank that trained to the end (the highest last joiner; PyTorch's _sync_final_model).
  Tensor src = full({1}, last_joiner ? distributed::get_rank() : -1, TensorOptions().dtype(kInt64));
  distributed::all_reduce(src, distributed::ReduceOp::MAX);
  std::vector<Tensor> state = ddp_->parameters();
  for (const Tensor& b : ddp_->buffers()) state.push_back(b);
  if (!state.empty()) {
    NoGradGuard ng;
    distributed::broadcast_coalesced(state, static_cast<int>(src.item<int64_t>()));
  }
  ddp_->join_ = nullptr;
}

}  // namespace gradlab::nn::parallel
