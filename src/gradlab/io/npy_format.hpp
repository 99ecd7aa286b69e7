#pragma once
// The .npy format without tensors: parse and validate a whole file in memory. Standard library
// only, so the fuzz target (checks/io/fuzz/npy_fuzz.cpp) builds it alone with clang.
//
// Layout: "\x93NUMPY", major, minor, header length (2 bytes little-endian in version 1, 4 in
// versions 2 and 3), the header (a Python dict literal: {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), }), then exactly shape x width data bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gradlab/core/format_error.hpp"

namespace gradlab::io::npy {

/// A validated file.
struct Header {
  std::string descr;  ///< "<f4", "|b1", ">i2", ...
  char order = '<';   ///< '<', '>', '|' or '='
  char kind = 'f';    ///< 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int width = 4;      ///< bytes per element: f 2/4/8, i 1/2/4/8, u 1/2/4, b 1
  bool fortran = false;
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  uint64_t data_start = 0;  ///< file offset of the data
  uint64_t nbytes = 0;      ///< numel * width == file size - data_start
};

/// Parses and validates a whole .npy file of `size` bytes (a bool's bytes must be 0 or 1).
/// Throws FormatError naming what is wrong and the byte offset.
Header parse(const unsigned char* file, size_t size);

}  // namespace gradlab::io::npy
