#pragma once
// DataLoader: batches from a Dataset, optionally prepared by worker threads.
//
//   data::DataLoader loader(train_set, data::DataLoaderOptions(64).shuffle(true).num_workers(2)
//                                          .seed(42));
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (data::Batch& batch : loader) { auto loss = criterion(model(batch.data), batch.target); }
//
// Determinism: the batches and their order depend only on (seed, epoch) and the options, never
// on num_workers or thread timing. The sampler's order comes from derive_seed(seed, epoch), and
// sample i of epoch e gets its own random stream Generator(derive_seed(seed, e, i)) for random
// transforms; workers never share a stream.
//
// Fetching: when the dataset has a batched fetch (Dataset::get_batch: TensorDataset, CsvDataset,
// a Subset of one) and no custom collate is set, each batch is one get_batch(indices) call;
// otherwise every sample is fetched with sample(i, gen) and the samples are collated. Both give
// the same batches (values, order, indices); checks/data/dataloader_test.cpp compares them.
//
// Epochs: each range-for (begin()) continues where the loader stands: after a full pass the
// epoch counter moves on, after a `break` the next begin() continues the same epoch. state()
// and load_state() save and restore that position for checkpoints.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/data/dataset.hpp"
#include "gradlab/data/sampler.hpp"

namespace gradlab::data {

/// Turns a list of samples into a batch (the loader fills in `indices`).
using Collate = std::function<Batch(std::vector<Example<>>& samples)>;
/// The default collate: stack(data), stack(target) along a new dim 0 (targets may be undefined
/// in every sample). Samples of one shape and dtype on the CPU that need no graph are copied
/// straight into one preallocated [B, ...] tensor; anything else goes through stack().
Batch stack_collate(std::vector<Example<>>& samples);

/// Where a loader stands: what a checkpoint needs to continue with identical batches.
struct LoaderState {
  uint64_t seed = 0;
  /// The epoch being (or about to be) iterated.
  uint64_t epoch = 0;
  /// Batches of that epoch already handed to the caller.
  uint64_t position = 0;
  bool operator==(const LoaderState& o) const {
    return seed == o.seed && epoch == o.epoch && position == o.position;
  }
  bool operator!=(const LoaderState& o) const { return !(*this == o); }
};

/// An error raised while loading a sample (in a worker or the main thread), rethrown in the
/// caller at that batch's place in the order.
class SampleError : public Error {
 public:
  SampleError(const std::string& message, int64_t index, std::exception_ptr cause)
      : Error(message), index_(index), cause_(std::move(cause)) {}
  /// The dataset index whose get() failed (-1 when collate or get_batch failed).
  int64_t index() const { return index_; }
  /// The original exception (std::rethrow_exception(e.cause()) to inspect its type).
  std::exception_ptr cause() const { return cause_; }

 private:
  int64_t index_;
  std::exception_ptr cause_;
};

/// Options of a DataLoader, LibTorch style: DataLoaderOptions(64).shuffle(true).num_workers(2).
struct DataLoaderOptions {
  explicit DataLoaderOptions(size_t batch_size = 1) : batch_size_(batch_size) {}
  DataLoaderOptions& batch_size(size_t v) {
    batch_size_ = v;
    return *this;
  }
  /// Random order each epoch (ignored when a sampler is given).
  DataLoaderOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  /// Drop the last batch when it is smaller than batch_size.
  DataLoaderOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  /// Worker threads preparing batches; 0 = in the calling thread.
  DataLoaderOptions& num_workers(size_t v) {
    num_workers_ = v;
    return *this;
  }
  /// LibTorch's name for num_workers.
  DataLoaderOptions& workers(size_t v) { return num_workers(v); }
  /// Batches each worker may prepare ahead (PyTorch's prefetch_factor); at most
  /// prefetch_factor * num_workers batches wait at any time.
  DataLoaderOptions& prefetch_factor(size_t v) {
    prefetch_factor_ = v;
    return *this;
  }
  /// Batches in flight at most with workers (LibTorch's max_jobs; default 2 * workers). Read by
  /// make_data_loader's loader (torch_loader.hpp); DataLoader uses prefetch_factor.
  DataLoaderOptions& max_jobs(size_t v) {
    max_jobs_ = v;
    return *this;
  }
  /// LibTorch's option: batches come back in the sampler's order. Both loaders always keep that
  /// order, so false (any order) is accepted and also gives the sampler's order.
  DataLoaderOptions& enforce_ordering(bool v) {
    enforce_ordering_ = v;
    return *this;
  }
  /// Seed of the order and of every sample's random stream. Unset: one number is drawn from
  /// default_generator() when the loader is made (so manual_seed() makes runs repeatable).
  DataLoaderOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// A custom collate (the loader then always fetches per sample, never with get_batch).
  DataLoaderOptions& collate(Collate v) {
    collate_ = std::move(v);
    return *this;
  }
  DataLoaderOptions& sampler(std::shared_ptr<Sampler> v) {
    sampler_ = std::move(v);
    return *this;
  }

  size_t batch_size_;
  bool shuffle_ = false;
  bool drop_last_ = false;
  size_t num_workers_ = 0;
  size_t prefetch_factor_ = 2;
  std::optional<size_t> max_jobs_;
  bool enforce_ordering_ = true;
  std::optional<uint64_t> seed_;
  Collate collate_;
  std::shared_ptr<Sampler> sampler_;
};

/// Iterates batches of a dataset; see the top of this file.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options);
  /// Takes a concrete dataset by value: DataLoader(TensorDataset(x, y), options).
  template <class D, std::enable_if_t<std::is_base_of_v<Dataset, D> &&
                                          std::is_convertible_v<const D*, const Dataset*>,
                                      int> = 0>
  DataLoader(D dataset, DataLoaderOptions options)
      : DataLoader(std::make_shared<D>(std::move(dataset)), std::move(options)) {}
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// The end of an epoch (std::default_sentinel_t's role; C++17 readers have none).
  struct Sentinel {};
  /// An input iterator over the batches of the current epoch.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;
    Iterator() = default;
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(Sentinel) const;
    bool operator!=(Sentinel s) const { return !(*this == s); }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader) : loader_(loader) {}
    DataLoader* loader_ = nullptr;
  };

  /// Starts (or continues) the current epoch; stops any iteration still running.
  Iterator begin();
  Sentinel end() const { return {}; }

  /// Batches per epoch (len(loader)).
  size_t size() const;
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  uint64_t seed() const { return seed_; }
  uint64_t epoch() const { return epoch_; }
  /// Goes to the start of `epoch` (DistributedSampler users call it each epoch in PyTorch;
  /// here the loader also advances by itself).
  void set_epoch(uint64_t epoch);
  /// Seed, epoch and position, for checkpoints.
  LoaderState state() const;
  /// Continues from a saved state: the next batch is the one after the last one handed out.
  void load_state(const LoaderState& state);

 private:
  struct Run;
  std::vector<std::vector<int64_t>> epoch_batches(uint64_t epoch) const;
  void advance();

  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
  uint64_t seed_ = 0;
  uint64_t epoch_ = 0;
  uint64_t position_ = 0;
  std::unique_ptr<Run> run_;
  std::optional<Batch> current_;
};

}  // namespace gradlab::data
