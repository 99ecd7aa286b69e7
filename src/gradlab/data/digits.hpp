#pragma once
// The digits data set (data/digits/: 1797 8x8 images of handwritten digits, UCI, CC BY 4.0; see
// its README.md for the attribution) and how gradlab finds its data directory.

#include <filesystem>
#include <string>

#include "gradlab/data/dataset.hpp"

namespace gradlab::data {

/// The data directory: $GRADLAB_DATA_DIR when set (ctest sets it), else the first of ./data,
/// ../data, ../../data, ../../../data that exists. Throws IOError listing the places tried.
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

}  // namespace gradlab::data
