#include "gradlab/io/npy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/atomic_file.hpp"
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

[[noreturn]] void corrupt(const std::filesystem::path& p, const std::string& what, uint64_t at) {
  throw CorruptFileError(
      error_message("load_npy", "'" + p.string() + "' is not a valid .npy file: " + what +
                                    " (at byte offset " + std::to_string(at) + ")"),
      p, at);
}

// The value after 'key': in the header dict, as raw text up to the matching delimiter.
std::string field(const std::string& h, const std::string& key, const std::filesystem::path& p,
                  uint64_t at) {
  const std::string k1 = "'" + key + "'";
  auto pos = h.find(k1);
  if (pos == std::string::npos) corrupt(p, "the header has no " + k1, at);
  pos = h.find(':', pos + k1.size());
  if (pos == std::string::npos) corrupt(p, "no ':' after " + k1, at);
  ++pos;
  while (pos < h.size() && h[pos] == ' ') ++pos;
  if (pos >= h.size()) corrupt(p, "no value for " + k1, at);
  if (h[pos] == '(') {
    auto end = h.find(')', pos);
    if (end == std::string::npos) corrupt(p, "unterminated shape tuple", at);
    return h.substr(pos, end - pos + 1);
  }
  if (h[pos] == '\'') {
    auto end = h.find('\'', pos + 1);
    if (end == std::string::npos) corrupt(p, "unterminated string", at);
    return h.substr(pos + 1, end - pos - 1);
  }
  auto end = h.find_first_of(",}", pos);
  if (end == std::string::npos) corrupt(p, "unterminated value", at);
  std::string v = h.substr(pos, end - pos);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
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
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  auto read = [&](uint64_t at, void* dst, size_t n) {
    if (at > size || n > size - at) corrupt(path, "the file ends early (truncated?)", size);
    in.seekg(static_cast<std::streamoff>(at));
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in) corrupt(path, "read error", at);
  };
  unsigned char pre[8];
  read(0, pre, 8);
  if (std::memcmp(pre, kMagic, 6) != 0) corrupt(path, "no \\x93NUMPY magic (not a .npy file?)", 0);
  const int major = pre[6];
  uint64_t hlen = 0, hstart = 0;
  if (major == 1) {
    unsigned char l[2];
    read(8, l, 2);
    hlen = l[0] | (static_cast<uint64_t>(l[1]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    read(8, l, 4);
    hlen = l[0] | (uint64_t{l[1]} << 8) | (uint64_t{l[2]} << 16) | (uint64_t{l[3]} << 24);
    hstart = 12;
  } else {
    corrupt(path, "unknown format version " + std::to_string(major), 6);
  }
  if (hlen > size - std::min(size, hstart))
    corrupt(path, "header length runs past the end of the file", 8);
  std::string h(static_cast<size_t>(hlen), '\0');
  read(hstart, h.data(), h.size());

  const std::string d = field(h, "descr", path, hstart);
  const std::string fortran = field(h, "fortran_order", path, hstart);
  const std::string shape_text = field(h, "shape", path, hstart);
  if (fortran != "True" && fortran != "False")
    corrupt(path, "fortran_order is '" + fortran + "'", hstart);
  Shape shape;
  {
    // "(2, 3)", "(3,)", "()"
    std::string s = shape_text.substr(1, shape_text.size() - 2);
    size_t at = 0;
    while (at < s.size()) {
      while (at < s.size() && (s[at] == ' ' || s[at] == ',')) ++at;
      if (at >= s.size()) break;
      size_t end = at;
      while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
      if (end == at || end - at > 18) corrupt(path, "bad shape " + shape_text, hstart);
      shape.push_back(std::stoll(s.substr(at, end - at)));
      at = end;
    }
  }
  if (d.size() < 3) corrupt(path, "bad descr '" + d + "'", hstart);
  const char order = d[0], kind = d[1];
  const int width = std::atoi(d.c_str() + 2);
  ScalarType dt;
  if (kind == 'f' && width == 4)
    dt = kFloat32;
  else if (kind == 'f' && width == 8)
    dt = kFloat64;
  else if (kind == 'f' && width == 2)
    dt = kFloat16;
  else if (kind == 'b' && width == 1)
    dt = kBool;
  else if ((kind == 'i' && (width == 1 || width == 2 || width == 4 || width == 8)) ||
           (kind == 'u' && (width == 1 || width == 2 || width == 4)))
    dt = kInt64;
  else
    corrupt(path, "unsupported descr '" + d + "'", hstart);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    corrupt(path, "bad byte order in descr '" + d + "'", hstart);

  uint64_t numel = 1;
  for (int64_t s : shape)
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(s), &numel))
      corrupt(path, "shape overflows", hstart);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(width), &nbytes))
    corrupt(path, "shape overflows", hstart);
  const uint64_t data_at = hstart + hlen;
  if (nbytes != size - data_at)
    corrupt(path,
            "the shape " + shape_text + " needs " + std::to_string(nbytes) +
                " data bytes, the file has " + std::to_string(size - data_at),
            data_at);

  std::vector<unsigned char> raw(static_cast<size_t>(nbytes));
  read(data_at, raw.data(), raw.size());
  if (order == '>' && width > 1)
    for (size_t i = 0; i < raw.size(); i += static_cast<size_t>(width))
      std::reverse(raw.begin() + static_cast<std::ptrdiff_t>(i),
                   raw.begin() + static_cast<std::ptrdiff_t>(i) + width);
  // Fortran order: the bytes are the C-order array of the reversed shape, transposed.
  Shape stored = shape;
  if (fortran == "True") std::reverse(stored.begin(), stored.end());
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
    if (dt == kBool)
      for (size_t i = 0; i < raw.size(); ++i)
        if (raw[i] > 1)
          corrupt(path, "a bool holds the byte " + std::to_string(raw[i]), data_at + i);
    if (!raw.empty()) std::memcpy(t.impl()->data(), raw.data(), raw.size());
  }
  if (fortran == "True" && shape.size() > 1) {
    Dims rev(shape.size());
    std::iota(rev.rbegin(), rev.rend(), 0);
    NoGradGuard no_grad;
    t = t.permute(rev).contiguous();
  }
  return t;
}

}  // namespace gradlab::io
