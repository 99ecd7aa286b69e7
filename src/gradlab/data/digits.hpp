#pragma once
// The digits data set (data/digits/: 1797 8x8 images of handwritten digits, UCI, CC BY 4.0; see
// its README.md for the attribution), the seeded train/test split standardized with the training
// statistics that the lessons, checks and benches share, and how gradlab finds its data directory.

#include <cstdint>
#include <filesystem>
#include <string>

#include "gradlab/data/dataset.hpp"

namespace gradlab::data {

/// The data directory: $GRADLAB_DATA_DIR when set (ctest sets it), else the first of ./data,
/// ../data, ../../data, ../../../data that exists, else the installed <prefix>/share/gradlab/data
/// (found from libgradlab.so's own location). Throws IOError listing the places tried.
std::filesystem::path data_dir();
/// data_dir() / relative, checked to exist (IOError naming the full path otherwise).
std::filesystem::path data_file(const std::string& relative);

/// How load_digits shapes the images.
struct DigitsOptions {
  /// [N, 64] instead of [N, 1, 8, 8].
  bool flatten = false;
  /// Another copy of digits.csv.gz (default: data_file("digits/digits.csv.gz")).
  std::filesystem::path path;
};

/// images float32 in [0, 1] (pixel / 16), [N, 1, 8, 8] or [N, 64]; labels int64 in 0..9.
TensorDataset load_digits(const DigitsOptions& options = {});

/// How load_digits_split splits and standardizes the digits.
struct DigitsSplitOptions {
  /// [N, 64] (what an MLP takes) instead of [N, 1, 8, 8].
  bool flatten = true;
  /// The test split: data::train_test_split(all, test_size, seed) (1437 train / 360 test).
  size_t test_size = 360;
  uint64_t seed = 0;
  /// Standardize both splits with the training statistics; false keeps the raw pixels (the
  /// statistics are still returned, e.g. for transforms::normalize before an augmentation).
  bool standardize = true;
  /// The std's correction: 0 the population std, 1 the sample std (Tensor::std's default).
  int64_t correction = 0;
  /// Added to every non-zero std.
  double eps = 1e-6;
  /// Another copy of digits.csv.gz (default: data_file("digits/digits.csv.gz")).
  std::filesystem::path path;
};

/// The digits split and the statistics it was standardized with.
struct DigitsSplit {
  TensorDataset train, test;
  /// Per-pixel statistics of the training images only (the test set must not leak into them),
  /// shaped as one image ([64] or [1, 8, 8]): mean, and std + eps, with 1 for the pixels that
  /// never vary (the always-blank corners: their standardized value is 0 either way).
  Tensor mean, std;
};

/// The seeded digits split, standardized per pixel with the training split's statistics:
///   x = (x - mean) / std      for the train and the test images alike.
DigitsSplit load_digits_split(const DigitsSplitOptions& options = {});

}  // namespace gradlab::data
