#include "gradlab/core/factories.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/half.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab {

namespace {

template <class T>
T* data_of(const Tensor& t) {
  return reinterpret_cast<T*>(t.impl()->data());
}

// Factory result: storage on the requested device, then requires_grad from the options.
Tensor finish(Tensor t, const TensorOptions& o, const char* op) {
  if (o.requires_grad()) {
    GRADLAB_CHECK(t.is_floating_point(), AutogradError, op,
                  "only floating point tensors can require gradients", "float32 or float64",
                  to_string(t.dtype()));
    t.requires_grad_(true);
  }
  return t;
}

Tensor alloc(const Shape& shape, const TensorOptions& o, const char* op) {
  check_device_available(o.device(), op);
  const ScalarType dt = o.dtype();
  for (auto s : shape)
    GRADLAB_CHECK(s >= 0, ShapeError, op, "negative size in shape", "sizes >= 0", shape_str(shape));
  return make_tensor(shape, dt, o.device());
}

// Values computed on the host land in a CPU tensor first, then move to the requested device.
// NOTE: so randn on "cuda" draws the same numbers as on the CPU for the same seed.
TensorOptions on_host(TensorOptions o) { return o.device(Device(kCPU)); }
Tensor to_device(const Tensor& host, const TensorOptions& o) {
  if (!o.device().is_cuda()) return host;
  Tensor t = make_tensor(host.sizes(), host.dtype(), o.device());
  dispatch::core_kernels("to").copy(t, host);
  return t;
}

template <class F>
Tensor generate(const Shape& shape, const TensorOptions& o, const char* op, F&& next) {
  check_device_available(o.device(), op);
  if (o.dtype() == kFloat16 || o.dtype() == kBFloat16) {
    // Drawn in float32 and rounded once: the same numbers as randn(...).to(kHalf) for a seed.
    Tensor f = generate(shape, TensorOptions(o).dtype(kFloat32).requires_grad(false), op, next);
    Tensor t = make_tensor(shape, o.dtype(), f.device());
    dispatch::core_kernels(op).copy(t, f);
    return finish(t, o, op);
  }
  Tensor t = alloc(shape, on_host(o), op);
  visit_storage_dtype(t.dtype(), [&]<class T>() {
    if constexpr (!kHalfType<T>) {
      T* p = data_of<T>(t);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(next());
    }
  });
  return finish(to_device(t, o), o, op);
}

TensorOptions like(const Tensor& t, const std::optional<TensorOptions>& o) {
  if (!o) return t.options();
  TensorOptions r = *o;
  if (!r.has_dtype()) r = r.dtype(t.dtype());
  if (!r.has_device()) r = r.device(t.device());
  return r;
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions o) { return finish(alloc(shape, o, "empty"), o, "empty"); }
namespace {
// full(), with the public op's name in its errors ("zeros: device cuda is not available").
Tensor filled(const Shape& shape, const Scalar& value, TensorOptions o, const char* op) {
  if (!o.has_dtype()) o = o.dtype(value.natural_dtype());
  Tensor t = alloc(shape, o, op);
  dispatch::core_kernels(op).fill(t, value);
  return finish(t, o, op);
}
}  // namespace

Tensor zeros(const Shape& shape, TensorOptions o) { return filled(shape, 0.0, o, "zeros"); }
Tensor ones(const Shape& shape, TensorOptions o) { return filled(shape, 1.0, o, "ones"); }
Tensor full(const Shape& shape, const Scalar& value, TensorOptions o) { return filled(shape, value, o, "full"); }
Tensor scalar_tensor(const Scalar& value, TensorOptions o) { return full({}, value, o); }

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions o) { return arange(start, end, 1, o); }
Tensor eye(int64_t n, TensorOptions o) { return eye(n, std::nullopt, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  GRADLAB_CHECK(st != 0, ValueError, "arange", "step must be nonzero", "step != 0", "0");
  GRADLAB_CHECK((e - s) / st >= 0, ValueError, "arange", "upper bound and larger bound inconsistent with step sign",
                "sign(end - start) == sign(step)", "start=" + std::to_string(s) + ", end=" + std::to_string(e) + ", step=" + std::to_string(st));
  if (!o.has_dtype()) {
    bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
    o = o.dtype(all_int ? kInt64 : default_dtype());
  }
  const int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  int64_t i = 0;
  return generate({n}, o, "arange", [&] { return s + st * static_cast<double>(i++); });
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  GRADLAB_CHECK(steps >= 0, ValueError, "linspace", "number of steps must be non-negative", "steps >= 0", std::to_string(steps));
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  int64_t i = 0;
  return generate({steps}, o, "linspace", [&] {
    // Fill from both ends, as PyTorch does, so the last value is exactly `end`.
    // (one step gives [start], as PyTorch)
    double v = i < steps / 2 || steps == 1 ? start + step * static_cast<double>(i) : end - step * static_cast<double>(steps - 1 - i);
    ++i;
    return v;
  });
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  const int64_t cols = m.value_or(n);
  int64_t i = 0;
  return generate({n, cols}, o, "eye", [&] {
    int64_t r = i / std::max<int64_t>(cols, 1), c = i % std::max<int64_t>(cols, 1);
    ++i;
    return r == c ? 1.0 : 0.0;
  });
}

Tensor rand(const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  GRADLAB_CHECK(is_floating_point(o.dtype()), DTypeError, "rand", "needs a floating dtype", "float32 or float64", to_string(o.dtype()));
  return generate(shape, o, "rand", [&] { return g.uniform(); });
}

Tensor randn(const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  GRADLAB_CHECK(is_floating_point(o.dtype()), DTypeError, "randn", "needs a floating dtype", "float32 or float64", to_string(o.dtype()));
  return generate(shape, o, "randn", [&] { return g.normal(); });
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  if (!o.has_dtype()) o = o.dtype(kInt64);
  GRADLAB_CHECK(high > low, ValueError, "randint", "empty range", "low < high",
                "low=" + std::to_string(low) + ", high=" + std::to_string(high));
  return generate(shape, o, "randint", [&] { return static_cast<double>(g.randint(low, high)); });
}

Tensor randint(int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  return randint(0, high, shape, o, gen);
}

// Per row: with replacement, k draws by inverting the CDF of w / Σw; without, k sequential draws
// each from the weights left (a drawn class's weight becomes 0), as torch.multinomial samples.
Tensor multinomial(const Tensor& probs, int64_t k, bool replacement, Generator* gen) {
  GRADLAB_CHECK(probs.defined(), ValueError, "multinomial", "probs is undefined", "a tensor", "undefined");
  GRADLAB_CHECK(probs.dim() == 1 || probs.dim() == 2, ShapeError, "multinomial", "prob_dist must be 1 or 2 dim",
                "[C] or [N, C]", probs.describe());
  GRADLAB_CHECK(is_floating_point(probs.dtype()), DTypeError, "multinomial", "probs must be a floating point tensor",
                "float32 or float64", to_string(probs.dtype()));
  const int64_t rows = probs.dim() == 1 ? 1 : probs.size(0), c = probs.size(-1);
  GRADLAB_CHECK(c > 0, ShapeError, "multinomial", "number of categories cannot be zero", "C >= 1", probs.describe());
  GRADLAB_CHECK(k > 0, ValueError, "multinomial", "cannot sample n_sample <= 0 samples", "num_samples >= 1",
                std::to_string(k));
  GRADLAB_CHECK(replacement || k <= c, ValueError, "multinomial",
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
                "num_samples <= " + std::to_string(c), std::to_string(k), "pass replacement=true");
  Generator& g = gen ? *gen : default_generator();
  const std::vector<double> w = probs.cpu().to_vector<double>();
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> p(w.begin() + r * c, w.begin() + (r + 1) * c);
    double total = 0;
    int64_t positive = 0;
    for (double x : p) {
      GRADLAB_CHECK(std::isfinite(x) && x >= 0, ValueError, "multinomial",
                    "probability tensor contains either inf, nan or element < 0", "finite weights >= 0",
                    "row " + std::to_string(r) + " has " + std::to_string(x));
      total += x;
      positive += x > 0;
    }
    GRADLAB_CHECK(total > 0, ValueError, "multinomial", "invalid multinomial distribution (sum of probabilities <= 0)",
                  "a row with a positive weight", "row " + std::to_string(r) + " sums to 0");
    GRADLAB_CHECK(replacement || k <= positive, ValueError, "multinomial",
                  "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)",
                  std::to_string(k) + " positive weights", std::to_string(positive) + " in row " + std::to_string(r));
    for (int64_t j = 0; j < k; ++j) {
      const double u = g.uniform() * total;
      double acc = 0;
      int64_t pick = c - 1;
      for (int64_t i = 0; i < c; ++i) {
        acc += p[static_cast<size_t>(i)];
        if (u < acc && p[static_cast<size_t>(i)] > 0) {
          pick = i;
          break;
        }
      }
      while (p[static_cast<size_t>(pick)] <= 0) --pick;  // u rounded onto the end: the last positive class
      out.push_back(pick);
      if (!replacement) {
        total -= p[static_cast<size_t>(pick)];
        p[static_cast<size_t>(pick)] = 0;
        if (total <= 0) {  // rounding: recompute from the weights left
          total = 0;
          for (double x : p) total += x;
        }
      }
    }
  }
  Shape shape = probs.dim() == 1 ? Shape{k} : Shape{rows, k};
  return from_vector(out, shape, TensorOptions().device(probs.device()));
}

namespace {
Tensor blob(void* data, const Shape& sizes, const Strides& strides, std::function<void(void*)> deleter,
            TensorOptions o) {
  GRADLAB_CHECK(data != nullptr || numel_of(sizes) == 0, ValueError, "from_blob", "data is a null pointer",
                "a pointer to the caller's memory", "nullptr");
  GRADLAB_CHECK(!o.device().is_cuda(), DeviceError, "from_blob", "only CPU memory can be wrapped",
                "a CPU pointer", "a " + o.device().str() + " device", "wrap on the CPU, then .to(kCUDA)");
  GRADLAB_CHECK(strides.size() == sizes.size(), ShapeError, "from_blob", "one stride per size",
                std::to_string(sizes.size()) + " strides", std::to_string(strides.size()));
  int64_t extent = 1;  // elements spanned: 1 + Σ (size - 1) * stride
  for (size_t i = 0; i < sizes.size(); ++i) {
    GRADLAB_CHECK(sizes[i] >= 0 && strides[i] >= 0, ShapeError, "from_blob", "negative size or stride",
                  "sizes and strides >= 0", shape_str(sizes) + " / " + shape_str(strides));
    if (sizes[i] == 0) extent = 0;
    if (extent > 0) extent += (sizes[i] - 1) * strides[i];
  }
  const ScalarType dt = o.dtype();
  const size_t es = element_size(dt);
  GRADLAB_CHECK(reinterpret_cast<std::uintptr_t>(data) % es == 0, ValueError, "from_blob",
                "data is not aligned to its element size", std::to_string(es) + "-byte aligned",
                "address " + std::to_string(reinterpret_cast<std::uintptr_t>(data)));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, static_cast<size_t>(extent) * es, std::move(deleter));
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = dt;
  Tensor t(std::move(impl));
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor from_blob(void* data, const Shape& sizes, TensorOptions o) {
  return blob(data, sizes, contiguous_strides(sizes), {}, o);
}
Tensor from_blob(void* data, const Shape& sizes, const Strides& strides, TensorOptions o) {
  return blob(data, sizes, strides, {}, o);
}
Tensor from_blob(void* data, const Shape& sizes, std::function<void(void*)> deleter, TensorOptions o) {
  return blob(data, sizes, contiguous_strides(sizes), std::move(deleter), o);
}

Tensor randperm(int64_t n, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  GRADLAB_CHECK(n >= 0, ValueError, "randperm", "n must be non-negative", "n >= 0", std::to_string(n));
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  // Fisher-Yates with our own randint: the same permutation on every platform.
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[g.randint(0, i + 1)]);
  return from_vector(p, {n});
}

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> o) { return empty(t.sizes(), like(t, o)); }
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> o) { return zeros(t.sizes(), like(t, o)); }
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> o) { return ones(t.sizes(), like(t, o)); }
Tensor full_like(const Tensor& t, const Scalar& v, std::optional<TensorOptions> o) { return full(t.sizes(), v, like(t, o)); }
Tensor rand_like(const Tensor& t, Generator* gen) { return rand(t.sizes(), t.options(), gen); }
Tensor randn_like(const Tensor& t, Generator* gen) { return randn(t.sizes(), t.options(), gen); }

namespace {
template <class V>
Tensor from_values(const V& values, const Shape& shape, TensorOptions o, ScalarType natural) {
  GRADLAB_CHECK(static_cast<int64_t>(values.size()) == numel_of(shape), ShapeError, "from_vector",
                "number of values does not match the shape",
                std::to_string(numel_of(shape)) + " values for shape " + shape_str(shape),
                std::to_string(values.size()) + " values");
  if (!o.has_dtype()) o = o.dtype(natural);
  size_t i = 0;
  return generate(shape, o, "from_vector", [&] { return static_cast<double>(values[i++]); });
}
}  // namespace

Tensor from_vector(const std::vector<double>& v, const Shape& s, TensorOptions o) {
  if (!o.has_dtype()) o = o.dtype(default_dtype());
  if (o.dtype() == kFloat64) {  // exact: no trip through float
    check_device_available(o.device(), "from_vector");
    Tensor t = alloc(s, on_host(o), "from_vector");
    GRADLAB_CHECK(static_cast<int64_t>(v.size()) == numel_of(s), ShapeError, "from_vector",
                  "number of values does not match the shape",
                  std::to_string(numel_of(s)) + " values for shape " + shape_str(s), std::to_string(v.size()) + " values");
    std::copy(v.begin(), v.end(), data_of<double>(t));
    return finish(to_device(t, o), o, "from_vector");
  }
  return from_values(v, s, o, default_dtype());
}
Tensor from_vector(const std::vector<int64_t>& v, const Shape& s, TensorOptions o) {
  if (!o.has_dtype() || o.dtype() == kInt64) {  // exact for large integers
    o = o.dtype(kInt64);
    check_device_available(o.device(), "from_vector");
    Tensor t = alloc(s, on_host(o), "from_vector");
    GRADLAB_CHECK(static_cast<int64_t>(v.size()) == numel_of(s), ShapeError, "from_vector",
                  "number of values does not match the shape",
                  std::to_string(numel_of(s)) + " values for shape " + shape_str(s), std::to_string(v.size()) + " values");
    std::copy(v.begin(), v.end(), data_of<int64_t>(t));
    return to_device(t, o);
  }
  return from_values(v, s, o, kInt64);
}
Tensor from_vector(const std::vector<bool>& v, const Shape& s, TensorOptions o) { return from_values(v, s, o, kBool); }

namespace {
// The dtype of literal numbers: bool if all are bool, int64 if all are integers (or bool), else
// the default floating dtype (an empty list too, as LibTorch).
ScalarType literal_dtype(const std::vector<Scalar>& flat) {
  bool all_bool = true, any_float = false;
  for (const Scalar& x : flat) {
    all_bool = all_bool && x.is_boolean();
    any_float = any_float || x.is_floating_point();
  }
  return flat.empty() || any_float ? default_dtype() : all_bool ? kBool : kInt64;
}
}  // namespace

TensorData::TensorData(std::initializer_list<TensorData> items) {
  const TensorData* first = items.size() ? items.begin() : nullptr;
  shape_ = {static_cast<int64_t>(items.size())};
  if (first) shape_.insert(shape_.end(), first->shape_.begin(), first->shape_.end());
  for (const TensorData& item : items) {
    GRADLAB_CHECK(item.shape_ == first->shape_, ShapeError, "tensor",
                  "the items of a brace list have different shapes (a ragged list)",
                  "every item of shape " + shape_str(first->shape_), "an item of shape " + shape_str(item.shape_),
                  "every inner brace list must have the same length");
    values_.insert(values_.end(), item.values_.begin(), item.values_.end());
  }
}

void TensorData::check_row(size_t got, size_t want) {
  GRADLAB_CHECK(got == want, ShapeError, "tensor", "the rows have different lengths (a ragged list)",
                std::to_string(want) + " values per row", std::to_string(got));
}

Tensor tensor(const TensorData& data, TensorOptions o) {
  const std::vector<Scalar>& flat = data.values();
  if (!o.has_dtype())
    o = o.dtype(flat.empty() && data.element() ? data.element()->natural_dtype() : literal_dtype(flat));
  // NOTE: integers above 2^53 would round through double: int64 tensors take int64 values.
  if (o.dtype() == kInt64) {
    std::vector<int64_t> ints;
    for (const Scalar& x : flat) ints.push_back(x.to_long());
    return from_vector(ints, data.shape(), o);
  }
  std::vector<double> values;
  for (const Scalar& x : flat) values.push_back(x.to_double());
  return from_vector(values, data.shape(), o);
}

}  // namespace gradlab
