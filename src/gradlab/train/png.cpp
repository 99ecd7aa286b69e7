#include "gradlab/train/png.hpp"

#include <zlib.h>

#include "gradlab/core/error.hpp"

namespace gradlab::train::detail {

namespace {

void put_be32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void chunk(std::string& out, const char type[4], const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(body.data()),
                          static_cast<uInt>(body.size()));
  put_be32(out, static_cast<uint32_t>(crc));
}

}  // namespace

std::string encode_png(const std::vector<uint8_t>& pixels, int64_t height, int64_t width,
                       int64_t channels) {
  GRADLAB_CHECK(channels == 1 || channels == 3 || channels == 4, ValueError, "encode_png",
                "bad channel count", "1 (gray), 3 (RGB) or 4 (RGBA)", std::to_string(channels));
  GRADLAB_CHECK(height >= 1 && width >= 1 && height < (1 << 24) && width < (1 << 24), ValueError,
                "encode_png", "bad image size", "1 <= height, width < 2^24",
                std::to_string(height) + " x " + std::to_string(width));
  const size_t row = static_cast<size_t>(width * channels);
  GRADLAB_CHECK(pixels.size() == row * static_cast<size_t>(height), ValueError, "encode_png",
                "pixel count does not match the size", std::to_string(row * height) + " bytes",
                std::to_string(pixels.size()) + " bytes");
  std::string raw;
  raw.reserve((row + 1) * static_cast<size_t>(height));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back('\0');  // filter type 0: the row as is
    raw.append(reinterpret_cast<const char*>(pixels.data()) + static_cast<size_t>(y) * row, row);
  }
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  std::string z(zlen, '\0');
  const int rc =
      compress2(reinterpret_cast<Bytef*>(z.data()), &zlen,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 6);
  GRADLAB_CHECK(rc == Z_OK, IOError, "encode_png", "zlib could not compress the image", "Z_OK",
                std::to_string(rc));
  z.resize(zlen);

  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(width));
  put_be32(ihdr, static_cast<uint32_t>(height));
  const char color_type = channels == 1 ? 0 : channels == 3 ? 2 : 6;
  ihdr += std::string{'\x08', color_type, '\0', '\0', '\0'};

  std::string out("\x89PNG\r\n\x1a\n", 8);
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", "");
  return out;
}

}  // namespace gradlab::train::detail
