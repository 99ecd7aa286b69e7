// LibTorch's torch::data: the non-template parts (Stack, Normalize's checks, TensorDataset, the
// samplers, make_data_loader's option checks). See torch_data.hpp, torch_samplers.hpp and
// torch_loader.hpp.
#include "gradlab/data/torch_data.hpp"

#include <cmath>
#include <numeric>
#include <string>

#include "gradlab/core/error.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/data/sampler.hpp"
#include "gradlab/data/torch_loader.hpp"
#include "gradlab/data/torch_samplers.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data {

namespace {

// The examples' `part` (data or target) stacked; `what` names it in errors.
Tensor stack_part(const std::vector<Tensor>& parts, const char* what) {
  const Tensor& first = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    const Tensor& t = parts[i];
    GRADLAB_CHECK(t.defined(), ValueError, "transforms::Stack",
                  std::string("example ") + std::to_string(i) + "'s " + what + " is undefined",
                  "a defined tensor like example 0's (" + first.describe() + ")", "undefined");
    GRADLAB_CHECK(t.sizes() == first.sizes(), ShapeError, "transforms::Stack",
                  std::string("the examples' ") + what + " tensors differ in shape",
                  first.describe() + " (example 0's)",
                  t.describe() + " (example " + std::to_string(i) + "'s)",
                  "resize or crop them to one shape before Stack");
  }
  return stack(parts, 0);
}

}  // namespace

namespace datasets {

TensorDataset::TensorDataset(const Tensor& t) : tensor(t) {
  GRADLAB_CHECK(tensor.defined() && tensor.dim() >= 1, ShapeError, "datasets::TensorDataset",
                "the tensor needs a dim of examples", "a tensor of rank >= 1",
                tensor.defined() ? tensor.describe() : "undefined");
}

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors)
    : TensorDataset(tensors.empty() ? Tensor() : stack(tensors, 0)) {}

TensorExample TensorDataset::get(size_t index) {
  GRADLAB_CHECK(index < static_cast<size_t>(tensor.size(0)), ShapeError,
                "datasets::TensorDataset::get", "index out of range",
                "index < " + std::to_string(tensor.size(0)), std::to_string(index));
  return tensor.select(0, static_cast<int64_t>(index));
}

std::optional<size_t> TensorDataset::size() const { return static_cast<size_t>(tensor.size(0)); }

}  // namespace datasets

namespace transforms {

Example<> Stack<Example<>>::apply_batch(std::vector<Example<>> examples) {
  GRADLAB_CHECK(!examples.empty(), ValueError, "transforms::Stack", "the batch is empty",
                "at least one example", "0");
  std::vector<Tensor> data, targets;
  data.reserve(examples.size());
  size_t defined_targets = 0;
  for (Example<>& e : examples) {
    GRADLAB_CHECK(e.data.defined(), ValueError, "transforms::Stack",
                  "an example's data is undefined", "a tensor", "undefined");
    data.push_back(std::move(e.data));
    if (e.target.defined()) ++defined_targets;
    targets.push_back(std::move(e.target));
  }
  GRADLAB_CHECK(defined_targets == 0 || defined_targets == examples.size(), ValueError,
                "transforms::Stack", "some examples have a target and some do not",
                "a target in every example or in none",
                std::to_string(defined_targets) + " of " + std::to_string(examples.size()));
  Example<> out;
  out.data = stack_part(data, "data");
  if (defined_targets > 0) out.target = stack_part(targets, "target");
  return out;
}

TensorExample Stack<TensorExample>::apply_batch(std::vector<TensorExample> examples) {
  GRADLAB_CHECK(!examples.empty(), ValueError, "transforms::Stack", "the batch is empty",
                "at least one example", "0");
  std::vector<Tensor> data;
  data.reserve(examples.size());
  for (TensorExample& e : examples) {
    GRADLAB_CHECK(e.data.defined(), ValueError, "transforms::Stack",
                  "an example's data is undefined", "a tensor", "undefined");
    data.push_back(std::move(e.data));
  }
  return stack_part(data, "data");
}

namespace detail {

Tensor normalize_statistic(ArrayRef<double> values, const char* what) {
  GRADLAB_CHECK(!values.empty(), ValueError, "transforms::Normalize",
                std::string("no ") + what + " given", "one value per channel", "an empty list");
  for (size_t i = 0; i < values.size(); ++i) {
    GRADLAB_CHECK(std::isfinite(values[i]), ValueError, "transforms::Normalize",
                  std::string(what) + " is not finite", "finite values",
                  std::to_string(values[i]) + " (channel " + std::to_string(i) + ")");
    if (std::string(what) == "stddev")
      GRADLAB_CHECK(values[i] != 0.0, ValueError, "transforms::Normalize",
                    "a stddev of 0 would divide by zero", "stddev != 0",
                    "0 (channel " + std::to_string(i) + ")");
  }
  const auto c = static_cast<int64_t>(values.size());
  return from_vector(values.vec(), Shape{c, 1, 1}, dtype(kFloat32));
}

void normalize_check(const Tensor& mean, const Tensor& stddev) {
  GRADLAB_CHECK(mean.size(0) == stddev.size(0), ValueError, "transforms::Normalize",
                "mean and stddev hold different numbers of channels",
                std::to_string(mean.size(0)) + " stddev values (one per mean)",
                std::to_string(stddev.size(0)));
}

Tensor normalize_apply(const Tensor& input, const Tensor& mean, const Tensor& stddev) {
  GRADLAB_CHECK(input.defined(), ValueError, "transforms::Normalize", "the data is undefined",
                "a tensor", "undefined");
  const int64_t c = mean.size(0);
  // [C, 1, 1] broadcasts against [..., C, H, W] and, for C == 1, against anything.
  const bool fits = c == 1 || (input.dim() >= 3 && input.size(input.dim() - 3) == c);
  GRADLAB_CHECK(fits, ShapeError, "transforms::Normalize",
                "the data's channels do not match the statistics",
                "data [..., " + std::to_string(c) + ", H, W]", input.describe(),
                "give one mean and one stddev per channel (dim -3 of the data)");
  return (input - mean) / stddev;
}

}  // namespace detail

}  // namespace transforms

namespace samplers {

namespace {

std::optional<std::vector<size_t>> next_range(size_t& index, size_t end, size_t batch_size,
                                              const std::vector<size_t>* order, size_t wrap) {
  if (index >= end) return std::nullopt;
  const size_t stop = std::min(end, index + batch_size);
  std::vector<size_t> out;
  out.reserve(stop - index);
  for (size_t i = index; i < stop; ++i) {
    const size_t j = order != nullptr ? (*order)[i] : i;
    out.push_back(wrap > 0 ? j % wrap : j);
  }
  index = stop;
  return out;
}

void check_replicas(const char* op, size_t num_replicas, size_t rank) {
  GRADLAB_CHECK(num_replicas >= 1, ValueError, op, "num_replicas must be at least 1",
                "num_replicas >= 1", std::to_string(num_replicas));
  GRADLAB_CHECK(rank < num_replicas, ValueError, op, "rank out of range",
                "rank < num_replicas = " + std::to_string(num_replicas), std::to_string(rank));
}

// Salt separating DistributedRandomSampler's epoch streams from other uses of derive_seed.
constexpr uint64_t kDistributedSalt = 0x4453414d504c4552ULL;  // "DSAMPLER"

}  // namespace

SequentialSampler::SequentialSampler(size_t size) : size_(size) {}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  return next_range(index_, size_, batch_size, nullptr, 0);
}

RandomSampler::RandomSampler(int64_t size, Dtype index_dtype) {
  GRADLAB_CHECK(size >= 0, ValueError, "samplers::RandomSampler", "negative size", "size >= 0",
                std::to_string(size));
  GRADLAB_CHECK(index_dtype == kInt64, DTypeError, "samplers::RandomSampler",
                "gradlab's index dtype is int64", "kInt64", to_string(index_dtype));
  reset(static_cast<size_t>(size));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  const size_t n = new_size.value_or(indices_.size());
  const Tensor perm = randperm(static_cast<int64_t>(n));
  const int64_t* p = perm.data_ptr<int64_t>();
  indices_.assign(p, p + n);
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return next_range(index_, indices_.size(), batch_size, &indices_, 0);
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  check_replicas("samplers::DistributedRandomSampler", num_replicas, rank);
  reset();
}

void DistributedRandomSampler::populate_indices() {
  const size_t local = local_sample_count();
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  // Without duplicates the last size % num_replicas examples are left out before the shuffle
  // (LibTorch's choice); with them, the padding repeats examples 0, 1, ... (modulo size).
  all_indices_.resize(count);
  for (size_t i = 0; i < count; ++i) all_indices_[i] = size_ == 0 ? 0 : i % size_;
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
  // The same permutation on every rank: it depends on the epoch only.
  const std::vector<int64_t> perm =
      seeded_permutation(all_indices_.size(), derive_seed(epoch_, kDistributedSalt));
  std::vector<size_t> shuffled(all_indices_.size());
  for (size_t i = 0; i < perm.size(); ++i) shuffled[i] = all_indices_[static_cast<size_t>(perm[i])];
  all_indices_ = std::move(shuffled);
  sample_index_ = begin_index_;
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return next_range(sample_index_, end_index_, batch_size, &all_indices_, 0);
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas,
                                                           size_t rank, bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  check_replicas("samplers::DistributedSequentialSampler", num_replicas, rank);
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
}

std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  // Past `size` (the padding of the last replicas) the indices wrap around to 0, 1, ...
  return next_range(sample_index_, end_index_, batch_size, nullptr, end_index_ > size_ ? size_ : 0);
}

}  // namespace samplers

namespace detail {

void check_torch_loader_options(const DataLoaderOptions& o) {
  const char* op = "make_data_loader";
  GRADLAB_CHECK(o.batch_size_ >= 1, ValueError, op, "batch_size must be at least 1",
                "batch_size >= 1", std::to_string(o.batch_size_));
  GRADLAB_CHECK(!o.max_jobs_ || *o.max_jobs_ >= 1, ValueError, op, "max_jobs must be at least 1",
                "max_jobs >= 1", "0");
  const char* hint = "these are gradlab DataLoader options; with make_data_loader the sampler "
                     "decides the order (samplers::RandomSampler shuffles) and transforms::Stack "
                     "collates";
  GRADLAB_CHECK(!o.shuffle_, ValueError, op, "shuffle(true) is not a make_data_loader option",
                "shuffle unset", "shuffle(true)", hint);
  GRADLAB_CHECK(!o.seed_, ValueError, op, "seed() is not a make_data_loader option",
                "seed unset (RandomSampler draws from manual_seed's generator)",
                "seed(" + std::to_string(*o.seed_) + ")", hint);
  GRADLAB_CHECK(!o.collate_, ValueError, op, "collate() is not a make_data_loader option",
                "collate unset", "a collate function", hint);
  GRADLAB_CHECK(o.sampler_ == nullptr, ValueError, op, "sampler() is not a make_data_loader option",
                "sampler unset (pass a samplers:: sampler as make_data_loader's 2nd argument)",
                "a data::Sampler", hint);
}

size_t torch_dataset_size(const std::optional<size_t>& size) {
  GRADLAB_CHECK(size.has_value(), ValueError, "make_data_loader",
                "the dataset has no size, so no sampler can be made for it",
                "dataset.size() with a value", "std::nullopt",
                "pass a sampler: make_data_loader(dataset, sampler, options)");
  return *size;
}

}  // namespace detail

}  // namespace gradlab::data
