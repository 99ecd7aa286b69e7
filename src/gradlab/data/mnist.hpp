#pragma once
// LibTorch's torch::data::datasets::MNIST: the four IDX files of the MNIST digits (also
// Fashion-MNIST and KMNIST, which use the same names and layout) read from a folder.
//
//   auto train = torch::data::datasets::MNIST("./data");                  // train-* files
//   auto test = torch::data::datasets::MNIST("./data", MNIST::Mode::kTest); // t10k-* files
//   train.images()   float32 [N, 1, 28, 28], pixel / 255 in [0, 1]
//   train.targets()  int64 [N] (the label bytes as read)
//
// The IDX layout (big-endian int32 fields): images = magic 2051, count, rows, cols, then
// count * rows * cols pixel bytes; labels = magic 2049, count, then count label bytes.
// Every malformed input throws IOError naming the file, what was expected and what was found:
// a missing file, a wrong magic, a header cut short, rows x cols other than 28 x 28, a payload
// shorter or longer than the header announces, image and label counts that differ. The sizes
// are checked against the bytes actually there before anything is allocated.
// Unlike LibTorch, the count is not required to be 60000 (train) or 10000 (test): any count
// from 1 up works, so subsets and small test files load too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/data/torch_data.hpp"

namespace gradlab::data {

namespace mnist {
/// The bytes of an IDX image file as float32 [N, 1, 28, 28] in [0, 1]; `name` names the file in
/// errors. Throws IOError for anything but a well-formed file.
Tensor parse_images(const std::vector<uint8_t>& bytes, const std::string& name);
/// The bytes of an IDX label file as int64 [N].
Tensor parse_targets(const std::vector<uint8_t>& bytes, const std::string& name);
/// Both, checked to hold as many examples: (images, targets).
std::pair<Tensor, Tensor> parse(const std::vector<uint8_t>& image_bytes,
                                const std::string& image_name,
                                const std::vector<uint8_t>& label_bytes,
                                const std::string& label_name);
/// The bytes of `path` (IOError when it cannot be read or exceeds `max_bytes`).
std::vector<uint8_t> read_file(const std::string& path, size_t max_bytes);
}  // namespace mnist

namespace datasets {

/// The MNIST dataset (LibTorch's datasets::MNIST); see the top of this file.
class MNIST : public Dataset<MNIST> {
 public:
  /// Which files: train-images-idx3-ubyte + train-labels-idx1-ubyte, or t10k-images-idx3-ubyte +
  /// t10k-labels-idx1-ubyte.
  enum class Mode { kTrain, kTest };
  /// Reads the two files of `mode` from the folder `root`.
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  /// Example `index`: {image [1, 28, 28], target []} (views of images() / targets()).
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return is_train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool is_train_;
};

}  // namespace datasets

}  // namespace gradlab::data
