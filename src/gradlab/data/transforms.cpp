#include "gradlab/data/transforms.hpp"

#include <string>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::data::transforms {

data::Transform compose(std::vector<data::Transform> list) {
  for (const auto& t : list)
    GRADLAB_CHECK(static_cast<bool>(t), ValueError, "transforms::compose", "empty transform",
                  "callables", "an empty std::function");
  return [list = std::move(list)](Example<> ex, Generator& gen) {
    for (const auto& t : list) ex = t(std::move(ex), gen);
    return ex;
  };
}

data::Transform lambda(std::function<Tensor(const Tensor&)> fn) {
  GRADLAB_CHECK(static_cast<bool>(fn), ValueError, "transforms::lambda", "empty function",
                "a callable", "an empty std::function");
  return [fn = std::move(fn)](Example<> ex, Generator&) {
    ex.data = fn(ex.data);
    return ex;
  };
}

data::Transform normalize(double mean, double stddev) {
  GRADLAB_CHECK(stddev > 0, ValueError, "transforms::normalize", "stddev must be positive",
                "stddev > 0", std::to_string(stddev));
  return [mean, stddev](Example<> ex, Generator&) {
    NoGradGuard no_grad;
    ex.data = (ex.data - mean) / stddev;
    return ex;
  };
}

data::Transform normalize(const Tensor& mean, const Tensor& stddev) {
  GRADLAB_CHECK(mean.defined() && stddev.defined(), ValueError, "transforms::normalize",
                "mean or stddev is undefined", "two tensors", "undefined");
  NoGradGuard no_grad;
  Tensor m = mean.detach().clone();
  // NOTE: std 0 -> 1 (constant features, e.g. the always-blank corner pixels of digits).
  Tensor s = where(stddev.detach() == 0, 1.0, stddev.detach());
  return [m, s](Example<> ex, Generator&) {
    NoGradGuard guard;
    ex.data = (ex.data - m) / s;
    return ex;
  };
}

data::Transform random_noise(double stddev) {
  GRADLAB_CHECK(stddev >= 0, ValueError, "transforms::random_noise", "stddev must be >= 0",
                "stddev >= 0", std::to_string(stddev));
  return [stddev](Example<> ex, Generator& gen) {
    NoGradGuard no_grad;
    GRADLAB_CHECK(ex.data.is_floating_point(), DTypeError, "transforms::random_noise",
                  "data must be floating point", "float32 or float64", to_string(ex.data.dtype()));
    ex.data = ex.data + randn(ex.data.sizes(), dtype(ex.data.dtype()), &gen) * stddev;
    return ex;
  };
}

namespace {

template <class T>
void shift_images(const T* src, T* dst, int64_t images, int64_t h, int64_t w, int64_t dy,
                  int64_t dx) {
  // dst[y][x] = src[y - dy][x - dx] where that is inside the image, else 0.
  for (int64_t n = 0; n < images; ++n) {
    const T* s = src + n * h * w;
    T* d = dst + n * h * w;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const int64_t sy = y - dy, sx = x - dx;
        d[y * w + x] = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? s[sy * w + sx] : T(0);
      }
    }
  }
}

}  // namespace

data::Transform random_shift(int64_t max_shift) {
  GRADLAB_CHECK(max_shift >= 0, ValueError, "transforms::random_shift", "max_shift must be >= 0",
                "max_shift >= 0", std::to_string(max_shift));
  return [max_shift](Example<> ex, Generator& gen) {
    GRADLAB_CHECK(ex.data.dim() >= 2, ShapeError, "transforms::random_shift",
                  "needs an image with H and W as its last two dims", "rank >= 2",
                  shape_str(ex.data.sizes()),
                  "load images as [1, 8, 8] and add transforms::flatten() after the shift");
    const ScalarType dt = ex.data.dtype();
    GRADLAB_CHECK(dt == kFloat32 || dt == kFloat64, DTypeError, "transforms::random_shift",
                  "unsupported dtype", "float32 or float64", to_string(dt));
    const int64_t dy = gen.randint(-max_shift, max_shift + 1);
    const int64_t dx = gen.randint(-max_shift, max_shift + 1);
    Tensor src = ex.data.contiguous();
    Tensor dst = empty(src.sizes(), dtype(dt));
    const int64_t h = src.size(-2), w = src.size(-1);
    const int64_t images = h * w == 0 ? 0 : src.numel() / (h * w);
    if (dt == kFloat32)
      shift_images(src.data_ptr<float>(), dst.data_ptr<float>(), images, h, w, dy, dx);
    else
      shift_images(src.data_ptr<double>(), dst.data_ptr<double>(), images, h, w, dy, dx);
    ex.data = dst;
    return ex;
  };
}

data::Transform flatten() {
  return [](Example<> ex, Generator&) {
    ex.data = ex.data.flatten();
    return ex;
  };
}

data::Transform to_dtype(ScalarType dt) {
  return [dt](Example<> ex, Generator&) {
    NoGradGuard no_grad;
    ex.data = ex.data.to(dt);
    return ex;
  };
}

}  // namespace gradlab::data::transforms
