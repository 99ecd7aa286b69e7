#pragma once
// Small MNIST IDX files built in memory for the reader's tests and fuzzing: pixel and label
// values are known functions of the example index.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace idx {

inline void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

/// Pixel p of image i: (7 * i + 3 * p) % 256.
inline uint8_t pixel(size_t i, size_t p) { return static_cast<uint8_t>((7 * i + 3 * p) % 256); }
/// Label of example i: (i * 3) % 10.
inline uint8_t label(size_t i) { return static_cast<uint8_t>((i * 3) % 10); }

/// An image file of `n` 28 x 28 images (magic 2051).
inline std::vector<uint8_t> images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28) {
  std::vector<uint8_t> b;
  put_be32(b, 2051);
  put_be32(b, n);
  put_be32(b, rows);
  put_be32(b, cols);
  for (size_t i = 0; i < n; ++i)
    for (size_t p = 0; p < size_t{rows} * cols; ++p) b.push_back(pixel(i, p));
  return b;
}

/// A label file of `n` labels (magic 2049).
inline std::vector<uint8_t> labels(uint32_t n) {
  std::vector<uint8_t> b;
  put_be32(b, 2049);
  put_be32(b, n);
  for (size_t i = 0; i < n; ++i) b.push_back(label(i));
  return b;
}

inline void write(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace idx
