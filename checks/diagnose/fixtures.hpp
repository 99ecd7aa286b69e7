#pragma once
// Shared by the diagnose checks: the digits split (loaded once), the healthy digits MLP
// (64-128-10, as lessons 07/08) and the planted bugs doctor must find.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <gradlab/gradlab.hpp>
#include <numeric>
#include <thread>
#include <vector>

namespace diagnose_fixtures {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace dg = gradlab::diagnose;
using ::testing::HasSubstr;

/// The standardized split (train 1437 x 64, test 360 x 64), loaded once per process.
inline const gl::data::DigitsSplit& digits() {
  static const gl::data::DigitsSplit s = gl::data::load_digits_split();
  return s;
}
/// The same split, raw pixels in [0, 1], with the per-pixel statistics to normalize it.
inline const gl::data::DigitsSplit& raw_digits() {
  static const gl::data::DigitsSplit s = [] {
    gl::data::DigitsSplitOptions o;
    o.standardize = false;
    return gl::data::load_digits_split(o);
  }();
  return s;
}
/// Reference statistics of raw digits, as a user normalizing with them would pass them.
inline gl::diagnose::InputStats digits_stats() {
  gl::diagnose::InputStats st;
  st.mean = raw_digits().mean;
  st.std = raw_digits().std;
  st.sample_shape = {1, 8, 8};
  return st;
}
/// Flattened [N, 64] images with each 8x8 image transposed.
inline gl::Tensor transpose_images(const gl::Tensor& x) {
  return x.reshape({-1, 1, 8, 8}).transpose(2, 3).contiguous().reshape({-1, 64});
}

/// model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)), seeded.
inline nn::Sequential mlp(uint64_t seed = 1) {
  gl::manual_seed(seed);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
}

/// The first `n` training rows (a batch for the model checks).
inline gl::Tensor xb(int64_t n = 64) { return digits().train.data().narrow(0, 0, n); }
inline gl::Tensor yb(int64_t n = 64) { return digits().train.targets().narrow(0, 0, n); }

/// Every parameter as one float64 vector (to compare models before and after a check).
inline std::vector<double> flat(const nn::Module& m) {
  gl::NoGradGuard no_grad;
  return nn::utils::parameters_to_vector(m.parameters()).to(gl::kFloat64).to_vector<double>();
}

/// The rows of (x, y) reordered by label (stable), as some files come.
inline gl::data::TensorDataset sorted_by_label(const gl::Tensor& x, const gl::Tensor& y) {
  const std::vector<int64_t> labels = y.to_vector<int64_t>();
  std::vector<int64_t> idx(labels.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return labels[size_t(a)] < labels[size_t(b)]; });
  const gl::Tensor order = gl::from_vector(idx, {static_cast<int64_t>(idx.size())});
  return gl::data::TensorDataset(gl::index_select(x, 0, order), gl::index_select(y, 0, order));
}

/// The standardized digits training split with a get() that sleeps `ms` per sample (decoding
/// in get(), as an image reader does): a loader over it keeps the model waiting.
class SlowDigits : public gl::data::Dataset {
 public:
  explicit SlowDigits(int ms = 2) : ms_(ms) {}
  gl::data::Example<> get(size_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    const auto i = static_cast<int64_t>(index);
    return {digits().train.data().select(0, i), digits().train.targets().select(0, i)};
  }
  size_t size() const override { return digits().train.size(); }

 private:
  int ms_;
};

/// 64 -> 128 -> 128 -> 10 whose forward leaves fc2 out (a layer left out).
struct LayerLeftOutImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  LayerLeftOutImpl() {
    gl::manual_seed(1);
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 128));
    fc3 = register_module("fc3", nn::Linear(128, 10));
  }
  gl::Tensor forward(const gl::Tensor& x) { return fc3(gl::relu(fc1(x))); }
};
GRADLAB_MODULE(LayerLeftOut);

}  // namespace diagnose_fixtures
