#pragma once
// Tensor factories, as in LibTorch: zeros({2, 3}, dtype(kFloat64).requires_grad()).

#include <functional>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab {

/// Uninitialized values (every element is written before use by gradlab's own code).
Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, const Scalar& value, TensorOptions options = {});
/// A 0-d tensor holding `value` (dtype from the options, else from the number).
Tensor scalar_tensor(const Scalar& value, TensorOptions options = {});
/// start, start+step, ... < end. Integer arguments without a dtype give int64, as in PyTorch.
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {});
/// arange(start, end, options), as LibTorch's (step 1).
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions options);
/// `steps` points from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
/// Identity matrix n x m (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
/// eye(n, options), as LibTorch's.
Tensor eye(int64_t n, TensorOptions options);
/// Uniform in [0, 1).
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
/// Standard normal.
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
/// Uniform integers in [low, high); int64 unless the options say otherwise.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = {},
               Generator* gen = nullptr);
// One int as the shape, as LibTorch's IntArrayRef takes it: randn(3, options) is randn({3}).
// NOTE: templates, so that a braced `{}` still means the 0-d shape (an int overload would take
// it as 0 and make shape [0]).
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor randn(I n, TensorOptions options = {}, Generator* gen = nullptr) {
  return randn(Shape{static_cast<int64_t>(n)}, options, gen);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor rand(I n, TensorOptions options = {}, Generator* gen = nullptr) {
  return rand(Shape{static_cast<int64_t>(n)}, options, gen);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor zeros(I n, TensorOptions options = {}) {
  return zeros(Shape{static_cast<int64_t>(n)}, options);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor ones(I n, TensorOptions options = {}) {
  return ones(Shape{static_cast<int64_t>(n)}, options);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor empty(I n, TensorOptions options = {}) {
  return empty(Shape{static_cast<int64_t>(n)}, options);
}
/// randint(high, size): uniform integers in [0, high), as LibTorch's two-argument form.
Tensor randint(int64_t high, const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
/// `num_samples` class indices per row of `probs` ([C] or [N, C] non-negative weights, not
/// necessarily normalized), drawn with or without replacement (int64 [num_samples] / [N, n]).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);
/// A tensor over memory the caller owns (LibTorch's from_blob): no copy, writes reach `data`, and
/// the memory must outlive every tensor made from it (then `deleter(data)` runs, when given).
/// CPU only; dtype from the options (float32 by default); strides default to contiguous.
Tensor from_blob(void* data, const Shape& sizes, TensorOptions options = {});
Tensor from_blob(void* data, const Shape& sizes, const Strides& strides, TensorOptions options = {});
Tensor from_blob(void* data, const Shape& sizes, std::function<void(void*)> deleter, TensorOptions options = {});
/// A random permutation of 0..n-1 (int64).
Tensor randperm(int64_t n, Generator* gen = nullptr);

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& t, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Generator* gen = nullptr);

/// A tensor from values in row-major order with the given shape (dtype from options, else float32).
Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions options = {});
/// Same, for integer data (int64 unless options say otherwise).
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, TensorOptions options = {});
/// Same, for a bool mask.
Tensor from_vector(const std::vector<bool>& values, const Shape& shape, TensorOptions options = {});

/// What tensor() takes, as LibTorch's TensorDataContainer: a number (a 0-d tensor), a
/// std::vector of numbers, or nested braces of numbers to any depth: tensor(2.5),
/// tensor({1.0, 2.0}), tensor({{1, 2}, {3, 4}}), tensor({{{true}}}), tensor(std::vector<float>{...}).
/// NOTE: one recursive type and one tensor() overload, so no brace list is ambiguous (one
/// overload per element type and depth was, under clang, for tensor({{1.0, 2.0}, {3.0, 4.0}})).
class TensorData {
 public:
  /// `{}`: an empty 1-D list (shape [0]).
  TensorData() : shape_{0} {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  TensorData(T value) : values_{Scalar(value)} {}  // NOLINT: numbers convert, as in LibTorch
  /// A brace list: the items' shape (all equal) with one more leading dim.
  TensorData(std::initializer_list<TensorData> items);  // NOLINT
  /// A std::vector, or a named std::initializer_list (one or two levels) of numbers; its element
  /// type decides the dtype even when it is empty (tensor(std::vector<int64_t>{}) is int64).
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  TensorData(const std::vector<T>& values) {  // NOLINT
    append_row(values.begin(), values.end(), values.size(), Scalar(T{}));
  }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  TensorData(std::initializer_list<T> values) {  // NOLINT
    append_row(values.begin(), values.end(), values.size(), Scalar(T{}));
  }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  TensorData(std::initializer_list<std::initializer_list<T>> rows) : TensorData() {  // NOLINT
    const size_t cols = rows.size() ? rows.begin()->size() : 0;
    for (const auto& r : rows) {
      check_row(r.size(), cols);
      append_row(r.begin(), r.end(), r.size(), Scalar(T{}));
    }
    shape_ = {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)};
  }
  const Shape& shape() const { return shape_; }
  /// The numbers in row-major order.
  const std::vector<Scalar>& values() const { return values_; }
  /// The element kind of a typed container (a std::vector, an initializer_list): a number of that
  /// type, used for the dtype when there are no values.
  const std::optional<Scalar>& element() const { return element_; }

 private:
  template <class It>
  void append_row(It first, It last, size_t n, Scalar element) {
    for (; first != last; ++first) values_.emplace_back(*first);
    shape_ = {static_cast<int64_t>(n)};
    element_ = element;
  }
  static void check_row(size_t got, size_t want);
  Shape shape_;
  std::vector<Scalar> values_;
  std::optional<Scalar> element_;
};

/// A tensor of the given numbers (a copy). Without a dtype in the options: bool if every number is
/// a bool, int64 if every one is an integer (or bool), else float32 (the default dtype).
Tensor tensor(const TensorData& data, TensorOptions options = {});

}  // namespace gradlab
