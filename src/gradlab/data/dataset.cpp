#include "gradlab/data/dataset.hpp"

#include <numeric>
#include <string>

#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {

void check_index(size_t index, size_t size, const char* op) {
  GRADLAB_CHECK(index < size, ShapeError, op, "sample index out of range",
                "index < " + std::to_string(size), std::to_string(index));
}

}  // namespace

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  GRADLAB_CHECK(data_.defined(), ValueError, "TensorDataset", "data is undefined",
                "a tensor [N, ...]", "undefined");
  GRADLAB_CHECK(data_.dim() >= 1, ShapeError, "TensorDataset", "data needs a sample dim",
                "rank >= 1", data_.describe());
  if (targets_.defined()) {
    GRADLAB_CHECK(targets_.dim() >= 1 && targets_.size(0) == data_.size(0), ShapeError,
                  "TensorDataset", "data and targets hold different numbers of samples",
                  "targets with size(0) == " + std::to_string(data_.size(0)), targets_.describe());
  }
}

Example<> TensorDataset::get(size_t index) {
  check_index(index, size(), "TensorDataset::get");
  const auto i = static_cast<int64_t>(index);
  return {data_.select(0, i), targets_.defined() ? targets_.select(0, i) : Tensor()};
}

std::optional<Batch> TensorDataset::get_batch(const std::vector<int64_t>& indices) {
  const auto n = static_cast<int64_t>(size());
  for (int64_t i : indices)
    GRADLAB_CHECK(i >= 0 && i < n, ShapeError, "TensorDataset::get_batch", "sample index out of range",
                  "0 <= index < " + std::to_string(n), std::to_string(i));
  Tensor idx = from_vector(indices, {static_cast<int64_t>(indices.size())});
  Batch b;
  b.data = data_.index_select(0, idx);
  if (targets_.defined()) b.target = targets_.index_select(0, idx);
  b.indices = indices;
  return b;
}

size_t TensorDataset::size() const { return static_cast<size_t>(data_.size(0)); }

TensorDataset TensorDataset::subset(const std::vector<int64_t>& indices) const {
  const auto n = static_cast<int64_t>(indices.size());
  for (int64_t i : indices) check_index(static_cast<size_t>(i), size(), "TensorDataset::subset");
  Tensor idx = from_vector(indices, {n});
  return TensorDataset(data_.index_select(0, idx),
                       targets_.defined() ? targets_.index_select(0, idx) : Tensor());
}

Subset::Subset(std::shared_ptr<Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  GRADLAB_CHECK(dataset_ != nullptr, ValueError, "Subset", "dataset is null", "a dataset", "null");
  for (int64_t i : indices_)
    GRADLAB_CHECK(i >= 0 && static_cast<size_t>(i) < dataset_->size(), ShapeError, "Subset",
                  "index out of range of the dataset",
                  "0 <= index < " + std::to_string(dataset_->size()), std::to_string(i));
}

size_t Subset::map(size_t index) const {
  check_index(index, size(), "Subset::get");
  return static_cast<size_t>(indices_[index]);
}

Example<> Subset::get(size_t index) { return dataset_->get(map(index)); }
Example<> Subset::sample(size_t index, Generator& gen) { return dataset_->sample(map(index), gen); }
std::optional<Batch> Subset::get_batch(const std::vector<int64_t>& indices) {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) mapped.push_back(static_cast<int64_t>(map(static_cast<size_t>(i))));
  std::optional<Batch> b = dataset_->get_batch(mapped);
  if (b) b->indices = indices;  // indices into this Subset, as the per-sample path reports
  return b;
}

TransformDataset::TransformDataset(std::shared_ptr<Dataset> dataset, Transform transform)
    : dataset_(std::move(dataset)), transform_(std::move(transform)) {
  GRADLAB_CHECK(dataset_ != nullptr, ValueError, "TransformDataset", "dataset is null", "a dataset",
                "null");
  GRADLAB_CHECK(static_cast<bool>(transform_), ValueError, "TransformDataset", "transform is empty",
                "a callable", "an empty std::function");
}

Example<> TransformDataset::get(size_t index) {
  Generator gen(derive_seed(index));
  return sample(index, gen);
}

Example<> TransformDataset::sample(size_t index, Generator& gen) {
  return transform_(dataset_->sample(index, gen), gen);
}

std::shared_ptr<TransformDataset> map(std::shared_ptr<Dataset> dataset, Transform transform) {
  return std::make_shared<TransformDataset>(std::move(dataset), std::move(transform));
}

std::vector<std::vector<int64_t>> split_indices(size_t n, const std::vector<size_t>& lengths,
                                                uint64_t seed) {
  const size_t total = std::accumulate(lengths.begin(), lengths.end(), size_t{0});
  GRADLAB_CHECK(total == n, ValueError, "random_split",
                "sum of lengths does not equal the dataset size", std::to_string(n),
                std::to_string(total));
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Fisher-Yates with gradlab's own randint: the same permutation on every platform.
  Generator gen(seed);
  for (size_t i = n; i > 1; --i)
    std::swap(perm[i - 1], perm[static_cast<size_t>(gen.randint(0, static_cast<int64_t>(i)))]);
  std::vector<std::vector<int64_t>> parts;
  size_t at = 0;
  for (size_t len : lengths) {
    parts.emplace_back(perm.begin() + static_cast<std::ptrdiff_t>(at),
                       perm.begin() + static_cast<std::ptrdiff_t>(at + len));
    at += len;
  }
  return parts;
}

std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<Dataset> dataset,
                                                  const std::vector<size_t>& lengths,
                                                  uint64_t seed) {
  GRADLAB_CHECK(dataset != nullptr, ValueError, "random_split", "dataset is null", "a dataset",
                "null");
  std::vector<std::shared_ptr<Subset>> out;
  for (auto& part : split_indices(dataset->size(), lengths, seed))
    out.push_back(std::make_shared<Subset>(dataset, std::move(part)));
  return out;
}

std::pair<TensorDataset, TensorDataset> train_test_split(const TensorDataset& dataset,
                                                         size_t test_size, uint64_t seed) {
  const size_t n = dataset.size();
  GRADLAB_CHECK(test_size <= n, ValueError, "train_test_split", "test set larger than the dataset",
                "test_size <= " + std::to_string(n), std::to_string(test_size));
  auto parts = split_indices(n, {n - test_size, test_size}, seed);
  return {dataset.subset(parts[0]), dataset.subset(parts[1])};
}

}  // namespace gradlab::data
