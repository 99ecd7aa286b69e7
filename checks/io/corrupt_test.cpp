// Damaged and foreign files: every one gives a CorruptFileError naming the file and an offset,
// never a crash, a huge allocation or wrong tensors.

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "gradlab/io/safetensors.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
namespace fs = std::filesystem;
using io_test::craft;
using io_test::temp_path;

namespace {

gl::StateDict sample_dict() {
  gl::StateDict sd;
  sd.insert("layer.weight", gl::arange(0, 12, 1, gl::dtype(gl::kFloat32)).reshape({3, 4}) / 7.0);
  sd.insert("layer.bias", gl::tensor({0.5, -0.5, 0.25}, gl::dtype(gl::kFloat64)));
  sd.insert("steps", gl::tensor({int64_t{3}}));
  sd.insert("mask", gl::tensor({true, false}));
  sd.metadata["epoch"] = "4";
  return sd;
}

// Loads `bytes` from a file; returns the error (empty when it loaded).
std::string load_error(const std::string& bytes, const std::string& name = "case.safetensors",
                       uint64_t* offset = nullptr) {
  const auto path = temp_path(name);
  io_test::write_bytes(path, bytes);
  try {
    io::load_safetensors(path);
  } catch (const io::CorruptFileError& e) {
    EXPECT_EQ(e.path(), path);
    if (offset) *offset = e.offset();
    const std::string w = e.what();
    EXPECT_NE(w.find(path.string()), std::string::npos) << "names the file: " << w;
    EXPECT_NE(w.find("offset"), std::string::npos) << "names the offset: " << w;
    return w;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a CorruptFileError: " << e.what();
    return e.what();
  }
  return "";
}

// Same, from memory (fast: for the tests that try thousands of variants).
bool memory_loads(const std::string& bytes) {
  try {
    io::from_safetensors_bytes(bytes);
    return true;
  } catch (const io::CorruptFileError&) {
    return false;
  }
}

const std::string kF32x2 = std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // [1, 2]

}  // namespace

TEST(CorruptFile, TruncatedAtEveryOffset) {
  const std::string good = io::to_safetensors_bytes(sample_dict());
  ASSERT_EQ(load_error(good), "");
  int errors = 0;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const std::string err = load_error(good.substr(0, cut), "cut.safetensors");
    EXPECT_NE(err, "") << "a file cut to " << cut << " bytes loaded";
    errors += !err.empty();
  }
  EXPECT_EQ(errors, static_cast<int>(good.size()));
  // Cut inside the data: the message says the file is truncated.
  EXPECT_NE(load_error(good.substr(0, good.size() - 3)).find("truncated"), std::string::npos);
}

TEST(CorruptFile, EverySingleBitFlipIsDetected) {
  const std::string good = io::to_safetensors_bytes(sample_dict());
  int detected = 0, total = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ (1 << bit));
      ++total;
      const bool loaded = memory_loads(bad);
      EXPECT_FALSE(loaded) << "flip of bit " << bit << " at byte " << at << " went unnoticed";
      detected += !loaded;
    }
  }
  EXPECT_EQ(detected, total) << "flips in the length, header, padding and data are all caught";
}

TEST(CorruptFile, RandomMultiByteDamageIsDetected) {
  const std::string good = io::to_safetensors_bytes(sample_dict());
  std::mt19937_64 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    const int hits = 1 + static_cast<int>(rng() % 4);
    for (int h = 0; h < hits; ++h) bad[rng() % bad.size()] = static_cast<char>(rng());
    if (bad == good) continue;
    EXPECT_FALSE(memory_loads(bad)) << "trial " << trial;
  }
}

TEST(CorruptFile, HugeOrImpossibleHeaderLengths) {
  uint64_t off = 99;
  EXPECT_NE(load_error(craft("{}", "", UINT64_MAX - 1), "huge.safetensors", &off)
                .find("exceeds the limit"),
            std::string::npos);
  EXPECT_EQ(off, 0u);
  EXPECT_NE(load_error(craft("{}", "", 50'000'000)).find("past the end"), std::string::npos);
  EXPECT_NE(load_error(craft("{}", "", 1)).find("too small"), std::string::npos);
  EXPECT_NE(load_error(std::string("\x02\x00\x00", 3)).find("too short"), std::string::npos);
  EXPECT_NE(load_error("").find("too short"), std::string::npos);
}

TEST(CorruptFile, BadJson) {
  uint64_t off = 0;
  EXPECT_NE(load_error(craft(R"({"a": {"dtype": "F32", )", ""), "json.safetensors", &off)
                .find("not valid JSON"),
            std::string::npos);
  EXPECT_GT(off, 8u) << "the offset points into the header";
  EXPECT_NE(load_error(craft("[1, 2]    ", "")).find("does not start with '{'"), std::string::npos);
  EXPECT_NE(load_error(craft("{} trailing", "")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(load_error(craft(R"({"a": 1})", "")).find("must be an object"), std::string::npos);
  EXPECT_NE(load_error(craft(R"({"__metadata__": {"k": 1}})", "")).find("must be a string"),
            std::string::npos);
  EXPECT_NE(load_error(craft(R"({"__metadata__": []})", "")).find("object of strings"),
            std::string::npos);
  // Duplicate keys would shadow each other.
  EXPECT_NE(
      load_error(
          craft(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
              kF32x2))
          .find("duplicate key 'a'"),
      std::string::npos);
  EXPECT_NE(
      load_error(
          craft(R"({"a":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,8]}})", kF32x2))
          .find("duplicate"),
      std::string::npos);
  // Deep nesting does not overflow the stack.
  EXPECT_NE(load_error(craft(std::string(100000, '[') + std::string(100000, ']'), "")), "");
  EXPECT_NE(
      load_error(craft("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", "")),
      "");
}

TEST(CorruptFile, BadEntries) {
  auto entry = [](const std::string& body) { return craft(R"({"t": )" + body + "}", kF32x2); };
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[2]})"))
                .find("needs dtype, shape and data_offsets"),
            std::string::npos);
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})"))
                .find("unknown field"),
            std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"Q7","shape":[2],"data_offsets":[0,8]})")).find("unknown dtype"),
      std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"U64","shape":[1],"data_offsets":[0,8]})")).find("cannot hold"),
      std::string::npos);
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"))
                .find("non-negative integer"),
            std::string::npos);
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"))
                .find("non-negative integer"),
            std::string::npos);
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"))
                .find("must be an array"),
            std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})")).find("[begin, end]"),
      std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})")).find("end before"),
      std::string::npos);
  // shape x dtype size must equal the byte range.
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"))
                .find("does not match"),
            std::string::npos);
  EXPECT_NE(load_error(entry(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})"))
                .find("does not match"),
            std::string::npos);
  // A shape whose element count overflows 64 bits, and one whose bytes overflow: no allocation.
  EXPECT_NE(load_error(
                entry(R"({"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})"))
                .find("64 bits"),
            std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]})"))
          .find("does not match"),
      std::string::npos);
  EXPECT_NE(
      load_error(entry(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]})")),
      "");
  EXPECT_NE(load_error(entry(R"({"dtype":"F32","shape":[1e30],"data_offsets":[0,8]})")), "");
  // A bool that is neither 0 nor 1.
  uint64_t off = 0;
  EXPECT_NE(load_error(craft(R"({"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                             std::string("\x01\x02", 2)),
                       "bool.safetensors", &off)
                .find("holds the byte 2"),
            std::string::npos);
}

TEST(CorruptFile, OverlapsHolesAndBytesOutsideTheTensors) {
  const std::string four = std::string(16, '\0');
  uint64_t off = 0;
  EXPECT_NE(
      load_error(
          craft(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
              std::string(12, '\0')),
          "overlap.safetensors", &off)
          .find("overlaps 'a'"),
      std::string::npos);
  EXPECT_NE(
      load_error(
          craft(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
              std::string(8, '\0')))
          .find("overlaps"),
      std::string::npos);
  std::string hole = load_error(
      craft(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
          std::string(20, '\0')),
      "hole.safetensors", &off);
  EXPECT_NE(hole.find("hole of 4 bytes"), std::string::npos) << hole;
  EXPECT_NE(load_error(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four))
                .find("belong to no tensor"),
            std::string::npos);
  EXPECT_NE(load_error(craft(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kF32x2))
                .find("truncated"),
            std::string::npos);
  EXPECT_NE(load_error(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", kF32x2))
                .find("hole"),
            std::string::npos);
  // Zero-size tensors share an offset with their neighbours without overlapping.
  EXPECT_EQ(
      load_error(craft(
          R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"I64","shape":[0,5],"data_offsets":[0,0]}})",
          kF32x2)),
      "");
}

TEST(CorruptFile, ForeignFiles) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01", 20);
  const std::string zip =
      std::string("PK\x03\x04\x14\x00\x00\x00\x08\x00", 10) + std::string(100, 'z');
  const std::string npy = std::string(
      "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 64);
  const std::string text = "name,value\nlr,0.1\n";
  const std::string json = R"({"dtype": "F32"})";
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"png", png}, {"zip", zip}, {"npy", npy}, {"text", text}, {"json", json}}) {
    const std::string err = load_error(bytes, "foreign." + name);
    EXPECT_NE(err, "") << name;
  }
  // A directory is not a file.
  EXPECT_THROW(io::load_safetensors(io_test::temp_dir()), gl::IOError);
}

TEST(CorruptFile, ChecksumProblems) {
  // A NUL in the header would end nlohmann's parse early and hide what follows.
  EXPECT_NE(load_error(craft(std::string("{}\0junk", 7), "")).find("NUL"), std::string::npos);
  // The checksum under a damaged key is recognized by its value.
  EXPECT_NE(
      load_error(craft(R"({"__metadata__":{"gradlab.chfcksum":"fnv1a64:0123456789abcdef"}})", ""))
          .find("is damaged"),
      std::string::npos);
  gl::StateDict sd = sample_dict();
  std::string bytes = io::to_safetensors_bytes(sd);
  // A malformed checksum string.
  const auto at = bytes.find("fnv1a64:");
  ASSERT_NE(at, std::string::npos);
  std::string bad = bytes;
  bad[at + 8] = 'g';
  EXPECT_NE(load_error(bad).find("gradlab.checksum"), std::string::npos);
  // The same tensors with a shape changed consistently ([3, 4] -> [4, 3]): only the checksum
  // can tell, and it does.
  std::string swapped = bytes;
  const auto s = swapped.find("[3,4]");
  ASSERT_NE(s, std::string::npos);
  swapped.replace(s, 5, "[4,3]");
  EXPECT_NE(load_error(swapped).find("checksum mismatch"), std::string::npos);
}
