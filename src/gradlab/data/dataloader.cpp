#include "gradlab/data/dataloader.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <variant>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {

// The tensors `parts` (one shape and dtype, contiguous, on the CPU, no graph to record) copied
// row after row into one new tensor [B, ...]: one allocation and B memcpys, where stack() makes
// a view per part and a Cat node. Undefined when the parts do not qualify: stack() then does
// the work, with its own checks and messages (and its dtype promotion).
Tensor stack_rows(const TensorList& parts) {
  const Tensor& first = parts.front();
  const bool grad = GradMode::is_enabled();
  for (const Tensor& t : parts)
    if (!t.defined() || !t.is_cpu() || t.dtype() != first.dtype() || t.sizes() != first.sizes() ||
        !t.is_contiguous() || (grad && t.requires_grad()))
      return {};
  Shape shape = first.sizes();
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  Tensor out = empty(shape, TensorOptions().dtype(first.dtype()));
  const size_t row = static_cast<size_t>(first.numel()) * element_size(first.dtype());
  if (row == 0) return out;  // empty samples: nothing to copy (and maybe no buffer to point at)
  char* dst = out.impl()->data();
  for (const Tensor& t : parts) {
    std::memcpy(dst, t.impl()->data(), row);
    dst += row;
  }
  return out;
}

Tensor stack_samples(const TensorList& parts) {
  Tensor fast = stack_rows(parts);
  return fast.defined() ? fast : stack(parts, 0);
}

}  // namespace

Batch stack_collate(std::vector<Example<>>& samples) {
  GRADLAB_CHECK(!samples.empty(), ValueError, "stack_collate", "no samples", "at least one", "0");
  TensorList data, target;
  data.reserve(samples.size());
  for (auto& s : samples) {
    data.push_back(s.data);
    if (s.target.defined()) target.push_back(s.target);
  }
  GRADLAB_CHECK(target.empty() || target.size() == samples.size(), ValueError, "stack_collate",
                "some samples have a target and some do not", "all or none",
                std::to_string(target.size()) + " of " + std::to_string(samples.size()));
  Batch b;
  b.data = stack_samples(data);
  if (!target.empty()) b.target = stack_samples(target);
  return b;
}

namespace {

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace

// One pass over the batches [start, end) of an epoch. Workers claim batch numbers in order and
// may run ahead of the consumer by at most `max_ahead` batches; finished batches wait in
// `ready_` until the consumer takes them in order, so the order never depends on timing.
struct DataLoader::Run {
  using Result = std::variant<Batch, std::exception_ptr>;

  Run(const DataLoader& loader, uint64_t epoch, std::vector<std::vector<int64_t>> batches,
      size_t start)
      : dataset_(loader.dataset_),
        collate_(loader.options_.collate_ ? loader.options_.collate_ : Collate(stack_collate)),
        batched_(!loader.options_.collate_),
        seed_(loader.seed_),
        epoch_(epoch),
        batches_(std::move(batches)),
        next_claim_(start),
        next_take_(start) {
    const size_t workers = loader.options_.num_workers_;
    max_ahead_ =
        std::max<size_t>(1, loader.options_.prefetch_factor_) * std::max<size_t>(1, workers);
    for (size_t w = 0; w < workers; ++w) threads_.emplace_back([this, w] { work(w); });
  }

  ~Run() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  /// The next batch in order, or nullopt at the end of the epoch; rethrows a failed batch.
  std::optional<Batch> next() {
    if (next_take_ >= batches_.size()) return std::nullopt;
    Result r;
    if (threads_.empty()) {
      r = make(next_take_, -1);
    } else {
      std::unique_lock lock(mu_);
      ready_cv_.wait(lock, [&] { return ready_.count(next_take_) != 0; });
      auto node = ready_.extract(next_take_);
      r = std::move(node.mapped());
    }
    {
      std::lock_guard lock(mu_);
      ++next_take_;
    }
    work_cv_.notify_all();
    if (auto* e = std::get_if<std::exception_ptr>(&r)) std::rethrow_exception(*e);
    return std::get<Batch>(std::move(r));
  }

 private:
  void work(size_t worker) {
    for (;;) {
      size_t k;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] {
          return stop_ || next_claim_ >= batches_.size() || next_claim_ < next_take_ + max_ahead_;
        });
        if (stop_ || next_claim_ >= batches_.size()) return;
        k = next_claim_++;
      }
      Result r = make(k, static_cast<int64_t>(worker));
      {
        std::lock_guard lock(mu_);
        ready_.emplace(k, std::move(r));
      }
      ready_cv_.notify_all();
    }
  }

  /// Batch k: one dataset_->get_batch() call when the dataset has one (and the collate is the
  /// default), else every sample with its own stream, then collate. Never throws: errors are
  /// returned (and rethrown by next() in the caller's thread).
  Result make(size_t k, int64_t worker) {
    NoGradGuard no_grad;  // data preparation never records a graph
    const auto& idx = batches_[k];
    const std::string where =
        (worker < 0 ? std::string("the main thread") : "worker " + std::to_string(worker)) +
        " (epoch " + std::to_string(epoch_) + ", batch " + std::to_string(k) + ")";
    if (!batched_) return make_per_sample(idx, where);
    std::exception_ptr cause;
    try {
      if (std::optional<Batch> b = dataset_->get_batch(idx)) {
        b->indices = idx;
        return std::move(*b);
      }
      return make_per_sample(idx, where);
    } catch (...) {
      cause = std::current_exception();
    }
    // get_batch failed: the per-sample path names the sample that fails, as it always has.
    Result r = make_per_sample(idx, where);
    if (std::holds_alternative<std::exception_ptr>(r)) return r;
    return std::make_exception_ptr(SampleError(
        error_message("DataLoader", "get_batch failed in " + where + ": " + what_of(cause), {}, {},
                      "every sample loads alone: the dataset's get_batch disagrees with its get"),
        -1, cause));
  }

  Result make_per_sample(const std::vector<int64_t>& idx, const std::string& where) {
    std::vector<Example<>> samples;
    samples.reserve(idx.size());
    for (int64_t i : idx) {
      try {
        Generator gen(derive_seed(seed_, epoch_, static_cast<uint64_t>(i)));
        samples.push_back(dataset_->sample(static_cast<size_t>(i), gen));
      } catch (...) {
        auto cause = std::current_exception();
        return std::make_exception_ptr(SampleError(
            error_message(
                "DataLoader",
                "sample " + std::to_string(i) + " failed in " + where + ": " + what_of(cause), {},
                {}, "reproduce it with dataset.get(" + std::to_string(i) + ")"),
            i, cause));
      }
    }
    try {
      Batch b = collate_(samples);
      b.indices = idx;
      return b;
    } catch (...) {
      auto cause = std::current_exception();
      return std::make_exception_ptr(SampleError(
          error_message("DataLoader", "collate failed in " + where + ": " + what_of(cause)), -1,
          cause));
    }
  }

  std::shared_ptr<Dataset> dataset_;
  Collate collate_;
  bool batched_;  // no custom collate: try dataset_->get_batch first
  uint64_t seed_, epoch_;
  std::vector<std::vector<int64_t>> batches_;
  size_t max_ahead_ = 1;

  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  bool stop_ = false;
  size_t next_claim_;  // next batch a worker will make
  size_t next_take_;   // next batch the consumer takes
  std::map<size_t, Result> ready_;
  std::vector<std::thread> threads_;
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  GRADLAB_CHECK(dataset_ != nullptr, ValueError, "DataLoader", "dataset is null", "a dataset",
                "null");
  GRADLAB_CHECK(options_.batch_size_ >= 1, ValueError, "DataLoader", "batch_size must be >= 1",
                "batch_size >= 1", std::to_string(options_.batch_size_));
  sampler_ = options_.sampler_;
  if (!sampler_) {
    if (options_.shuffle_)
      sampler_ = std::make_shared<RandomSampler>();
    else
      sampler_ = std::make_shared<SequentialSampler>();
  }
  seed_ = options_.seed_ ? *options_.seed_ : default_generator().next_u64();
}

DataLoader::~DataLoader() = default;

std::vector<std::vector<int64_t>> DataLoader::epoch_batches(uint64_t epoch) const {
  const size_t n = dataset_->size();
  std::vector<int64_t> order = sampler_->indices(n, seed_, epoch);
  for (int64_t i : order)
    GRADLAB_CHECK(i >= 0 && static_cast<size_t>(i) < n, ShapeError, "DataLoader",
                  "sampler returned an index out of range", "0 <= index < " + std::to_string(n),
                  std::to_string(i));
  const size_t bs = options_.batch_size_;
  std::vector<std::vector<int64_t>> batches;
  for (size_t at = 0; at < order.size(); at += bs) {
    const size_t end = std::min(order.size(), at + bs);
    if (end - at < bs && options_.drop_last_) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(at),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

size_t DataLoader::size() const { return epoch_batches(epoch_).size(); }

DataLoader::Iterator DataLoader::begin() {
  run_.reset();
  current_.reset();
  auto batches = epoch_batches(epoch_);
  if (position_ >= batches.size() && position_ > 0) {
    // Saved right after the last batch of an epoch: the next one starts.
    ++epoch_;
    position_ = 0;
    batches = epoch_batches(epoch_);
  }
  run_ = std::make_unique<Run>(*this, epoch_, std::move(batches), static_cast<size_t>(position_));
  advance();
  return Iterator(this);
}

void DataLoader::advance() {
  current_.reset();
  if (!run_) return;
  std::optional<Batch> b = run_->next();  // may throw SampleError: position stays before it
  if (b) {
    current_ = std::move(b);
    ++position_;
  } else {
    run_.reset();
    ++epoch_;
    position_ = 0;
  }
}

void DataLoader::set_epoch(uint64_t epoch) {
  run_.reset();
  current_.reset();
  epoch_ = epoch;
  position_ = 0;
}

LoaderState DataLoader::state() const { return {seed_, epoch_, position_}; }

void DataLoader::load_state(const LoaderState& s) {
  run_.reset();
  current_.reset();
  seed_ = s.seed;
  epoch_ = s.epoch;
  position_ = s.position;
  const size_t nb = epoch_batches(epoch_).size();
  GRADLAB_CHECK(position_ <= nb, ValueError, "DataLoader::load_state",
                "position past the end of the epoch", "position <= " + std::to_string(nb),
                std::to_string(position_),
                "the state comes from a loader with another dataset, batch size or sampler");
}

Batch& DataLoader::Iterator::operator*() const {
  GRADLAB_CHECK(loader_ && loader_->current_, ValueError, "DataLoader::Iterator",
                "dereferenced past the end", "a batch", "end");
  return *loader_->current_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (loader_) loader_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(Sentinel) const {
  return !loader_ || !loader_->current_;
}

}  // namespace gradlab::data
