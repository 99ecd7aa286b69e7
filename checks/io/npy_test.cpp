// .npy files: round trips, files as NumPy writes them (Fortran order, big-endian, narrow ints,
// version 2), and damaged files.

#include "gradlab/io/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/safetensors.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
using io_test::temp_path;

namespace {

// A .npy file (version 1.0) with this header dict and raw data.
std::string npy(const std::string& dict, const std::string& data, int version = 1) {
  std::string h = dict;
  const size_t pre = version == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(version) + '\0';
  if (version == 1) {
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  }
  return out + h + data;
}

template <class T>
std::string raw(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

gl::Tensor load(const std::string& bytes, const std::string& name = "t.npy") {
  const auto p = temp_path(name);
  io_test::write_bytes(p, bytes);
  return io::load_npy(p);
}

}  // namespace

TEST(Npy, RoundTripsEveryDtypeZeroSizeAndScalars) {
  std::vector<gl::Tensor> cases = {
      gl::tensor({{1.5, -2.0, 3.25}, {0.0, 1e-20, -7.0}}),
      gl::tensor({1.0 / 3.0, -1e300}, gl::dtype(gl::kFloat64)),
      gl::tensor({INT64_MIN, int64_t{5}, INT64_MAX}),
      gl::tensor({true, false, true}),
      gl::tensor(4.5),
      gl::zeros({0}),
      gl::zeros({2, 0, 3}, gl::dtype(gl::kInt64)),
      gl::arange(0, 24, 1, gl::dtype(gl::kFloat32))
          .reshape({2, 3, 4})
          .permute({2, 0, 1}),  // a view
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto p = temp_path("rt" + std::to_string(i) + ".npy");
    io::save_npy(cases[i], p);
    gl::Tensor back = io::load_npy(p);
    EXPECT_EQ(back.dtype(), cases[i].dtype()) << i;
    EXPECT_EQ(back.sizes(), cases[i].sizes()) << i;
    EXPECT_TRUE(gl::equal(back, cases[i])) << i;
    const std::string bytes = io_test::read_bytes(p);
    EXPECT_EQ(bytes.find('\n') + 1, 128u) << "header padded so the data starts at 128: " << i;
  }
  EXPECT_THROW(io::save_npy(gl::make_tensor({2}, gl::kBFloat16), temp_path("bf16.npy")),
               gl::DTypeError);
}

TEST(Npy, ShapeTextIsWhatNumpyWrites) {
  const auto p = temp_path("shape.npy");
  io::save_npy(gl::zeros({3}), p);
  EXPECT_NE(io_test::read_bytes(p).find("'shape': (3,)"), std::string::npos);
  io::save_npy(gl::tensor(1.0), p);
  EXPECT_NE(io_test::read_bytes(p).find("'shape': ()"), std::string::npos);
  io::save_npy(gl::zeros({2, 5}), p);
  EXPECT_NE(
      io_test::read_bytes(p).find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }"),
      std::string::npos);
}

TEST(Npy, ReadsFortranOrderBigEndianNarrowIntsAndVersion2) {
  // np.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype='<f8'): column-major bytes 1 4 2 5 3 6.
  gl::Tensor f = load(npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                          raw<double>({1, 4, 2, 5, 3, 6})));
  EXPECT_TRUE(
      gl::equal(f, gl::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, gl::dtype(gl::kFloat64))));
  // Big-endian float32 [1.0, -2.0].
  gl::Tensor be = load(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                           std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8)));
  EXPECT_TRUE(gl::equal(be, gl::tensor({1.0, -2.0})));
  gl::Tensor i4 = load(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
                           raw<int32_t>({-5, 0, 70000})));
  EXPECT_EQ(i4.dtype(), gl::kInt64);
  EXPECT_EQ(i4.to_vector<int64_t>(), (std::vector<int64_t>{-5, 0, 70000}));
  gl::Tensor u1 = load(
      npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", std::string("\xff\x01", 2)));
  EXPECT_EQ(u1.to_vector<int64_t>(), (std::vector<int64_t>{255, 1}));
  gl::Tensor v2 =
      load(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", raw<int64_t>({42}), 2));
  EXPECT_EQ(v2.item<int64_t>(), 42);
}

TEST(Npy, DamagedFilesGiveCorruptFileErrors) {
  const std::string good =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw<float>({1, 2}));
  EXPECT_NO_THROW(load(good));
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_THROW(load(good.substr(0, cut), "cut.npy"), io::CorruptFileError) << cut;
  EXPECT_THROW(load(good + "xx"), io::CorruptFileError);  // bytes beyond the shape
  EXPECT_THROW(
      load(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'))),
      io::CorruptFileError);
  EXPECT_THROW(
      load(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", std::string(4, '\0'))),
      io::CorruptFileError);
  EXPECT_THROW(
      load(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "")),
      io::CorruptFileError);
  EXPECT_THROW(
      load(
          npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")),
      io::CorruptFileError);
  EXPECT_THROW(load(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\x07")),
               io::CorruptFileError);
  EXPECT_THROW(load(npy("{'fortran_order': False, 'shape': (1,), }", "abcd")),
               io::CorruptFileError);
  EXPECT_THROW(load("not a numpy file at all"), io::CorruptFileError);
  std::string big_header = good;
  big_header[8] = '\xff';
  big_header[9] = '\xff';
  EXPECT_THROW(load(big_header), io::CorruptFileError);
  try {
    load(good.substr(0, 70), "named.npy");
  } catch (const io::CorruptFileError& e) {
    EXPECT_NE(std::string(e.what()).find("named.npy"), std::string::npos) << e.what();
  }
}
