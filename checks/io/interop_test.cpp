// Interoperability with an independent implementation: tools/safetensors_stdlib.py (Python's
// json and struct modules only) reads a gradlab file, recomputes its checksum, and writes a
// file that gradlab loads.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/io/npy.hpp"
#include "gradlab/io/safetensors.hpp"
#include "gradlab/ops/ops.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
namespace fs = std::filesystem;

namespace {

const std::string kTool = std::string(GRADLAB_SOURCE_DIR) + "/tools/safetensors_stdlib.py";

// Runs the tool; returns its stdout, or nullopt when Python is not there.
std::optional<std::string> run_tool(const std::string& args) {
  const std::string python = GRADLAB_PYTHON3;
  if (python.empty() || !fs::exists(python)) return std::nullopt;
  const std::string cmd = "'" + python + "' '" + kTool + "' " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd;
  return out;
}

// A Python that has NumPy (Debian's /usr/bin/python3 usually does), or "".
std::string numpy_python() {
  for (const std::string& p : {std::string("/usr/bin/python3"), std::string(GRADLAB_PYTHON3)}) {
    if (p.empty() || !fs::exists(p)) continue;
    if (std::system(("'" + p + "' -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return p;
  }
  return "";
}

std::string run_python(const std::string& python, const std::string& code) {
  const auto script = io_test::temp_path("script.py");
  io_test::write_bytes(script, code);
  FILE* p = ::popen(("'" + python + "' '" + script.string() + "'").c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << code;
  return out;
}

gl::Tensor half_bits(std::vector<uint16_t> bits, gl::ScalarType t) {
  gl::Tensor x = gl::make_tensor({static_cast<int64_t>(bits.size())}, t);
  std::memcpy(x.impl()->data(), bits.data(), bits.size() * 2);
  return x;
}

}  // namespace

TEST(Interop, PythonStdlibReaderReadsGradlabFile) {
  gl::StateDict sd;
  sd.insert("encoder.weight", gl::tensor({{0.1, -2.5, 3.0}, {1e-7, 6.5e4, -0.0}}));
  sd.insert("encoder.bias", gl::tensor({1.0 / 3.0, -1e-300}, gl::dtype(gl::kFloat64)));
  sd.insert("step", gl::scalar_tensor(12345678901LL, gl::dtype(gl::kInt64)));
  sd.insert("mask", gl::tensor({true, false, true}));
  sd.insert("h", half_bits({0x3e00, 0xc000}, gl::kFloat16));   // 1.5, -2.0
  sd.insert("b", half_bits({0x3fc0, 0xc040}, gl::kBFloat16));  // 1.5, -3.0
  sd.insert("none", gl::zeros({0, 2}));
  sd.metadata["format"] = "pt";
  sd.metadata["epoch"] = "7";
  const auto path = io_test::temp_path("for_python.safetensors");
  io::save_safetensors(sd, path);

  auto out = run_tool("dump '" + path.string() + "'");
  if (!out) GTEST_SKIP() << "python3 not found (" << GRADLAB_PYTHON3 << ")";
  const auto j = nlohmann::json::parse(*out);
  EXPECT_TRUE(j.at("checksum_ok").get<bool>()) << "Python recomputed gradlab's checksum";
  EXPECT_EQ(j.at("metadata").at("format"), "pt");
  EXPECT_EQ(j.at("metadata").at("epoch"), "7");
  std::vector<std::string> order = j.at("order");
  EXPECT_EQ(order, sd.keys());
  const auto& t = j.at("tensors");
  EXPECT_EQ(t.at("encoder.weight").at("dtype"), "F32");
  EXPECT_EQ(t.at("encoder.weight").at("shape"), nlohmann::json::array({2, 3}));
  std::vector<double> w = t.at("encoder.weight").at("values");
  std::vector<float> expect = sd.at("encoder.weight").to_vector<float>();
  ASSERT_EQ(w.size(), expect.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(static_cast<float>(w[i]), expect[i]) << i;
  EXPECT_EQ(t.at("encoder.bias").at("values").get<std::vector<double>>(),
            sd.at("encoder.bias").to_vector<double>());
  EXPECT_EQ(t.at("step").at("shape"), nlohmann::json::array());
  EXPECT_EQ(t.at("step").at("values")[0].get<int64_t>(), 12345678901LL);
  EXPECT_EQ(t.at("mask").at("values"), nlohmann::json::array({true, false, true}));
  EXPECT_EQ(t.at("h").at("values"), nlohmann::json::array({1.5, -2.0}));
  EXPECT_EQ(t.at("b").at("values"), nlohmann::json::array({1.5, -3.0}));
  EXPECT_EQ(t.at("none").at("shape"), nlohmann::json::array({0, 2}));
}

TEST(Interop, GradlabLoadsFileWrittenByPythonStdlibWriter) {
  const auto path = io_test::temp_path("from_python.safetensors");
  if (!run_tool("write '" + path.string() + "'")) GTEST_SKIP() << "python3 not found";
  gl::StateDict sd = io::load_safetensors(path);  // no checksum: a foreign file
  EXPECT_EQ(sd.size(), 8u);
  EXPECT_TRUE(gl::equal(sd.at("weight"), gl::tensor({{0.5, -1.25, 3.0}, {1e-3, -0.0, 65504.0}})));
  EXPECT_TRUE(
      gl::equal(sd.at("bias"), gl::tensor({1.0 / 3.0, -2.5, 1e-300}, gl::dtype(gl::kFloat64))));
  EXPECT_EQ(sd.at("count").dim(), 0);
  EXPECT_EQ(sd.at("count").item<int64_t>(), -42);
  EXPECT_TRUE(gl::equal(sd.at("flags"), gl::tensor({true, false, false, true})));
  EXPECT_EQ(sd.at("half").dtype(), gl::kFloat16);
  uint16_t bits[2];
  std::memcpy(bits, sd.at("half").impl()->data(), 4);
  EXPECT_EQ(bits[0], 0x3e00);
  EXPECT_EQ(bits[1], 0xc000);
  EXPECT_EQ(sd.at("labels").to_vector<int64_t>(), (std::vector<int64_t>{7, -1, 2147483647}));
  EXPECT_EQ(sd.at("pixels").sizes(), (gl::Shape{2, 2}));
  EXPECT_EQ(sd.at("pixels").to_vector<int64_t>(), (std::vector<int64_t>{0, 255, 128, 1}));
  EXPECT_EQ(sd.at("empty").sizes(), (gl::Shape{0, 3}));
  // And gradlab writes it back so that Python reads the same values.
  const auto again = io_test::temp_path("roundtrip_python.safetensors");
  io::save_safetensors(sd, again);
  auto out = run_tool("dump '" + again.string() + "'");
  ASSERT_TRUE(out);
  EXPECT_TRUE(nlohmann::json::parse(*out).at("checksum_ok").get<bool>());
}

TEST(Interop, NumpyReadsAndWritesNpyFilesLikeGradlab) {
  const std::string python = numpy_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with numpy";
  const std::string dir = io_test::temp_dir().string();
  // NumPy writes: C and Fortran order, big-endian, narrow ints, float16, 0-d, empty.
  run_python(python, "import numpy as np\nd = '" + dir +
                         "/'\n"
                         "np.save(d + 'np_f4.npy', np.array([[1.5, -2.0, 3.25], [0.0, 1e-20, "
                         "-7.0]], dtype='<f4'))\n"
                         "np.save(d + 'np_f8_fortran.npy', np.asfortranarray(np.arange(6, "
                         "dtype='<f8').reshape(2, 3) / 3))\n"
                         "np.save(d + 'np_be.npy', np.array([1.0, -2.5], dtype='>f8'))\n"
                         "np.save(d + 'np_i4.npy', np.array([-5, 0, 70000], dtype='<i4'))\n"
                         "np.save(d + 'np_bool.npy', np.array([True, False, True]))\n"
                         "np.save(d + 'np_f2.npy', np.array([1.5, -2.0], dtype='<f2'))\n"
                         "np.save(d + 'np_scalar.npy', np.float64(2.5))\n"
                         "np.save(d + 'np_empty.npy', np.zeros((0, 3), dtype='<i8'))\n");
  EXPECT_TRUE(gl::equal(io::load_npy(dir + "/np_f4.npy"),
                        gl::tensor({{1.5, -2.0, 3.25}, {0.0, 1e-20, -7.0}})));
  EXPECT_TRUE(gl::equal(io::load_npy(dir + "/np_f8_fortran.npy"),
                        gl::arange(0, 6, 1, gl::dtype(gl::kFloat64)).reshape({2, 3}) / 3.0));
  EXPECT_TRUE(gl::equal(io::load_npy(dir + "/np_be.npy"),
                        gl::tensor({1.0, -2.5}, gl::dtype(gl::kFloat64))));
  EXPECT_EQ(io::load_npy(dir + "/np_i4.npy").to_vector<int64_t>(),
            (std::vector<int64_t>{-5, 0, 70000}));
  EXPECT_TRUE(gl::equal(io::load_npy(dir + "/np_bool.npy"), gl::tensor({true, false, true})));
  gl::Tensor h = io::load_npy(dir + "/np_f2.npy");
  uint16_t bits[2];
  std::memcpy(bits, h.impl()->data(), 4);
  EXPECT_EQ(h.dtype(), gl::kFloat16);
  EXPECT_EQ(bits[0], 0x3e00);
  EXPECT_EQ(bits[1], 0xc000);
  EXPECT_EQ(io::load_npy(dir + "/np_scalar.npy").dim(), 0);
  EXPECT_EQ(io::load_npy(dir + "/np_scalar.npy").item<double>(), 2.5);
  EXPECT_EQ(io::load_npy(dir + "/np_empty.npy").sizes(), (gl::Shape{0, 3}));

  // gradlab writes, NumPy reads.
  io::save_npy(gl::tensor({{0.1, -2.5}, {3.0, 7.0}}), dir + "/gl_f4.npy");
  io::save_npy(gl::tensor({1.0 / 3.0}, gl::dtype(gl::kFloat64)), dir + "/gl_f8.npy");
  io::save_npy(gl::tensor({INT64_MIN, int64_t{3}}), dir + "/gl_i8.npy");
  io::save_npy(gl::tensor({false, true}), dir + "/gl_bool.npy");
  io::save_npy(gl::tensor(4.5), dir + "/gl_scalar.npy");
  io::save_npy(gl::arange(0, 6, 1, gl::dtype(gl::kFloat32)).reshape({2, 3}).t(),
               dir + "/gl_view.npy");
  const std::string out = run_python(
      python, "import numpy as np, json\nd = '" + dir +
                  "/'\nr = {}\n"
                  "for n in ['gl_f4', 'gl_f8', 'gl_i8', 'gl_bool', 'gl_scalar', 'gl_view']:\n"
                  "    a = np.load(d + n + '.npy')\n"
                  "    r[n] = {'dtype': a.dtype.str, 'shape': list(a.shape), 'values': "
                  "a.astype(object).ravel().tolist()}\n"
                  "print(json.dumps(r))\n");
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j.at("gl_f4").at("dtype"), "<f4");
  EXPECT_EQ(j.at("gl_f4").at("shape"), nlohmann::json::array({2, 2}));
  EXPECT_EQ(static_cast<float>(j.at("gl_f4").at("values")[0].get<double>()), 0.1f);
  EXPECT_EQ(j.at("gl_f8").at("values")[0].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(j.at("gl_i8").at("dtype"), "<i8");
  EXPECT_EQ(j.at("gl_i8").at("values")[0].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(j.at("gl_bool").at("dtype"), "|b1");
  EXPECT_EQ(j.at("gl_bool").at("values"), nlohmann::json::array({false, true}));
  EXPECT_EQ(j.at("gl_scalar").at("shape"), nlohmann::json::array());
  EXPECT_EQ(j.at("gl_view").at("shape"), nlohmann::json::array({3, 2}));
  EXPECT_EQ(j.at("gl_view").at("values"), nlohmann::json::array({0.0, 3.0, 1.0, 4.0, 2.0, 5.0}));
}
