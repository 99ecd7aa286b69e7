#pragma once
// LibTorch's tensor indexing (torch::indexing): x.index({Slice(), 0}), x.index({None, Ellipsis}),
// x.index_put_({Slice(1, None), idx}, v). Python's x[:, 0] is x.index({Slice(), 0}).
//
//   using namespace gradlab::indexing;
//   x.index({Slice(None, 2), -1})        // x[:2, -1]
//   x.index({Ellipsis, Slice(0, None, 2)}) // x[..., ::2]

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "gradlab/core/tensor.hpp"

namespace gradlab::indexing {

/// Python's `None` in an index (a new dim of size 1); also an open end of a Slice, as in LibTorch.
constexpr std::nullopt_t None = std::nullopt;

/// Python's `...`.
struct EllipsisIndexType {};
constexpr EllipsisIndexType Ellipsis{};

/// start:stop:step; an omitted (None) start or stop is the end of the dim, as in Python.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,  // NOLINT
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

/// One entry of an index list: an integer, a Slice, None, Ellipsis ("..." too) or a tensor.
class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Slice, Tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}              // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}       // NOLINT
  /// "..." is Ellipsis, as in LibTorch; any other string is an error.
  TensorIndex(const char* s) : kind_(Kind::Ellipsis) {            // NOLINT
    GRADLAB_CHECK(s != nullptr && std::string_view(s) == "...", ValueError, "TensorIndex",
                  "a string index must be \"...\"", "\"...\" (Ellipsis)",
                  s ? "\"" + std::string(s) + "\"" : std::string("a null string"),
                  "use Ellipsis, or a Slice / integer / None / tensor");
  }
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  TensorIndex(I i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}         // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace gradlab::indexing
