#include "gradlab/io/npy_format.hpp"

#include <cstring>

namespace gradlab::io::npy {

namespace {

const char kMagic[] = "\x93NUMPY";

// The value after 'key': in the header dict, as raw text up to the matching delimiter.
std::string field(const std::string& h, const std::string& key, uint64_t at) {
  const std::string k1 = "'" + key + "'";
  auto pos = h.find(k1);
  if (pos == std::string::npos) throw FormatError("the header has no " + k1, at);
  pos = h.find(':', pos + k1.size());
  if (pos == std::string::npos) throw FormatError("no ':' after " + k1, at);
  ++pos;
  while (pos < h.size() && h[pos] == ' ') ++pos;
  if (pos >= h.size()) throw FormatError("no value for " + k1, at);
  if (h[pos] == '(') {
    auto end = h.find(')', pos);
    if (end == std::string::npos) throw FormatError("unterminated shape tuple", at);
    return h.substr(pos, end - pos + 1);
  }
  if (h[pos] == '\'') {
    auto end = h.find('\'', pos + 1);
    if (end == std::string::npos) throw FormatError("unterminated string", at);
    return h.substr(pos + 1, end - pos - 1);
  }
  auto end = h.find_first_of(",}", pos);
  if (end == std::string::npos) throw FormatError("unterminated value", at);
  std::string v = h.substr(pos, end - pos);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

// "(2, 3)", "(3,)", "()": non-negative integers of at most 18 digits (no overflow).
std::vector<int64_t> parse_shape(const std::string& text, uint64_t at) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw FormatError("bad shape " + text, at);
  const std::string s = text.substr(1, text.size() - 2);
  std::vector<int64_t> shape;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i >= s.size()) break;
    size_t end = i;
    int64_t v = 0;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') {
      if (end - i == 18) throw FormatError("bad shape " + text + ": a size of 19 digits", at);
      v = v * 10 + (s[end++] - '0');
    }
    if (end == i) throw FormatError("bad shape " + text, at);
    shape.push_back(v);
    i = end;
  }
  return shape;
}

}  // namespace

Header parse(const unsigned char* file, size_t size) {
  if (size < 8 || std::memcmp(file, kMagic, 6) != 0)
    throw FormatError(
        size < 8 ? "the file ends early (truncated?)" : "no \\x93NUMPY magic (not a .npy file?)",
        size < 8 ? size : 0);
  const int major = file[6];
  uint64_t hlen = 0, hstart = 0;
  if (major == 1) {
    if (size < 10) throw FormatError("the file ends early (truncated?)", size);
    hlen = file[8] | (uint64_t{file[9]} << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw FormatError("the file ends early (truncated?)", size);
    hlen = file[8] | (uint64_t{file[9]} << 8) | (uint64_t{file[10]} << 16) |
           (uint64_t{file[11]} << 24);
    hstart = 12;
  } else {
    throw FormatError("unknown format version " + std::to_string(major), 6);
  }
  // NOTE: checked before the header is copied: a length read from the file never allocates
  // more than the file holds.
  if (hlen > size - hstart) throw FormatError("header length runs past the end of the file", 8);
  const std::string h(reinterpret_cast<const char*>(file) + hstart, static_cast<size_t>(hlen));

  Header r;
  r.descr = field(h, "descr", hstart);
  const std::string fortran = field(h, "fortran_order", hstart);
  const std::string shape_text = field(h, "shape", hstart);
  if (fortran != "True" && fortran != "False")
    throw FormatError("fortran_order is '" + fortran + "'", hstart);
  r.fortran = fortran == "True";
  r.shape = parse_shape(shape_text, hstart);
  const std::string& d = r.descr;
  if (d.size() < 3 || d.size() > 4 || d[2] < '0' || d[2] > '9' ||
      (d.size() == 4 && (d[3] < '0' || d[3] > '9')))
    throw FormatError("bad descr '" + d + "'", hstart);
  r.order = d[0];
  r.kind = d[1];
  r.width = std::stoi(d.substr(2));
  const int w = r.width;
  const bool known = (r.kind == 'f' && (w == 2 || w == 4 || w == 8)) || (r.kind == 'b' && w == 1) ||
                     (r.kind == 'i' && (w == 1 || w == 2 || w == 4 || w == 8)) ||
                     (r.kind == 'u' && (w == 1 || w == 2 || w == 4));
  if (!known) throw FormatError("unsupported descr '" + d + "'", hstart);
  if (r.order != '<' && r.order != '>' && r.order != '|' && r.order != '=')
    throw FormatError("bad byte order in descr '" + d + "'", hstart);

  // NOTE: the nonzero sizes too must multiply within int64: (0, 1e17, 1e17) holds no element,
  // but a tensor of that shape has a stride of 1e34.
  int64_t extent = 1;
  for (int64_t s : r.shape)
    if (__builtin_mul_overflow(r.numel, static_cast<uint64_t>(s), &r.numel) ||
        (s > 0 && __builtin_mul_overflow(extent, s, &extent)))
      throw FormatError("shape overflows", hstart);
  if (__builtin_mul_overflow(r.numel, static_cast<uint64_t>(w), &r.nbytes))
    throw FormatError("shape overflows", hstart);
  r.data_start = hstart + hlen;
  if (r.nbytes != size - r.data_start)
    throw FormatError("the shape " + shape_text + " needs " + std::to_string(r.nbytes) +
                          " data bytes, the file has " + std::to_string(size - r.data_start),
                      r.data_start);
  if (r.kind == 'b')
    for (uint64_t i = 0; i < r.nbytes; ++i)
      if (file[r.data_start + i] > 1)
        throw FormatError("a bool holds the byte " + std::to_string(file[r.data_start + i]),
                          r.data_start + i);
  return r;
}

}  // namespace gradlab::io::npy
