#include "gradlab/io/checkpoint_format.hpp"

#include <charconv>

namespace gradlab::io::checkpoint {

namespace {

constexpr uint64_t kHeaderOffset = 8;  // the JSON header starts after its 8-byte length

template <class T>
T parse_int(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  if (it == meta.end()) throw FormatError("it has no " + key, kHeaderOffset);
  T v{};
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    throw FormatError(
        key + " is not an integer; expected an integer, got '" + s.substr(0, 64) + "'",
        kHeaderOffset);
  return v;
}

}  // namespace

Layout parse(const std::vector<std::string>& tensor_names,
             const std::map<std::string, std::string>& metadata) {
  auto fmt = metadata.find(kFormatKey);
  if (fmt == metadata.end() || fmt->second != kFormat)
    throw FormatError(std::string("it is not a gradlab checkpoint; expected ") + kFormatKey +
                          " = " + kFormat + ", got " +
                          (fmt == metadata.end() ? "no such key" : "'" + fmt->second + "'") +
                          "; hint: a plain state dict loads with gradlab::load or "
                          "io::load_safetensors",
                      kHeaderOffset);
  Layout l;
  for (const std::string& name : tensor_names) {
    const auto slash = name.find('/');
    const std::string p = slash == std::string::npos ? "" : name.substr(0, slash);
    if (p != "model" && p != "optimizer" && p != "scheduler" && p != "scaler")
      throw FormatError(
          "tensor '" + name + "' belongs to no part; expected model/, optimizer/, scheduler/ or scaler/",
          kHeaderOffset);
    l.tensors.emplace_back(p, name.substr(slash + 1));
  }
  l.epoch = parse_int<int64_t>(metadata, "gradlab.epoch");
  l.step = parse_int<int64_t>(metadata, "gradlab.step");
  if (metadata.count("gradlab.loader.seed"))
    l.loader = Loader{parse_int<uint64_t>(metadata, "gradlab.loader.seed"),
                      parse_int<uint64_t>(metadata, "gradlab.loader.epoch"),
                      parse_int<uint64_t>(metadata, "gradlab.loader.position")};
  for (const auto& [k, v] : metadata) {
    if (k.starts_with("gradlab.rng."))
      l.rng[k.substr(12)] = v;
    else if (k.starts_with("user."))
      l.user[k.substr(5)] = v;
    else
      for (const char* p : kParts) {
        const std::string pre = "gradlab." + std::string(p) + ".meta.";
        if (k.starts_with(pre)) l.part_meta[p][k.substr(pre.size())] = v;
      }
  }
  return l;
}

}  // namespace gradlab::io::checkpoint
