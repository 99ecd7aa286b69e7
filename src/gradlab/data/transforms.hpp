#pragma once
// Composable sample transforms (torch::data::transforms / torchvision.transforms).
// Each is a data::Transform: Example -> Example, given the sample's own random stream, so
// random augmentations are reproducible and independent of the DataLoader's worker count.
//
//   auto train = data::map(std::make_shared<data::TensorDataset>(train_set),
//       transforms::compose({transforms::normalize(mean, stddev), transforms::random_shift(1),
//                            transforms::random_noise(0.05)}));
//
// NOTE: normalize before adding noise: noise added first is divided by each feature's std, and
// nearly constant features (the digits' border pixels) would blow it up.
//
// NOTE: transforms return new tensors; they never write into the sample they are given (it may
// be a view of the dataset's own storage).

#include <functional>
#include <vector>

#include "gradlab/data/dataset.hpp"

namespace gradlab::data::transforms {

/// Applies `list` left to right.
data::Transform compose(std::vector<data::Transform> list);
/// A deterministic function of the data tensor (torch::data::transforms::Lambda).
data::Transform lambda(std::function<Tensor(const Tensor&)> fn);
/// (x - mean) / stddev with scalar statistics.
data::Transform normalize(double mean, double stddev);
/// (x - mean) / stddev with per-feature statistics broadcast against the data (e.g. [1, 8, 8]
/// or [64] computed over the training set). A stddev of 0 (a constant feature) counts as 1,
/// as scikit-learn's StandardScaler does, so no NaN or Inf appears.
data::Transform normalize(const Tensor& mean, const Tensor& stddev);
/// x + stddev * N(0, 1), elementwise, from the sample's stream.
data::Transform random_noise(double stddev);
/// Moves the image (the last two dims, H and W) by dy, dx drawn uniformly from
/// [-max_shift, max_shift]; pixels moved in from outside are 0. Needs rank >= 2: load images
/// as [1, 8, 8] and flatten() after the shift.
data::Transform random_shift(int64_t max_shift);
/// data.flatten() (e.g. [1, 8, 8] -> [64]).
data::Transform flatten();
/// data converted to `dtype`.
data::Transform to_dtype(ScalarType dtype);

}  // namespace gradlab::data::transforms
