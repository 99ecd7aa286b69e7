// The MNIST IDX reader (mnist.hpp). Parsing works on bytes in memory so that
// checks/data/mnist_fuzz_test.cpp can feed it mutated files without touching the disk.
#include "gradlab/data/mnist.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "gradlab/core/error.hpp"
#include "gradlab/core/factories.hpp"

namespace gradlab::data {

namespace {

constexpr uint32_t kImageMagic = 2051;  // 0x00000803: unsigned bytes, 3 dims
constexpr uint32_t kLabelMagic = 2049;  // 0x00000801: unsigned bytes, 1 dim
constexpr uint32_t kRows = 28, kCols = 28;
constexpr size_t kImageHeader = 16, kLabelHeader = 8;
// The biggest file read (the MNIST train images are 47 MB; EMNIST's largest about 550 MB).
constexpr size_t kMaxFileBytes = size_t{1} << 30;

constexpr const char* kOp = "datasets::MNIST";

uint32_t read_be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

std::string magic_hint(uint32_t magic, uint32_t wanted) {
  if (magic == kImageMagic && wanted == kLabelMagic)
    return "this is an image file (magic 2051); the labels are the *-labels-idx1-ubyte file";
  if (magic == kLabelMagic && wanted == kImageMagic)
    return "this is a label file (magic 2049); the images are the *-images-idx3-ubyte file";
  if (magic == 0x1f8b0800U || (magic >> 16) == 0x1f8bU)
    return "this looks gzip-compressed: gunzip the .gz download first";
  return "is this an MNIST IDX file?";
}

// The file's header checked; returns the example count.
uint32_t check_header(const std::vector<uint8_t>& b, const std::string& name, uint32_t magic_want,
                      size_t header, size_t example_bytes, const char* kind) {
  GRADLAB_CHECK(b.size() >= header, IOError, kOp,
                name + ": too short for an IDX " + kind + " header",
                "at least " + std::to_string(header) + " bytes",
                std::to_string(b.size()) + " bytes", "the file may be truncated");
  const uint32_t magic = read_be32(b, 0);
  GRADLAB_CHECK(magic == magic_want, IOError, kOp, name + ": wrong magic number",
                std::to_string(magic_want) + " (an IDX " + kind + " file)", std::to_string(magic),
                magic_hint(magic, magic_want));
  const uint32_t count = read_be32(b, 4);
  GRADLAB_CHECK(count >= 1 && count <= 0x7fffffffU, IOError, kOp,
                name + ": bad example count in the header", "1 <= count <= 2147483647",
                std::to_string(count));
  // count < 2^31 and example_bytes = 784 or 1: the product fits easily in 64 bits.
  const uint64_t want = uint64_t{header} + uint64_t{count} * example_bytes;
  GRADLAB_CHECK(b.size() == want, IOError, kOp,
                name + ": the file size does not match its header's count of " +
                    std::to_string(count) + " " + kind + (count == 1 ? "" : "s"),
                std::to_string(want) + " bytes", std::to_string(b.size()) + " bytes",
                b.size() < want ? "the file is truncated" : "the file has trailing bytes");
  return count;
}

}  // namespace

namespace mnist {

Tensor parse_images(const std::vector<uint8_t>& b, const std::string& name) {
  if (b.size() >= kImageHeader && read_be32(b, 0) == kImageMagic) {
    const uint32_t rows = read_be32(b, 8), cols = read_be32(b, 12);
    GRADLAB_CHECK(rows == kRows && cols == kCols, IOError, kOp,
                  name + ": the images are not 28 x 28", "rows 28, cols 28",
                  "rows " + std::to_string(rows) + ", cols " + std::to_string(cols));
  }
  const uint32_t n = check_header(b, name, kImageMagic, kImageHeader, size_t{kRows} * kCols, "image");
  Tensor images = empty(Shape{int64_t{n}, 1, kRows, kCols}, dtype(kFloat32));
  float* out = images.data_ptr<float>();
  const size_t total = size_t{n} * kRows * kCols;
  const uint8_t* in = b.data() + kImageHeader;
  for (size_t i = 0; i < total; ++i) out[i] = static_cast<float>(in[i]) / 255.0F;
  return images;
}

Tensor parse_targets(const std::vector<uint8_t>& b, const std::string& name) {
  const uint32_t n = check_header(b, name, kLabelMagic, kLabelHeader, 1, "label");
  Tensor targets = empty(Shape{int64_t{n}}, dtype(kInt64));
  int64_t* out = targets.data_ptr<int64_t>();
  const uint8_t* in = b.data() + kLabelHeader;
  for (size_t i = 0; i < n; ++i) out[i] = in[i];
  return targets;
}

std::pair<Tensor, Tensor> parse(const std::vector<uint8_t>& image_bytes,
                                const std::string& image_name,
                                const std::vector<uint8_t>& label_bytes,
                                const std::string& label_name) {
  Tensor images = parse_images(image_bytes, image_name);
  Tensor targets = parse_targets(label_bytes, label_name);
  GRADLAB_CHECK(images.size(0) == targets.size(0), IOError, kOp,
                image_name + " and " + label_name + " hold different numbers of examples",
                std::to_string(images.size(0)) + " labels (one per image)",
                std::to_string(targets.size(0)) + " labels",
                "the two files must come from the same split (train-* or t10k-*)");
  return {std::move(images), std::move(targets)};
}

std::vector<uint8_t> read_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  const bool exists = std::filesystem::is_regular_file(path, ec);
  GRADLAB_CHECK(exists, IOError, kOp, "cannot open " + path, "an existing IDX file",
                ec ? ec.message() : "no such file",
                "download and gunzip the MNIST files into the root folder");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  GRADLAB_CHECK(!ec, IOError, kOp, "cannot read the size of " + path, "a readable file",
                ec.message());
  GRADLAB_CHECK(size <= max_bytes, IOError, kOp, path + " is too large for an MNIST IDX file",
                "at most " + std::to_string(max_bytes) + " bytes", std::to_string(size) + " bytes");
  std::ifstream in(path, std::ios::binary);
  GRADLAB_CHECK(in.good(), IOError, kOp, "cannot open " + path, "a readable file",
                "open failed");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  GRADLAB_CHECK(static_cast<size_t>(in.gcount()) == bytes.size(), IOError, kOp,
                "cannot read " + path, std::to_string(bytes.size()) + " bytes",
                std::to_string(in.gcount()) + " bytes");
  return bytes;
}

}  // namespace mnist

namespace datasets {

MNIST::MNIST(const std::string& root, Mode mode) : is_train_(mode == Mode::kTrain) {
  const std::string prefix = is_train_ ? "train" : "t10k";
  const std::filesystem::path dir(root);
  const std::string image_path = (dir / (prefix + "-images-idx3-ubyte")).string();
  const std::string label_path = (dir / (prefix + "-labels-idx1-ubyte")).string();
  // The images first (an argument list would read them in an unspecified order).
  const std::vector<uint8_t> image_bytes = mnist::read_file(image_path, kMaxFileBytes);
  const std::vector<uint8_t> label_bytes = mnist::read_file(label_path, kMaxFileBytes);
  auto parsed = mnist::parse(image_bytes, image_path, label_bytes, label_path);
  images_ = std::move(parsed.first);
  targets_ = std::move(parsed.second);
}

Example<> MNIST::get(size_t index) {
  const auto n = static_cast<size_t>(images_.size(0));
  GRADLAB_CHECK(index < n, ShapeError, "datasets::MNIST::get", "index out of range",
                "index < " + std::to_string(n), std::to_string(index));
  const auto i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

}  // namespace datasets

}  // namespace gradlab::data
