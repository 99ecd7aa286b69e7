#include "gradlab/distributed/ddp.hpp"

#include <algorithm>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/distributed/process_group.hpp"

namespace gradlab::nn::parallel {

namespace dist = gradlab::distributed;

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
      if (b.launched) b.work.wait();
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
    if (!options_.find_unused_parameters()) return;
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
    for (size_t i : unused) mark_ready(i, /*used=*/false);
  }

 private:
  struct Bucket {
    std::vector<size_t> vars;
    std::vector<int64_t> offsets;  // element offset of each var in flat
    Tensor flat;
    size_t pending = 0;
    bool launched = false;
    dist::Work work;
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
      if (p.grad().defined()) slot.copy_(p.grad().reshape({p.numel()}));
      else slot.zero_();
    }
    --b.pending;
    const bool last = num_ready_ == params_.size();
    if (options_.overlap() || last) launch_ready(last);
    // Let MPI move the buckets already in flight (it progresses only inside MPI calls).
    for (size_t k = 0; k < next_launch_; ++k) buckets_[k].work.is_completed();
    if (last) finalize();
  }

  // Buckets start in index order on every rank (MPI requires the same collective order).
  void launch_ready(bool last) {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      Bucket& b = buckets_[next_launch_++];
      b.work = dist::all_reduce_async(b.flat, dist::ReduceOp::AVG);
      b.launched = true;
      if (!last) ++stats_.launched_during_backward;
    }
  }

  void finalize() {
    for (Bucket& b : buckets_) b.work.wait();
    std::vector<char> globally_used(params_.size(), 1);
    if (options_.find_unused_parameters()) {
      // A parameter unused on every rank keeps its .grad as it was (PyTorch leaves it alone).
      Tensor u = empty({static_cast<int64_t>(params_.size())}, TensorOptions().dtype(kInt64));
      int64_t* up = u.data_ptr<int64_t>();
      for (size_t i = 0; i < params_.size(); ++i) up[i] = used_[i];
      dist::all_reduce(u, dist::ReduceOp::MAX);
      for (size_t i = 0; i < params_.size(); ++i) globally_used[i] = up[i] != 0;
    }
    NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!globally_used[i]) continue;
      auto [bi, j] = bucket_of_[i];
      Tensor& p = params_[i];
      Tensor avg = buckets_[bi].flat.narrow(0, buckets_[bi].offsets[j], p.numel()).reshape(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(avg);
      else p.mutable_grad() = avg.clone();
    }
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

void DistributedDataParallelBase::pre_forward() {
  reducer_->prepare_for_forward();
  if (options_.broadcast_buffers() && dist::get_world_size() > 1) {
    std::vector<Tensor> bufs = buffers();
    if (!bufs.empty()) dist::broadcast_coalesced(bufs, 0);
  }
}

void DistributedDataParallelBase::post_forward(const std::vector<Tensor>& outputs) {
  if (GradMode::is_enabled() && require_sync_) reducer_->prepare_for_backward(outputs);
}

}  // namespace gradlab::nn::parallel
