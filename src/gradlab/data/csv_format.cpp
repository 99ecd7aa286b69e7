#include "gradlab/data/csv_format.hpp"

#include <zlib.h>

#include <algorithm>
#include <charconv>

namespace gradlab::data::csv {

std::string decompress(const unsigned char* data, size_t size, uint64_t max_output) {
  auto is_gzip = [&](size_t at) {
    return size - at >= 2 && data[at] == 0x1f && data[at + 1] == 0x8b;
  };
  if (!is_gzip(0)) {
    if (size > max_output) throw FormatError("the text is larger than allowed", max_output);
    return std::string(reinterpret_cast<const char*>(data), size);
  }
  z_stream z{};
  // 15 + 16: a gzip wrapper (not zlib, not raw deflate), windows up to 32 KiB.
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw FormatError("zlib cannot start", 0);
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::string text;
  char buf[1 << 16];
  size_t at = 0;  // start of the member being inflated
  for (;;) {
    z.next_in = const_cast<unsigned char*>(data + at);  // NOTE: zlib's API is not const
    z.avail_in = static_cast<uInt>(std::min<size_t>(size - at, 1u << 30));
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (z.avail_in == 0) {  // more than 1 GiB of input: the next slice
        const size_t used = static_cast<size_t>(z.next_in - data);
        z.avail_in = static_cast<uInt>(std::min<size_t>(size - used, 1u << 30));
      }
      z.next_out = reinterpret_cast<unsigned char*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      const uint64_t offset = static_cast<uint64_t>(z.next_in - data);
      if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
        throw FormatError(std::string("the compressed stream is corrupt: ") +
                              (z.msg ? z.msg : "zlib error " + std::to_string(rc)),
                          offset);
      const size_t n = sizeof buf - z.avail_out;
      if (text.size() + n > max_output)
        throw FormatError("the text inflates past " + std::to_string(max_output) +
                              " bytes (more than any gzip file of this size holds)",
                          offset);
      text.append(buf, n);
      if (rc == Z_BUF_ERROR || (rc == Z_OK && n == 0 && z.avail_in == 0))
        throw FormatError("the compressed stream is truncated", size);
    }
    at = static_cast<size_t>(z.next_in - data);
    if (at == size) return text;
    // Another gzip member may follow (what `cat a.gz b.gz` makes); anything else is damage.
    if (!is_gzip(at)) throw FormatError("unexpected bytes after the end of the gzip stream", at);
    if (inflateReset(&z) != Z_OK) throw FormatError("zlib cannot restart", at);
  }
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line, char delim) {
  std::vector<std::string_view> out;
  size_t at = 0;
  for (;;) {
    const size_t p = line.find(delim, at);
    out.push_back(
        trim(line.substr(at, p == std::string_view::npos ? std::string_view::npos : p - at)));
    if (p == std::string_view::npos) break;
    at = p + 1;
  }
  return out;
}

}  // namespace

Table parse(std::string_view text, char delimiter, bool header) {
  Table t;
  size_t line_no = 0, at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    const auto fields = split(line, delimiter);
    if (header && t.columns.empty()) {  // the first line that is not blank
      for (auto f : fields) t.columns.emplace_back(f);
      t.cols = fields.size();
      continue;
    }
    if (t.cols == 0) t.cols = fields.size();
    if (fields.size() != t.cols)
      throw ParseError("wrong number of fields", line_no, 0, std::to_string(t.cols),
                       std::to_string(fields.size()));
    for (size_t c = 0; c < fields.size(); ++c) {
      double v = 0;
      const auto f = fields[c];
      auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (ec != std::errc() || end != f.data() + f.size() || f.empty())
        throw ParseError("not a number", line_no, c + 1, "a number",
                         "'" + std::string(f.substr(0, 64)) + (f.size() > 64 ? "...'" : "'"));
      t.values.push_back(v);
    }
    ++t.rows;
  }
  return t;
}

}  // namespace gradlab::data::csv
