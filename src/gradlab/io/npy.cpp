#include "gradlab/io/npy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/npy_format.hpp"
#include "gradlab/io/safetensors.hpp"

namespace gradlab::io {

namespace {

const char kMagic[] = "\x93NUMPY";

std::string descr(ScalarType t) {
  switch (t) {
    case kFloat32:
      return "<f4";
    case kFloat64:
      return "<f8";
    case kInt64:
      return "<i8";
    case kBool:
      return "|b1";
    case kFloat16:
      return "<f2";
    default:
      throw DTypeError(error_message("save_npy", "dtype " + to_string(t) + " has no .npy type",
                                     "float32, float64, int64, bool or float16", to_string(t),
                                     "convert it first, e.g. t.to(kFloat32)"));
  }
}

}  // namespace

void save_npy(const Tensor& t, const std::filesystem::path& path) {
  GRADLAB_CHECK(t.defined(), ValueError, "save_npy", "tensor is undefined", "a tensor",
                "undefined");
  NoGradGuard no_grad;
  Tensor v = t.detach();
  if (!v.is_cpu()) v = v.to(Device());
  const std::string d = descr(v.dtype());
  if (!v.is_contiguous()) v = v.contiguous();
  std::string shape = "(";
  for (size_t i = 0; i < v.sizes().size(); ++i) shape += std::to_string(v.sizes()[i]) + ", ";
  if (v.sizes().size() > 1)
    shape.resize(shape.size() - 2);
  else if (v.sizes().size() == 1)
    shape.resize(shape.size() - 1);  // "(3,)"
  shape += ")";
  std::string header = "{'descr': '" + d + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0: 10-byte preamble; pad with spaces + '\n' so the data starts at a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  GRADLAB_CHECK(header.size() <= 65535, ValueError, "save_npy", "shape too long for npy 1.0",
                "a header <= 65535 bytes", std::to_string(header.size()));
  const size_t nbytes = static_cast<size_t>(v.numel()) * element_size(v.dtype());
  write_file_atomic(path, [&](FileWriter& w) {
    w.write(kMagic, 6);
    const unsigned char ver[4] = {1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
    w.write(ver, 4);
    w.write(header.data(), header.size());
    w.write(v.impl()->data(), nbytes);
  });
}

Tensor load_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  GRADLAB_CHECK(in.good(), IOError, "load_npy", "cannot open '" + path.string() + "'",
                "a readable file", std::filesystem::exists(path) ? "no access" : "no such file");
  // The whole file (its size bounds every allocation), validated by the format layer.
  std::vector<unsigned char> file{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  GRADLAB_CHECK(!in.bad(), IOError, "load_npy", "cannot read '" + path.string() + "'");
  npy::Header hd;
  try {
    hd = npy::parse(file.data(), file.size());
  } catch (const FormatError& e) {
    throw CorruptFileError(
        error_message("load_npy", "'" + path.string() + "' is not a valid .npy file: " + e.what() +
                                      " (at byte offset " + std::to_string(e.offset()) + ")"),
        path, e.offset());
  }
  const char order = hd.order, kind = hd.kind;
  const int width = hd.width;
  const uint64_t numel = hd.numel;
  const Shape shape(hd.shape.begin(), hd.shape.end());
  const ScalarType dt = kind == 'f'   ? (width == 4   ? kFloat32
                                         : width == 8 ? kFloat64
                                                      : kFloat16)
                        : kind == 'b' ? kBool
                                      : kInt64;
  std::vector<unsigned char> raw(file.begin() + static_cast<std::ptrdiff_t>(hd.data_start),
                                 file.end());
  if (order == '>' && width > 1)
    for (size_t i = 0; i < raw.size(); i += static_cast<size_t>(width))
      std::reverse(raw.begin() + static_cast<std::ptrdiff_t>(i),
                   raw.begin() + static_cast<std::ptrdiff_t>(i) + width);
  // Fortran order: the bytes are the C-order array of the reversed shape, transposed.
  Shape stored = shape;
  if (hd.fortran) std::reverse(stored.begin(), stored.end());
  Tensor t = make_tensor(stored, dt);
  if (dt == kInt64 && !(kind == 'i' && width == 8)) {
    int64_t* out = t.data_ptr<int64_t>();
    for (uint64_t i = 0; i < numel; ++i) {
      const unsigned char* p = raw.data() + i * static_cast<uint64_t>(width);
      int64_t v = 0;
      if (kind == 'i') {
        if (width == 1) {
          int8_t x;
          std::memcpy(&x, p, 1);
          v = x;
        } else if (width == 2) {
          int16_t x;
          std::memcpy(&x, p, 2);
          v = x;
        } else {
          int32_t x;
          std::memcpy(&x, p, 4);
          v = x;
        }
      } else {
        if (width == 1) {
          uint8_t x;
          std::memcpy(&x, p, 1);
          v = x;
        } else if (width == 2) {
          uint16_t x;
          std::memcpy(&x, p, 2);
          v = x;
        } else {
          uint32_t x;
          std::memcpy(&x, p, 4);
          v = x;
        }
      }
      out[i] = v;
    }
  } else {
    if (!raw.empty()) std::memcpy(t.impl()->data(), raw.data(), raw.size());
  }
  if (hd.fortran && shape.size() > 1) {
    Dims rev(shape.size());
    std::iota(rev.rbegin(), rev.rend(), 0);
    NoGradGuard no_grad;
    t = t.permute(rev).contiguous();
  }
  return t;
}

}  // namespace gradlab::io
