#pragma once
// NumPy's .npy format for single tensors (numpy.save / numpy.load), versions 1.0-3.0.
// Reads little- and big-endian <f4 <f8 <f2 <i8 |b1 and narrower integers (widened to int64),
// C or Fortran order; writes version 1.0, C order, little-endian.

#include <filesystem>

#include "gradlab/core/tensor.hpp"

namespace gradlab::io {

/// Writes `t` (its CPU, contiguous, detached values) crash-safely; bfloat16 has no npy type.
void save_npy(const Tensor& t, const std::filesystem::path& path);
/// Reads a .npy file; malformed or truncated files give CorruptFileError (file and offset).
Tensor load_npy(const std::filesystem::path& path);

}  // namespace gradlab::io
