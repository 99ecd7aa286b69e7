#include "gradlab/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/safetensors_format.hpp"

namespace gradlab::io {

static_assert(std::endian::native == std::endian::little,
              "gradlab's file formats store little-endian data and this port reads it directly");

namespace st = safetensors;

namespace {

// ---- dtypes --------------------------------------------------------------------------------

std::string st_dtype(ScalarType t) {
  switch (t) {
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
    case kInt64:
      return "I64";
    case kBool:
      return "BOOL";
    case kFloat16:
      return "F16";
    case kBFloat16:
      return "BF16";
    case kUInt8:
      return "U8";
  }
  throw DTypeError(error_message("save_safetensors", "unknown dtype"));
}

// The gradlab dtype a safetensors dtype loads as; nullopt when gradlab cannot hold it.
std::optional<ScalarType> gl_dtype(const std::string& d) {
  if (d == "F32") return kFloat32;
  if (d == "F64") return kFloat64;
  if (d == "I64") return kInt64;
  if (d == "BOOL") return kBool;
  if (d == "F16") return kFloat16;
  if (d == "BF16") return kBFloat16;
  if (d == "I32" || d == "I16" || d == "I8" || d == "U8" || d == "U16" || d == "U32") return kInt64;
  return std::nullopt;
}

// Widens little-endian integers of `d` to int64.
void widen(const std::string& d, const unsigned char* src, int64_t* dst, size_t n) {
  auto run = [&]<class T>() {
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, src + i * sizeof(T), sizeof(T));
      dst[i] = static_cast<int64_t>(v);
    }
  };
  if (d == "I32")
    run.operator()<int32_t>();
  else if (d == "I16")
    run.operator()<int16_t>();
  else if (d == "I8")
    run.operator()<int8_t>();
  else if (d == "U8")
    run.operator()<uint8_t>();
  else if (d == "U16")
    run.operator()<uint16_t>();
  else if (d == "U32")
    run.operator()<uint32_t>();
}

// ---- where bytes come from -----------------------------------------------------------------

// Reads byte ranges of a file or a buffer; throws CorruptFileError past the end.
struct Source {
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  virtual void read(uint64_t offset, void* dst, size_t n) = 0;
  std::string name;
};

struct FileSource : Source {
  explicit FileSource(const std::filesystem::path& path) {
    name = path.string();
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    GRADLAB_CHECK(fd >= 0, IOError, "load", "cannot open '" + name + "': " + std::strerror(errno),
                  "a readable file", std::filesystem::exists(path) ? "no access" : "no such file");
    struct stat sb {};
    if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      ::close(fd);
      throw IOError(error_message("load", "'" + name + "' is not a regular file"));
    }
    bytes = static_cast<uint64_t>(sb.st_size);
  }
  ~FileSource() override { ::close(fd); }
  uint64_t size() const override { return bytes; }
  void read(uint64_t offset, void* dst, size_t n) override {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw CorruptFileError(
            error_message("load", "'" + name + "': cannot read " + std::to_string(n) +
                                      " bytes at offset " + std::to_string(offset) +
                                      (r == 0 ? ": the file got shorter" : "")),
            name, offset);
      p += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }
  int fd = -1;
  uint64_t bytes = 0;
};

struct MemorySource : Source {
  MemorySource(std::string_view b, std::string shown) : buf(b) { name = std::move(shown); }
  uint64_t size() const override { return buf.size(); }
  void read(uint64_t offset, void* dst, size_t n) override {
    if (offset > buf.size() || n > buf.size() - offset)
      throw CorruptFileError(error_message("load", name + ": read past the end"), name, offset);
    std::memcpy(dst, buf.data() + offset, n);
  }
  std::string_view buf;
};

[[noreturn]] void corrupt(const Source& src, const std::string& what, uint64_t offset,
                          const std::string& hint = {}) {
  throw CorruptFileError(
      error_message("load_safetensors",
                    "'" + src.name + "' is not a valid safetensors file: " + what +
                        " (at byte offset " + std::to_string(offset) + ")",
                    {}, {}, hint),
      src.name, offset);
}

StateDict load(Source& src, const LoadOptions& options) {
  const uint64_t size = src.size();
  st::Header h;
  try {
    unsigned char first8[8] = {};
    src.read(0, first8, std::min<uint64_t>(8, size));
    const uint64_t n = st::read_header_size(first8, size);
    std::string json(static_cast<size_t>(n), '\0');
    src.read(8, json.data(), json.size());
    h = st::parse_header(json, size);
  } catch (const st::FormatError& e) {
    corrupt(src, e.what(), e.offset());
  }

  std::optional<uint64_t> expected;
  if (auto it = h.metadata.find(st::kChecksumKey); it != h.metadata.end()) {
    try {
      expected = st::parse_checksum(it->second, 8);
    } catch (const st::FormatError& e) {
      corrupt(src, e.what(), e.offset());
    }
  }
  if (options.require_checksum && !expected)
    corrupt(src, std::string("no ") + st::kChecksumKey + " in its metadata", 8,
            "it was not written by gradlab::save; load it with require_checksum = false");
  uint64_t digest = st::table_digest(h.entries, h.metadata);

  // Every entry is known to lie inside the file, so no allocation exceeds the file's size.
  std::map<const st::Entry*, Tensor> tensors;
  std::vector<unsigned char> scratch;
  for (const st::Entry* e : st::by_offset(h)) {
    const auto dt = gl_dtype(e->dtype);
    if (!dt)
      corrupt(src, "tensor '" + e->name + "' has dtype " + e->dtype + ", which gradlab cannot hold",
              8, "gradlab reads F32, F64, I64, BOOL, F16, BF16 and integer types up to 32 bits");
    const size_t nbytes = static_cast<size_t>(e->end - e->begin);
    const uint64_t at = h.data_start + e->begin;
    Tensor t = make_tensor(Shape(e->shape.begin(), e->shape.end()), *dt);
    const bool direct = st_dtype(*dt) == e->dtype;
    unsigned char* dst = reinterpret_cast<unsigned char*>(t.impl()->data());
    if (!direct) {
      scratch.resize(nbytes);
      dst = scratch.data();
    }
    if (nbytes > 0) src.read(at, dst, nbytes);
    digest = st::fnv1a64(dst, nbytes, digest);
    if (*dt == kBool) {
      const size_t bad = st::first_bad_bool(dst, nbytes);
      if (bad < nbytes)
        corrupt(src,
                "tensor '" + e->name + "' is BOOL but holds the byte " + std::to_string(dst[bad]),
                at + bad);
    }
    if (!direct) widen(e->dtype, dst, t.data_ptr<int64_t>(), static_cast<size_t>(t.numel()));
    tensors[e] = t;
  }
  if (expected && options.verify_checksum && *expected != digest)
    corrupt(src,
            "checksum mismatch: stored " + st::format_checksum(*expected) + ", computed " +
                st::format_checksum(digest) + " (the header or the data changed after saving)",
            h.data_start, "the file is corrupt; restore it from a backup or an older checkpoint");

  StateDict out;
  for (const auto& e : h.entries) out.insert(e.name, tensors.at(&e));
  out.metadata = h.metadata;
  out.metadata.erase(st::kChecksumKey);
  return out;
}

// The tensors of `dict` as safetensors entries (header in dict order, data ordered by element
// size, largest first, so every tensor is aligned), with their CPU contiguous values.
struct Prepared {
  std::vector<st::Entry> entries;
  std::vector<Tensor> values;      // parallel to entries
  std::vector<size_t> data_order;  // indices into entries, in file order
  std::string header;
};

Prepared prepare(const StateDict& dict, bool checksum) {
  Prepared p;
  NoGradGuard no_grad;
  for (const auto& [name, t] : dict) {
    GRADLAB_CHECK(t.defined(), ValueError, "save_safetensors", "tensor '" + name + "' is undefined",
                  "a tensor", "undefined");
    Tensor v = t.detach();
    if (!v.is_cpu()) v = v.to(Device());
    if (!v.is_contiguous()) {
      GRADLAB_CHECK(is_computable_float(v.dtype()) || v.dtype() == kInt64 || v.dtype() == kBool,
                    DTypeError, "save_safetensors",
                    "tensor '" + name + "' is a non-contiguous " + to_string(v.dtype()) + " view",
                    "a contiguous tensor", v.describe());
      v = v.contiguous();
    }
    st::Entry e;
    e.name = name;
    e.dtype = st_dtype(v.dtype());
    e.shape.assign(v.sizes().begin(), v.sizes().end());
    p.entries.push_back(std::move(e));
    p.values.push_back(v);
  }
  for (size_t i = 0; i < p.entries.size(); ++i) p.data_order.push_back(i);
  std::stable_sort(p.data_order.begin(), p.data_order.end(), [&](size_t a, size_t b) {
    return element_size(p.values[a].dtype()) > element_size(p.values[b].dtype());
  });
  uint64_t at = 0;
  for (size_t i : p.data_order) {
    const uint64_t n =
        static_cast<uint64_t>(p.values[i].numel()) * element_size(p.values[i].dtype());
    p.entries[i].begin = at;
    p.entries[i].end = at + n;
    at += n;
  }
  std::map<std::string, std::string> meta = dict.metadata;
  meta.erase(st::kChecksumKey);  // a dict loaded from a file: its old checksum is stale
  for (const auto& [k, v] : meta)
    GRADLAB_CHECK(!v.starts_with(st::kChecksumPrefix), ValueError, "save_safetensors",
                  "metadata '" + k + "' looks like a checksum",
                  "no value starting with \"" + std::string(st::kChecksumPrefix) + "\"",
                  "'" + v + "'",
                  "that prefix marks gradlab's own checksum; store the value under another form");
  if (checksum) {
    uint64_t h = st::table_digest(p.entries, meta);
    for (size_t i : p.data_order)
      h = st::fnv1a64(p.values[i].impl()->data(),
                      static_cast<size_t>(p.entries[i].end - p.entries[i].begin), h);
    meta[st::kChecksumKey] = st::format_checksum(h);
  }
  try {
    p.header = st::make_header(p.entries, meta);
  } catch (const st::FormatError& e) {
    throw ValueError(error_message("save_safetensors", e.what()));
  }
  return p;
}

template <class Sink>
void emit(const Prepared& p, Sink&& write) {
  unsigned char len[8];
  uint64_t n = p.header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  write(len, 8);
  write(p.header.data(), p.header.size());
  for (size_t i : p.data_order)
    write(p.values[i].impl()->data(), static_cast<size_t>(p.entries[i].end - p.entries[i].begin));
}

}  // namespace

void save_safetensors(const StateDict& dict, const std::filesystem::path& path,
                      const SaveOptions& options) {
  const Prepared p = prepare(dict, options.checksum);
  write_file_atomic(
      path, [&](FileWriter& w) { emit(p, [&](const void* d, size_t n) { w.write(d, n); }); },
      options.durable);
}

StateDict load_safetensors(const std::filesystem::path& path, const LoadOptions& options) {
  FileSource src(path);
  return load(src, options);
}

std::string to_safetensors_bytes(const StateDict& dict, bool checksum) {
  const Prepared p = prepare(dict, checksum);
  std::string out;
  emit(p, [&](const void* d, size_t n) { out.append(static_cast<const char*>(d), n); });
  return out;
}

StateDict from_safetensors_bytes(std::string_view bytes, const LoadOptions& options,
                                 const std::string& shown_name) {
  MemorySource src(bytes, shown_name);
  return load(src, options);
}

}  // namespace gradlab::io
