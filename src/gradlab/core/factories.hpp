#pragma once
// Tensor factories, as in LibTorch: zeros({2, 3}, dtype(kFloat64).requires_grad()).

#include <initializer_list>
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

/// Nested braces, as torch::tensor: tensor({1.0, 2.0}), tensor({{1, 2}, {3, 4}}).
/// Floating literals give float32, integer literals int64, bool literals bool.
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<int> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<std::initializer_list<int>> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<int64_t> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<bool> values, TensorOptions options = {});
/// NOTE: without this overload, tensor({{true, false}}) would pick the int rows and give int64.
Tensor tensor(std::initializer_list<std::initializer_list<bool>> values, TensorOptions options = {});
/// A 0-d tensor.
Tensor tensor(double value, TensorOptions options = {});
/// From a std::vector, as LibTorch's torch::tensor(std::vector<T>): floating values give the
/// default dtype (float32), integers int64, unless the options say otherwise.
Tensor tensor(const std::vector<double>& values, TensorOptions options = {});
Tensor tensor(const std::vector<float>& values, TensorOptions options = {});
Tensor tensor(const std::vector<int64_t>& values, TensorOptions options = {});
Tensor tensor(const std::vector<int>& values, TensorOptions options = {});

}  // namespace gradlab
