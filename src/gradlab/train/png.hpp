#pragma once
// A small PNG encoder (8-bit gray, RGB or RGBA; no interlace; filter 0 "None" on every row),
// for SummaryWriter::add_image. Internal to train/; zlib does the deflate and the CRCs.
//
// File: the 8-byte signature, then chunks { uint32 BE length; 4-byte type; data; uint32 BE
// crc32(type + data) }: IHDR (width, height, bit depth 8, color type 0 gray / 2 RGB /
// 6 RGBA, compression 0, filter 0, interlace 0), one IDAT (the zlib stream of the rows, each
// row prefixed by its filter byte 0) and IEND.

#include <cstdint>
#include <string>
#include <vector>

namespace gradlab::train::detail {

/// PNG bytes of an HWC image: `pixels` holds height * width * channels bytes, row by row;
/// channels 1 (gray), 3 (RGB) or 4 (RGBA).
std::string encode_png(const std::vector<uint8_t>& pixels, int64_t height, int64_t width,
                       int64_t channels);

}  // namespace gradlab::train::detail
