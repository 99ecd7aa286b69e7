#pragma once
// LibTorch's torch::data::make_data_loader and StatelessDataLoader over the CRTP datasets of
// torch_data.hpp and the samplers of torch_samplers.hpp:
//
//   auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
//       std::move(dataset), torch::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... }   // the dataset's BatchType: std::vector<Example<>>, or
//                                         // Example<> after .map(transforms::Stack<>())
//
// As in LibTorch: begin() resets the sampler (a RandomSampler draws a new permutation) and starts
// an epoch; the sampler is asked for batch_size indices at a time and a short last batch is
// dropped with drop_last; with workers(k) > 0, k threads each fetch batches from their own copy
// of the dataset, at most max_jobs (default 2 k) batches ahead, and the batches come back in the
// sampler's order (enforce_ordering); an exception thrown by the dataset is rethrown by the
// iterator at that batch. With workers(0) the calling thread fetches each batch when asked.
//
// The options are gradlab's data::DataLoaderOptions (dataloader.hpp), whose batch_size, workers,
// drop_last, max_jobs and enforce_ordering are LibTorch's; its gradlab-only settings (shuffle,
// seed, collate, sampler) belong to data::DataLoader and are refused here with a ValueError.
// Not offered: timeout, stateful datasets (ChunkDataset), save/load of the sampler.

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/data/torch_data.hpp"
#include "gradlab/data/torch_samplers.hpp"

namespace gradlab::data {

namespace detail {
/// Throws ValueError when `options` sets something make_data_loader cannot honour.
void check_torch_loader_options(const DataLoaderOptions& options);
/// Throws ValueError for a dataset without a size (make_data_loader needs one for its sampler).
size_t torch_dataset_size(const std::optional<size_t>& size);
}  // namespace detail

/// Batches of `Dataset` in the order of `Sampler`; see the top of this file.
template <class Dataset, class Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : options_(std::move(options)), sampler_(std::move(sampler)) {
    detail::check_torch_loader_options(options_);
    if (options_.num_workers_ == 0) {
      main_dataset_ = std::make_unique<Dataset>(std::move(dataset));
    } else {
      if constexpr (std::is_copy_constructible_v<Dataset>) {
        for (size_t w = 0; w < options_.num_workers_; ++w)
          worker_datasets_.push_back(std::make_unique<Dataset>(dataset));
      } else {
        GRADLAB_CHECK(false, ValueError, "make_data_loader",
                      "workers > 0 need a copyable dataset (each worker fetches from its own copy)",
                      "a copy-constructible dataset or workers(0)",
                      std::to_string(options_.num_workers_) + " workers");
      }
    }
  }
  ~StatelessDataLoader() { join(); }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  /// An input iterator over the batches of the epoch begin() started (LibTorch's Iterator).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchType*;
    using reference = BatchType&;
    Iterator() = default;
    BatchType& operator*() const { return *loader_->current(); }
    BatchType* operator->() const { return &**this; }
    Iterator& operator++() {
      loader_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    /// Only comparisons with end() are meaningful, as in LibTorch.
    bool operator==(const Iterator& o) const { return done() == o.done(); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class StatelessDataLoader;
    explicit Iterator(StatelessDataLoader* loader) : loader_(loader) {}
    bool done() const { return loader_ == nullptr || loader_->current() == nullptr; }
    StatelessDataLoader* loader_ = nullptr;
  };

  /// Resets the sampler and starts a new epoch (stopping one still running).
  Iterator begin() {
    join();
    sampler_.reset(std::nullopt);
    requests_.clear();
    while (std::optional<BatchRequestType> indices = sampler_.next(options_.batch_size_)) {
      if (indices->size() < options_.batch_size_ && options_.drop_last_) break;
      if (indices->empty()) break;
      requests_.push_back(std::move(*indices));
    }
    next_ = 0;
    current_.reset();
    if (!worker_datasets_.empty()) start_workers();
    advance();
    return Iterator(this);
  }
  Iterator end() { return Iterator(); }

  /// Stops the worker threads (the destructor does too); the next begin() restarts them.
  void join() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_cv_.notify_all();
    space_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
  }
  const DataLoaderOptions& options() const noexcept { return options_; }
  /// The sampler (a gradlab extension: e.g. sampler().set_epoch(e) before begin()).
  Sampler& sampler() { return sampler_; }
  /// Batches in the current epoch.
  size_t size() const { return requests_.size(); }

 private:
  struct Slot {
    std::optional<BatchType> batch;
    std::exception_ptr error;
    bool ready = false;
  };

  BatchType* current() { return current_ ? &*current_ : nullptr; }

  void advance() {
    current_.reset();
    if (next_ >= requests_.size()) return;
    const size_t i = next_++;
    if (worker_datasets_.empty()) {
      current_.emplace(main_dataset_->get_batch(requests_[i]));
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ready_cv_.wait(lock, [&] { return slots_[i].ready; });
    Slot slot = std::move(slots_[i]);
    slots_[i] = Slot();
    consumed_ = i + 1;
    lock.unlock();
    space_cv_.notify_all();
    if (slot.error) {
      next_ = requests_.size();  // the epoch ends with the error, as LibTorch's
      join();
      std::rethrow_exception(slot.error);
    }
    current_.emplace(std::move(*slot.batch));
  }

  void start_workers() {
    slots_.assign(requests_.size(), Slot());
    claimed_ = 0;
    consumed_ = 0;
    const size_t max_jobs = options_.max_jobs_.value_or(2 * options_.num_workers_);
    for (size_t w = 0; w < worker_datasets_.size(); ++w) {
      threads_.emplace_back([this, w, max_jobs] {
        Dataset& dataset = *worker_datasets_[w];
        for (;;) {
          size_t i = 0;
          {
            std::unique_lock<std::mutex> lock(mutex_);
            space_cv_.wait(lock, [&] {
              return stop_ || claimed_ >= requests_.size() || claimed_ < consumed_ + max_jobs;
            });
            if (stop_ || claimed_ >= requests_.size()) return;
            i = claimed_++;
          }
          Slot slot;
          try {
            slot.batch.emplace(dataset.get_batch(requests_[i]));
          } catch (...) {
            slot.error = std::current_exception();
          }
          slot.ready = true;
          {
            std::lock_guard<std::mutex> lock(mutex_);
            slots_[i] = std::move(slot);
          }
          ready_cv_.notify_all();
        }
      });
    }
  }

  DataLoaderOptions options_;
  Sampler sampler_;
  std::unique_ptr<Dataset> main_dataset_;
  std::vector<std::unique_ptr<Dataset>> worker_datasets_;
  std::vector<BatchRequestType> requests_;
  size_t next_ = 0;
  std::optional<BatchType> current_;

  std::mutex mutex_;
  std::condition_variable ready_cv_, space_cv_;
  std::vector<std::thread> threads_;
  std::vector<Slot> slots_;
  size_t claimed_ = 0, consumed_ = 0;
  bool stop_ = false;
};

/// A loader of `dataset` in the order of `sampler`.
template <class Dataset, class Sampler,
          std::enable_if_t<!std::is_arithmetic_v<Sampler> &&
                               !std::is_same_v<std::decay_t<Sampler>, DataLoaderOptions>,
                           int> = 0>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, Sampler sampler, DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(
      std::move(dataset), std::move(sampler), std::move(options));
}

/// A loader of `dataset` with a `Sampler(dataset.size().value())` (RandomSampler unless named:
/// make_data_loader<samplers::SequentialSampler>(dataset, options)).
template <class Sampler = samplers::RandomSampler, class Dataset,
          std::enable_if_t<std::is_constructible_v<Sampler, size_t>, int> = 0>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const size_t size = detail::torch_dataset_size(dataset.size());
  Sampler sampler(size);
  return make_data_loader(std::move(dataset), std::move(sampler), std::move(options));
}

/// make_data_loader(dataset, 64): LibTorch's DataLoaderOptions converts from a batch size.
template <class Sampler = samplers::RandomSampler, class Dataset,
          std::enable_if_t<std::is_constructible_v<Sampler, size_t>, int> = 0>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                       size_t batch_size) {
  return make_data_loader<Sampler>(std::move(dataset), DataLoaderOptions(batch_size));
}

}  // namespace gradlab::data
