#pragma once
// Datasets, as in LibTorch's torch::data: a Dataset has a size and returns one Example
// {data, target} per index. A DataLoader (dataloader.hpp) turns a Dataset into batches.
//
//   struct Squares : data::Dataset {
//     data::Example<> get(size_t i) override { return {tensor(double(i)), tensor(double(i * i))}; }
//     size_t size() const override { return 100; }
//   };

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::data {

/// One sample: the input and its target (torch::data::Example; Example<Data, example::NoTarget>
/// in torch_data.hpp holds data only). `return {x, y};` and Example<>(x, y) both build one.
template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Example() = default;
  Example(Data data_, Target target_) : data(std::move(data_)), target(std::move(target_)) {}
  Data data;
  Target target;
};

/// A collated batch: stacked data and targets, plus the dataset indices it holds.
struct Batch {
  Tensor data;
  Tensor target;
  std::vector<int64_t> indices;
  /// Number of samples.
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

/// A collection of samples addressed by index.
/// NOTE: a DataLoader with workers calls get() and get_batch() from several threads at once:
/// they must not modify shared state (read-only members are fine; so are tensors made inside).
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Sample `index` (0 <= index < size()).
  virtual Example<> get(size_t index) = 0;
  /// Number of samples.
  virtual size_t size() const = 0;
  /// Sample `index` with its own random stream `gen` (what DataLoader calls, with a stream
  /// derived from seed + epoch + index). Datasets without randomness keep this default.
  virtual Example<> sample(size_t index, Generator& gen) {
    (void)gen;
    return get(index);
  }
  /// The samples `indices` fetched at once (PyTorch's __getitems__): data [B, ...] and target
  /// [B, ...] (undefined for unlabelled data) holding exactly what stack_collate makes of get(i)
  /// for each index in order. DataLoader uses it when it returns a batch and no custom collate
  /// is set; the default, std::nullopt, keeps its per-sample path (sample(i, gen) + collate).
  /// NOTE: batched samples get no random stream: a dataset whose sample() draws random numbers
  /// must keep the default. A subclass that overrides get() or sample() must override this too
  /// (returning std::nullopt is enough), or the loader would bypass its get().
  virtual std::optional<Batch> get_batch(const std::vector<int64_t>& indices) {
    (void)indices;
    return std::nullopt;
  }
};

/// Samples are rows of `data` (dim 0) and of `targets`: TensorDataset(x, y)[i] = {x[i], y[i]}.
class TensorDataset : public Dataset {
 public:
  /// `targets` may be undefined (unlabelled data); otherwise its size(0) must equal data's.
  TensorDataset(Tensor data, Tensor targets);
  Example<> get(size_t index) override;
  /// index_select of the rows (one copy per tensor instead of a view per sample + stack).
  std::optional<Batch> get_batch(const std::vector<int64_t>& indices) override;
  size_t size() const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }
  /// The rows `indices` as a new TensorDataset (copies them).
  TensorDataset subset(const std::vector<int64_t>& indices) const;

 private:
  Tensor data_, targets_;
};

/// The samples `indices` of another dataset (torch.utils.data.Subset).
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices);
  Example<> get(size_t index) override;
  Example<> sample(size_t index, Generator& gen) override;
  /// The wrapped dataset's get_batch of the mapped indices (std::nullopt when it has none).
  std::optional<Batch> get_batch(const std::vector<int64_t>& indices) override;
  size_t size() const override { return indices_.size(); }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  size_t map(size_t index) const;
  std::shared_ptr<Dataset> dataset_;
  std::vector<int64_t> indices_;
};

/// A function from an example to an example, with the sample's own random stream
/// (deterministic transforms ignore it). See transforms.hpp.
using Transform = std::function<Example<>(Example<>, Generator&)>;

/// `dataset` with `transform` applied to every sample (LibTorch's dataset.map(transform)).
class TransformDataset : public Dataset {
 public:
  TransformDataset(std::shared_ptr<Dataset> dataset, Transform transform);
  /// get(i) uses the stream derive_seed(i), so it is repeatable; DataLoader calls sample().
  Example<> get(size_t index) override;
  Example<> sample(size_t index, Generator& gen) override;
  size_t size() const override { return dataset_->size(); }

 private:
  std::shared_ptr<Dataset> dataset_;
  Transform transform_;
};

/// shared_ptr<TransformDataset>: map(dataset, transforms::normalize(0.5, 0.25)).
std::shared_ptr<TransformDataset> map(std::shared_ptr<Dataset> dataset, Transform transform);

/// Indices 0..n-1 cut into consecutive groups of `lengths` after a seeded shuffle
/// (the lengths must add up to n). The same seed gives the same split on every machine.
std::vector<std::vector<int64_t>> split_indices(size_t n, const std::vector<size_t>& lengths,
                                                uint64_t seed);
/// torch.utils.data.random_split: disjoint Subsets of the given lengths.
std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<Dataset> dataset,
                                                  const std::vector<size_t>& lengths,
                                                  uint64_t seed);
/// (train, test) with `test_size` samples in test, chosen by a seeded shuffle.
std::pair<TensorDataset, TensorDataset> train_test_split(const TensorDataset& dataset,
                                                         size_t test_size, uint64_t seed);

}  // namespace gradlab::data
