// safetensors round trips: every dtype, zero-size and scalar tensors, views, order, metadata,
// the checksum, and files written by other tools (no checksum, narrower integer dtypes).

#include "gradlab/io/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/safetensors_format.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
using io_test::temp_path;

namespace {

// A float16 / bfloat16 tensor from raw 16-bit patterns (gradlab stores these types, no math).
gl::Tensor half_from_bits(const std::vector<uint16_t>& bits, gl::ScalarType t) {
  gl::Tensor x = gl::make_tensor({static_cast<int64_t>(bits.size())}, t);
  std::memcpy(x.impl()->data(), bits.data(), bits.size() * 2);
  return x;
}

std::vector<uint16_t> bits_of(const gl::Tensor& t) {
  std::vector<uint16_t> b(static_cast<size_t>(t.numel()));
  std::memcpy(b.data(), t.impl()->data(), b.size() * 2);
  return b;
}

gl::StateDict every_dtype() {
  gl::StateDict sd;
  sd.insert("f32", gl::tensor({{1.5, -2.25, 3.0}, {1e-30, 3.4e38, -0.0}}));
  sd.insert("f64", gl::tensor({1.0 / 3.0, -1e300, 5e-324}, gl::dtype(gl::kFloat64)));
  sd.insert("i64", gl::tensor({INT64_MIN, int64_t{0}, INT64_MAX}));
  sd.insert("bool", gl::tensor({true, false, true, true}));
  sd.insert("f16", half_from_bits({0x3c00, 0xc000, 0x7bff, 0x0001, 0x7e00}, gl::kFloat16));
  sd.insert("bf16", half_from_bits({0x3f80, 0xbf80, 0x7f7f, 0x0001}, gl::kBFloat16));
  sd.insert("scalar", gl::tensor(2.5));
  sd.insert("scalar_i64", gl::scalar_tensor(7, gl::dtype(gl::kInt64)));
  sd.insert("empty", gl::zeros({0}));
  sd.insert("empty_2d", gl::zeros({3, 0}, gl::dtype(gl::kInt64)));
  sd.insert("empty_bool", gl::zeros({0, 4}, gl::dtype(gl::kBool)));
  return sd;
}

void expect_same_dict(const gl::StateDict& a, const gl::StateDict& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [k, t] : a) {
    const gl::Tensor& u = b.at(k);
    EXPECT_EQ(t.dtype(), u.dtype()) << k;
    EXPECT_EQ(t.sizes(), u.sizes()) << k;
    if (t.dtype() == gl::kFloat16 || t.dtype() == gl::kBFloat16)
      EXPECT_EQ(bits_of(t), bits_of(u)) << k;
    else
      EXPECT_TRUE(gl::equal(t, u)) << k;  // bit-identical
  }
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeZeroSizeAndScalarTensors) {
  gl::StateDict sd = every_dtype();
  sd.metadata["note"] = "héllo \"quoted\"\n";
  sd.metadata["format"] = "pt";
  const auto path = temp_path("every.safetensors");
  io::save_safetensors(sd, path);
  gl::StateDict back = io::load_safetensors(path);
  expect_same_dict(sd, back);
  EXPECT_EQ(back.metadata, sd.metadata) << "metadata round-trips; the checksum key is not shown";
  EXPECT_EQ(back.at("scalar").dim(), 0);
  EXPECT_EQ(back.at("empty_2d").sizes(), (gl::Shape{3, 0}));
}

TEST(Safetensors, FileLayoutFollowsTheSpec) {
  gl::StateDict sd = every_dtype();
  const std::string bytes = io::to_safetensors_bytes(sd);
  const auto path = temp_path("layout.safetensors");
  io::save_safetensors(sd, path);
  EXPECT_EQ(io_test::read_bytes(path), bytes) << "the file holds exactly these bytes";
  auto h =
      io::safetensors::parse(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  EXPECT_EQ(h.data_start % 8, 0u) << "header padded so the data starts 8-aligned";
  ASSERT_EQ(h.entries.size(), sd.size());
  for (const auto& e : h.entries)
    EXPECT_EQ(e.begin % io::safetensors::dtype_size(e.dtype), 0u) << e.name << " is aligned";
  EXPECT_TRUE(h.metadata.count("gradlab.checksum"));
  EXPECT_EQ(h.entries[0].name, "f32") << "header lists tensors in the dict's order";
  EXPECT_EQ(bytes.substr(8, 1), "{");
}

TEST(Safetensors, ViewsGradAndOrderAreSavedAsValues) {
  gl::Tensor base = gl::arange(0, 12, 1, gl::dtype(gl::kFloat32)).reshape({3, 4});
  gl::Tensor w = gl::randn({4, 3}).requires_grad_();
  gl::StateDict sd;
  sd.insert("z.transposed", base.t());         // non-contiguous
  sd.insert("a.sliced", base.slice(1, 1, 3));  // non-contiguous
  sd.insert("m.param", w);
  const auto path = temp_path("views.safetensors");
  io::save_safetensors(sd, path);
  auto back = io::load_safetensors(path);
  EXPECT_EQ(back.keys(), (std::vector<std::string>{"z.transposed", "a.sliced", "m.param"}));
  EXPECT_TRUE(gl::equal(back.at("z.transposed"), base.t().contiguous()));
  EXPECT_TRUE(gl::equal(back.at("a.sliced"), base.slice(1, 1, 3).contiguous()));
  EXPECT_TRUE(gl::equal(back.at("m.param"), w.detach()));
  EXPECT_FALSE(back.at("m.param").requires_grad());
}

TEST(Safetensors, SavingALoadedDictRecomputesTheChecksum) {
  gl::StateDict sd;
  sd.insert("x", gl::ones({3}));
  const auto p1 = temp_path("c1.safetensors"), p2 = temp_path("c2.safetensors");
  io::save_safetensors(sd, p1);
  gl::StateDict back = io::load_safetensors(p1);
  back.insert("y", gl::zeros({2}));
  io::save_safetensors(back, p2);
  EXPECT_NO_THROW(io::load_safetensors(p2));
}

TEST(Safetensors, EmptyDictAndFilesWithoutChecksum) {
  const auto path = temp_path("empty.safetensors");
  io::save_safetensors(gl::StateDict(), path);
  EXPECT_EQ(io::load_safetensors(path).size(), 0u);

  gl::StateDict sd;
  sd.insert("x", gl::tensor({1.0, 2.0}));
  io_test::write_bytes(path, io::to_safetensors_bytes(sd, /*checksum=*/false));
  EXPECT_TRUE(gl::equal(io::load_safetensors(path).at("x"), sd.at("x")));
  io::LoadOptions strict;
  strict.require_checksum = true;
  EXPECT_THROW(io::load_safetensors(path, strict), io::CorruptFileError);
}

TEST(Safetensors, NarrowIntegersFromOtherToolsLoadAsInt64) {
  // I32 [-1, 2], U8 [255], I16 [-300], as PyTorch's safetensors would write them.
  std::string data;
  auto put = [&](const void* p, size_t n) { data.append(static_cast<const char*>(p), n); };
  int32_t a[2] = {-1, 2};
  int16_t c = -300;
  uint8_t b = 255;
  put(a, 8);
  put(&c, 2);
  put(&b, 1);
  const std::string header = R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
                             R"("c":{"dtype":"I16","shape":[],"data_offsets":[8,10]},)"
                             R"("b":{"dtype":"U8","shape":[1],"data_offsets":[10,11]}})";
  const auto path = temp_path("ints.safetensors");
  io_test::write_bytes(path, io_test::craft(header, data));
  auto sd = io::load_safetensors(path);
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"a", "c", "b"}));
  EXPECT_EQ(sd.at("a").dtype(), gl::kInt64);
  EXPECT_EQ(sd.at("a").to_vector<int64_t>(), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(sd.at("c").item<int64_t>(), -300);
  EXPECT_EQ(sd.at("b").to_vector<int64_t>(), (std::vector<int64_t>{255}));
}

TEST(Safetensors, BytesAndFileApisAgreeAndErrorsNameTheSource) {
  gl::StateDict sd;
  sd.insert("w", gl::randn({5, 5}));
  std::string bytes = io::to_safetensors_bytes(sd);
  EXPECT_TRUE(gl::equal(io::from_safetensors_bytes(bytes).at("w"), sd.at("w")));
  bytes.back() ^= 1;
  try {
    io::from_safetensors_bytes(bytes, {}, "weights-in-memory");
    FAIL();
  } catch (const io::CorruptFileError& e) {
    EXPECT_NE(std::string(e.what()).find("weights-in-memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  io::LoadOptions lax;
  lax.verify_checksum = false;
  EXPECT_NO_THROW(io::from_safetensors_bytes(bytes, lax));
  EXPECT_THROW(io::load_safetensors(temp_path("does-not-exist.safetensors")), gl::IOError);
}

TEST(Safetensors, RejectsUndefinedTensorsAndBadNames) {
  gl::StateDict sd;
  sd.insert("x", gl::Tensor());
  EXPECT_THROW(io::to_safetensors_bytes(sd), gl::ValueError);
  gl::StateDict meta;
  meta.insert("__metadata__", gl::ones({1}));
  EXPECT_THROW(io::to_safetensors_bytes(meta), gl::ValueError);
  gl::StateDict utf;
  utf.insert(std::string("bad\xff", 4), gl::ones({1}));
  EXPECT_THROW(io::to_safetensors_bytes(utf), gl::ValueError);
}
