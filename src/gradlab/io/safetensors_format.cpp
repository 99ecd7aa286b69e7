#include "gradlab/io/safetensors_format.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

namespace gradlab::io::safetensors {

namespace {

using Json = nlohmann::ordered_json;

// File offset of the first mention of `name` in the header (approximate, for messages).
uint64_t where_is(std::string_view json, const std::string& name) {
  auto p = json.find("\"" + name + "\"");
  return p == std::string_view::npos ? 8 : 8 + p;
}

std::string show(const std::string& name) {
  std::string s;
  for (char c : name.substr(0, 80)) s += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  return "'" + s + (name.size() > 80 ? "...'" : "'");
}

uint64_t get_u64(const Json& v, const std::string& what, uint64_t at) {
  if (!v.is_number_unsigned())
    throw FormatError(what + " must be a non-negative integer, got " + v.dump().substr(0, 40), at);
  return v.get<uint64_t>();
}

}  // namespace

size_t dtype_size(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

uint64_t read_header_size(const unsigned char* b, uint64_t file_size) {
  if (file_size < 8)
    throw FormatError("file too short for a safetensors header (" + std::to_string(file_size) +
                          " bytes; the length field alone takes 8)",
                      file_size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  if (n > kMaxHeaderSize)
    throw FormatError("header length " + std::to_string(n) + " exceeds the limit of " +
                          std::to_string(kMaxHeaderSize) + " bytes (not a safetensors file?)",
                      0);
  if (n > file_size - 8)
    throw FormatError("header length " + std::to_string(n) + " runs past the end of the file (" +
                          std::to_string(file_size) + " bytes): truncated?",
                      0);
  if (n < 2) throw FormatError("header length " + std::to_string(n) + " is too small for JSON", 0);
  return n;
}

Header parse_header(std::string_view json, uint64_t file_size) {
  Header h;
  h.header_size = json.size();
  h.data_start = 8 + h.header_size;
  if (h.data_start > file_size) throw FormatError("header runs past the end of the file", 0);
  h.data_size = file_size - h.data_start;
  if (json.empty() || json.front() != '{')
    throw FormatError("the header does not start with '{' (not a safetensors file?)", 8);
  // NOTE: nlohmann-json stops at a NUL byte and ignores the rest; JSON text never holds one.
  if (auto nul = json.find('\0'); nul != std::string_view::npos)
    throw FormatError("the header holds a NUL byte", 8 + nul);

  // Duplicate keys would silently shadow each other: refuse them at every depth.
  std::vector<std::set<std::string>> seen;
  auto callback = [&](int, nlohmann::detail::parse_event_t ev, Json& parsed) {
    using E = nlohmann::detail::parse_event_t;
    if (ev == E::object_start)
      seen.emplace_back();
    else if (ev == E::object_end && !seen.empty())
      seen.pop_back();
    else if (ev == E::key && !seen.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!seen.back().insert(k).second)
        throw FormatError("duplicate key " + show(k) + " in the header", where_is(json, k));
    }
    return true;
  };
  Json root;
  try {
    root = Json::parse(json.begin(), json.end(), callback);
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(std::string("the header is not valid JSON: ") + e.what(),
                      8 + (e.byte > 0 ? e.byte - 1 : 0));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("the header is not valid JSON: ") + e.what(), 8);
  }
  if (!root.is_object()) throw FormatError("the header is not a JSON object", 8);

  for (auto& [name, v] : root.items()) {
    const uint64_t at = where_is(json, name);
    if (name == "__metadata__") {
      if (!v.is_object()) throw FormatError("__metadata__ must be an object of strings", at);
      for (auto& [k, s] : v.items()) {
        if (!s.is_string())
          throw FormatError("__metadata__ value of " + show(k) + " must be a string",
                            where_is(json, k));
        h.metadata[k] = s.get<std::string>();
        // A checksum under another key: the key itself was damaged (else the file would pass
        // as one without a checksum).
        if (k != kChecksumKey && h.metadata[k].starts_with(kChecksumPrefix))
          throw FormatError("__metadata__ key " + show(k) + " holds a checksum: the key " +
                                show(kChecksumKey) + " is damaged",
                            where_is(json, k));
      }
      continue;
    }
    if (!v.is_object()) throw FormatError("entry " + show(name) + " must be an object", at);
    for (auto& [field, fv] : v.items()) {
      (void)fv;
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        throw FormatError("entry " + show(name) + " has an unknown field " + show(field), at);
    }
    if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw FormatError("entry " + show(name) + " needs dtype, shape and data_offsets", at);
    Entry e;
    e.name = name;
    const Json& dt = v["dtype"];
    if (!dt.is_string()) throw FormatError("dtype of " + show(name) + " must be a string", at);
    e.dtype = dt.get<std::string>();
    const size_t esize = dtype_size(e.dtype);
    if (esize == 0) throw FormatError("unknown dtype " + show(e.dtype) + " for " + show(name), at);
    const Json& shape = v["shape"];
    if (!shape.is_array()) throw FormatError("shape of " + show(name) + " must be an array", at);
    uint64_t numel = 1;
    for (const Json& d : shape) {
      const uint64_t s = get_u64(d, "each dim of the shape of " + show(name), at);
      if (s > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, s, &numel))
        throw FormatError("the shape of " + show(name) + " has more elements than fit in 64 bits",
                          at);
      e.shape.push_back(static_cast<int64_t>(s));
    }
    const Json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      throw FormatError("data_offsets of " + show(name) + " must be [begin, end]", at);
    e.begin = get_u64(off[0], "data_offsets of " + show(name), at);
    e.end = get_u64(off[1], "data_offsets of " + show(name), at);
    if (e.end < e.begin)
      throw FormatError("data_offsets of " + show(name) + " end before they begin", at);
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(esize), &nbytes) ||
        nbytes != e.end - e.begin)
      throw FormatError("entry " + show(name) + ": shape × dtype size (" + std::to_string(numel) +
                            " × " + std::to_string(esize) +
                            " bytes) does not match its data_offsets [" + std::to_string(e.begin) +
                            ", " + std::to_string(e.end) + ")",
                        at);
    h.entries.push_back(std::move(e));
  }

  // The entries must tile the data section: sorted by offset, each starts where the last ended.
  uint64_t expect = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : by_offset(h)) {
    if (e->begin < expect)
      throw FormatError("the data of " + show(e->name) + " [" + std::to_string(e->begin) + ", " +
                            std::to_string(e->end) + ") overlaps " + show(prev->name),
                        h.data_start + e->begin);
    if (e->begin > expect)
      throw FormatError("a hole of " + std::to_string(e->begin - expect) +
                            " bytes in the data before " + show(e->name),
                        h.data_start + expect);
    expect = e->end;
    prev = e;
  }
  if (expect != h.data_size) {
    if (expect > h.data_size)
      throw FormatError("the data section is " + std::to_string(h.data_size) +
                            " bytes but the header needs " + std::to_string(expect) +
                            ": the file is truncated",
                        file_size);
    throw FormatError(
        std::to_string(h.data_size - expect) + " bytes after the last tensor belong to no tensor",
        h.data_start + expect);
  }
  return h;
}

Header parse(const unsigned char* file, size_t size) {
  const uint64_t n = read_header_size(file, size);
  return parse_header(std::string_view(reinterpret_cast<const char*>(file) + 8, n), size);
}

std::vector<const Entry*> by_offset(const Header& header) {
  std::vector<const Entry*> order;
  for (const auto& e : header.entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  return order;
}

std::string make_header(const std::vector<Entry>& entries,
                        const std::map<std::string, std::string>& metadata) {
  Json root = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    root["__metadata__"] = meta;
  }
  for (const auto& e : entries) {
    if (e.name == "__metadata__" || root.contains(e.name))
      throw FormatError("tensor name " + show(e.name) + " is reserved or used twice", 0);
    root[e.name] = Json{{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  std::string text;
  try {
    text = root.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::type_error& e) {
    throw FormatError(
        std::string("a tensor name or metadata string is not valid UTF-8: ") + e.what(), 0);
  }
  // Pad with spaces so that the data section starts at a multiple of 8 (aligned tensors).
  while ((8 + text.size()) % 8 != 0) text += ' ';
  return text;
}

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t table_digest(const std::vector<Entry>& entries,
                      const std::map<std::string, std::string>& metadata) {
  // Names, dtypes, shapes and offsets in header order, then metadata in key order; each field
  // ends in a NUL so that no two different tables give the same byte stream.
  std::string s = "safetensors-table-v1";
  s += '\0';
  for (const auto& e : entries) {
    s += e.name + '\0' + e.dtype + '\0';
    for (int64_t d : e.shape) s += std::to_string(d) + ',';
    s += '\0' + std::to_string(e.begin) + ',' + std::to_string(e.end) + '\0';
  }
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) s += k + '\0' + v + '\0';
  return fnv1a64(s.data(), s.size());
}

std::string format_checksum(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

uint64_t parse_checksum(const std::string& s, uint64_t where) {
  const std::string prefix(kChecksumPrefix);
  if (s.size() != prefix.size() + 16 || s.compare(0, prefix.size(), prefix) != 0)
    throw FormatError("malformed " + std::string(kChecksumKey) + " " + show(s) +
                          " (expected fnv1a64:<16 hex digits>)",
                      where);
  uint64_t h = 0;
  for (size_t i = prefix.size(); i < s.size(); ++i) {
    const char c = s[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) throw FormatError("malformed " + std::string(kChecksumKey) + " " + show(s), where);
    h = (h << 4) | static_cast<uint64_t>(d);
  }
  return h;
}

size_t first_bad_bool(const unsigned char* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (bytes[i] > 1) return i;
  return n;
}

}  // namespace gradlab::io::safetensors
