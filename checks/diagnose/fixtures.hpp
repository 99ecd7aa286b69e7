#pragma once
// Shared by the diagnose checks: the digits split (loaded once), the healthy digits MLP
// (64-128-10, as lessons 07/08) and the planted bugs doctor must find.

#include <gradlab/gradlab.hpp>

namespace diagnose_fixtures {

namespace gl = gradlab;
namespace nn = gradlab::nn;

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

}  // namespace diagnose_fixtures
