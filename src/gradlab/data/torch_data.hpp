#pragma once
// LibTorch's torch::data datasets and transforms, with LibTorch 1.13's names, signatures and
// semantics, so that a LibTorch program compiles unchanged through the compat header
// (<torch/torch.h>: namespace torch = gradlab):
//
//   auto train = torch::data::datasets::MNIST("./data")
//                    .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(torch::data::transforms::Stack<>());
//   auto loader = torch::data::make_data_loader(std::move(train), 64);   // torch_loader.hpp
//   for (auto& batch : *loader) { ... batch.data [64, 1, 28, 28], batch.target [64] ... }
//
// These are templates over the user's types (a dataset is a class deriving from
// datasets::Dataset<Self>, CRTP); they sit beside gradlab's own virtual data::Dataset /
// data::DataLoader (dataset.hpp, dataloader.hpp), which they do not replace. Example<> is the
// same type in both. Samplers: torch_samplers.hpp; loader: torch_loader.hpp; MNIST: mnist.hpp.
//
// Differences from LibTorch (docs/libtorch_parity.md): no stateful datasets (StatefulDataset,
// ChunkDataset, SharedBatchDataset) and no StreamSampler; bad input (an empty batch to Stack, a
// zero stddev in Normalize) throws a gradlab error.

#include <cstddef>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradlab/core/array_ref.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/data/dataset.hpp"

namespace gradlab::data {

namespace example {
/// The Target of an example without one (LibTorch: `using NoTarget = void`).
using NoTarget = void;
}  // namespace example

/// An example with data only (LibTorch's Example<Data, NoTarget>): converts to its data.
template <class Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;
  Example() = default;
  Example(Data data_) : data(std::move(data_)) {}  // NOLINT: implicit, as LibTorch
  operator Data&() { return data; }
  operator const Data&() const { return data; }
  Data data;
};
/// One tensor, no target (what datasets::TensorDataset yields).
using TensorExample = Example<Tensor, example::NoTarget>;

namespace datasets {

template <class SourceDataset, class AppliedTransform>
class MapDataset;
/// `dataset` with `transform` applied to each batch it returns (dataset.map(transform)).
template <class D, class T>
MapDataset<D, T> map(D dataset, T transform);

/// A dataset that returns a whole batch per request (LibTorch's BatchDataset). Self is the
/// deriving class (CRTP), Batch what get_batch returns, BatchRequest what it takes (the
/// sampler's batch of indices).
template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  /// Stateful datasets (whose batches are std::optional) are not offered by gradlab.
  constexpr static bool is_stateful = false;

  virtual ~BatchDataset() = default;
  /// The batch for `request`.
  virtual Batch get_batch(BatchRequest request) = 0;
  /// Number of examples; std::nullopt when unknown (a loader then cannot make its sampler).
  virtual std::optional<size_t> size() const = 0;

  /// A MapDataset of a copy of this dataset (on an lvalue) ...
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  /// ... or of this dataset moved (on an rvalue: MNIST(root).map(...)).
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

/// A dataset addressed one example at a time (LibTorch's Dataset): a subclass defines
/// get(index) and size(); get_batch calls get for each index in order.
///
///   struct Squares : torch::data::datasets::Dataset<Squares> {
///     torch::data::Example<> get(size_t i) override { return {torch::tensor(double(i)), ...}; }
///     std::optional<size_t> size() const override { return 100; }
///   };
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  /// The example at `index`.
  virtual ExampleType get(size_t index) = 0;
  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

/// A BatchDataset whose batches are made by `AppliedTransform::apply_batch` from the source's.
template <class SourceDataset, class AppliedTransform>
class MapDataset
    : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                          typename AppliedTransform::OutputBatchType,
                          typename SourceDataset::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename SourceDataset::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;
  static_assert(!SourceDataset::is_stateful, "gradlab has no stateful datasets");
  static_assert(std::is_convertible_v<typename SourceDataset::BatchType,
                                      typename AppliedTransform::InputBatchType>,
                "MapDataset: the transform does not take the dataset's batches");

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }
  const SourceDataset& dataset() { return dataset_; }
  const AppliedTransform& transform() { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

template <class D, class T>
MapDataset<D, T> map(D dataset, T transform) {
  return MapDataset<D, T>(std::move(dataset), std::move(transform));
}

/// The rows of one tensor (LibTorch's datasets::TensorDataset): get(i) = {tensor[i]}.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  /// `tensor` holds one example per row (dim 0); it must be defined with rank >= 1.
  explicit TensorDataset(const Tensor& tensor);
  explicit TensorDataset(const std::vector<Tensor>& tensors);
  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override;
  Tensor tensor;
};

}  // namespace datasets

namespace transforms {

/// Maps a whole batch (LibTorch's BatchTransform).
template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

/// Maps each example of a batch on its own (LibTorch's Transform): apply_batch applies it to
/// every element, in order.
/// NOTE: inside namespace gradlab::data::transforms this class template hides gradlab's own
/// std::function alias data::Transform (dataset.hpp); spell that one data::Transform there.
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual OutputType apply(InputType input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output;
    output.reserve(input_batch.size());
    for (auto&& input : input_batch) output.push_back(apply(std::move(input)));
    return output;
  }
};

/// A BatchTransform from a function of the whole batch.
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  OutputBatchType apply_batch(InputBatchType input_batch) override {
    return function_(std::move(input_batch));
  }

 private:
  FunctionType function_;
};

/// A Transform from a function of one example.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// A transform that makes one example out of a batch of them.
template <class T = Example<>>
using Collation = BatchTransform<std::vector<T>, T>;
/// A Collation from a function.
template <class T = Example<>>
using Collate = BatchLambda<std::vector<T>, T>;

/// Stacks the examples of a batch into one example along a new dim 0 (LibTorch's Stack):
/// Stack<>() for Example<> (data and target), Stack<TensorExample>() for data only.
template <class T = Example<>>
struct Stack;

/// data = stack(data_i), target = stack(target_i). Every example needs the same shapes; targets
/// may be undefined in all of them (the batch's target is then undefined). An empty batch throws.
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override;
};

/// data = stack(data_i).
template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override;
};

/// A Transform of an example's data tensor; the target passes through (TensorTransform).
template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;
  /// The transformed data.
  virtual Tensor operator()(Tensor input) = 0;
  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

/// A TensorTransform from a function of the data tensor.
template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

namespace detail {
/// `values` as a float32 tensor [C, 1, 1] (what Normalize keeps); `what` names it in errors.
Tensor normalize_statistic(ArrayRef<double> values, const char* what);
/// Throws ValueError unless mean and stddev hold as many channels.
void normalize_check(const Tensor& mean, const Tensor& stddev);
/// (input - mean) / stddev (a ShapeError names the channels when they do not broadcast).
Tensor normalize_apply(const Tensor& input, const Tensor& mean, const Tensor& stddev);
}  // namespace detail

/// (data - mean) / stddev per channel, as LibTorch's Normalize: the statistics are float32
/// tensors [C, 1, 1], so they broadcast against images [C, H, W] (or batches [N, C, H, W]).
/// Normalize<>(0.1307, 0.3081) (one channel) or Normalize<>({0.5, 0.5, 0.5}, {0.2, 0.2, 0.2}).
/// Throws ValueError for empty statistics, lists of different lengths, or a stddev of 0.
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(detail::normalize_statistic(mean, "mean")),
        stddev(detail::normalize_statistic(stddev, "stddev")) {
    detail::normalize_check(this->mean, this->stddev);
  }
  Tensor operator()(Tensor input) override {
    return detail::normalize_apply(input, mean, stddev);
  }
  Tensor mean, stddev;
};

}  // namespace transforms

}  // namespace gradlab::data
