// onnx::export_model: the digits MLP, a small CNN and the other layers round-trip through
// onnxruntime (from the project's .venv; skipped with a message when it is absent) and match
// gradlab within 1e-5; unsupported modules, training mode and checker failures are errors; a
// failed export leaves the previous file intact.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <gradlab/onnx/export.hpp>
#include <sstream>

using namespace gradlab;
namespace fs = std::filesystem;

namespace {

fs::path venv_python() {
  const char* env = std::getenv("GRADLAB_VENV");
  return fs::path(env ? env : ".venv") / "bin" / "python";
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("gradlab_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

// Exports, runs in onnxruntime, compares. Returns "" on a match, "skip: ..." or the failure.
std::string round_trip(const std::function<void(const std::string&)>& do_export, const Tensor& x,
                       const Tensor& want, const std::string& name) {
  const fs::path model = scratch(name + ".onnx"), in = scratch(name + "_in.npy"),
                 out = scratch(name + "_want.npy"), log = scratch(name + ".log");
  do_export(model.string());
  io::save_npy(x, in);
  io::save_npy(want, out);
  if (!fs::exists(venv_python())) return "skip: no " + venv_python().string() + " (run tools/setup.sh)";
  const std::string cmd = venv_python().string() + " tools/onnxruntime_check.py " + model.string() +
                          " " + in.string() + " " + out.string() + " > " + log.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  std::stringstream text;
  text << f.rdbuf();
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (code == 77) return "skip: " + text.str();
  if (code != 0) return "onnxruntime disagrees (exit " + std::to_string(code) + "): " + text.str();
  std::cout << name << ": " << text.str();
  return "";
}

#define EXPECT_ROUND_TRIP(...)                                            \
  do {                                                                    \
    if (!onnx::available()) GTEST_SKIP() << "built without libonnx-dev";  \
    const std::string r_ = round_trip(__VA_ARGS__);                       \
    if (r_.rfind("skip: ", 0) == 0) GTEST_SKIP() << r_;                   \
    EXPECT_EQ(r_, "");                                                    \
  } while (0)


TEST(OnnxExport, DigitsMlpMatchesOnnxruntime) {
  manual_seed(0);
  data::DigitsOptions o;
  o.flatten = true;
  Tensor x = data::load_digits(o).data().slice(0, 0, 64);  // 64 real digits, [64, 64]
  nn::Sequential mlp(nn::Linear(64, 32), nn::ReLU(), nn::Dropout(0.2), nn::Linear(32, 10));
  mlp->eval();
  NoGradGuard no_grad;
  Tensor y = mlp->forward(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(mlp, x, p); }, x, y, "mlp");
}

TEST(OnnxExport, SmallCnnMatchesOnnxruntime) {
  manual_seed(1);
  Tensor x = data::load_digits().data().slice(0, 0, 16);  // [16, 1, 8, 8]
  nn::Sequential cnn(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                     nn::Conv2d(4, 6, 3), nn::Tanh(), nn::Flatten(), nn::Linear(6 * 2 * 2, 10),
                     nn::LogSoftmax(1));
  cnn->eval();
  NoGradGuard no_grad;
  Tensor y = cnn->forward(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(cnn, x, p); }, x, y, "cnn");
}

// A depthwise-separable block: the grouped Conv2d's ONNX node carries group (weight [O, C/g, k, k]).
TEST(OnnxExport, GroupedAndDepthwiseConvMatchOnnxruntime) {
  manual_seed(4);
  Tensor x = randn({3, 4, 7, 7});
  nn::Sequential cnn(nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1).groups(4)), nn::ReLU(),
                     nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(2)), nn::Flatten());
  cnn->eval();
  NoGradGuard no_grad;
  Tensor y = cnn->forward(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(cnn, x, p); }, x, y, "grouped");
}

TEST(OnnxExport, OtherLayersMatchOnnxruntime) {
  manual_seed(2);
  nn::BatchNorm1d bn(12);
  nn::Sequential m(nn::Linear(5, 12), bn, nn::GELU(), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
                   nn::LayerNorm(Shape{12}), nn::Softplus(nn::SoftplusOptions().beta(2.0)),
                   nn::GELU(nn::GELUOptions().approximate("tanh")), nn::Sigmoid(), nn::Identity(),
                   nn::Linear(12, 3), nn::Softmax(1));
  m->forward(randn({32, 5}));  // a training step moves BatchNorm's running stats off 0 / 1
  m->eval();
  Tensor x = randn({7, 5});
  NoGradGuard no_grad;
  Tensor y = m->forward(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(m, x, p); }, x, y, "layers");
}

TEST(OnnxExport, EmbeddingMatchesOnnxruntime) {
  manual_seed(3);
  nn::Sequential m(nn::Embedding(20, 6), nn::Flatten(), nn::Linear(18, 4));
  m->eval();
  Tensor ids = from_vector(std::vector<int64_t>{1, 5, 19, 0, 3, 3}, {2, 3}, dtype(kInt64));
  NoGradGuard no_grad;
  Tensor y = m->forward(ids);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(m, ids, p); }, ids, y, "embedding");
}

TEST(OnnxExport, TracedGraphMatchesOnnxruntime) {
  manual_seed(4);
  nn::Linear fc(6, 4);
  auto fn = [&](const Tensor& x) { return (relu(fc->forward(x) * 2 + 1) - sigmoid(x.sum({1}, true))).reshape({-1}); };
  Tensor x = randn({3, 6});
  jit::Graph g = jit::trace(fn, x);
  NoGradGuard no_grad;
  Tensor y = fn(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(g, x, p); }, x, y, "traced");
}

// Ops whose mapping is written on their struct (kOnnx: a same-named op, or to_onnx): expm1 as
// Exp then Sub, logaddexp as Max / Sub / Exp / Add / Log, and the parameterized ones.
TEST(OnnxExport, OpTraitMappingsMatchOnnxruntime) {
  manual_seed(5);
  auto fn = [](const Tensor& x) {
    Tensor a = expm1(x) + logaddexp(x, x * 0.5 - 1) + leaky_relu(x, 0.1) + softplus(x, 2.0, 20.0);
    return a + clamp(x, -0.5, 0.5) + pow(x, 3.0) + maximum(x, -x) + clone(x);
  };
  Tensor x = randn({4, 5});
  jit::Graph g = jit::trace(fn, x);
  NoGradGuard no_grad;
  Tensor y = fn(x);
  EXPECT_ROUND_TRIP([&](const std::string& p) { onnx::export_model(g, x, p); }, x, y, "op_traits");
}

TEST(OnnxExport, ErrorsAndAtomicWrite) {
  if (!onnx::available()) GTEST_SKIP() << "built without libonnx-dev";
  nn::Sequential m(nn::Linear(4, 2), nn::Dropout(0.5));
  const fs::path p = scratch("atomic.onnx");
  m->eval();
  onnx::export_model(m, randn({1, 4}), p.string());
  const auto size = fs::file_size(p);
  ASSERT_GT(size, 0u);
  m->train();
  try {
    onnx::export_model(m, randn({1, 4}), p.string());
    FAIL() << "no error for training mode";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("call model->eval()"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(p), size);  // the previous file is intact
  // A traced op with no ONNX mapping names itself and its kOnnx reason; so does a module type.
  jit::Graph g = jit::trace([](const Tensor& x) { return x.narrow(0, 0, 2) + 1; }, randn({3}));
  try {
    onnx::export_model(g, randn({3}), scratch("slice.onnx").string());
    FAIL() << "no error for Slice";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("traced op Slice cannot be exported"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no ONNX mapping written yet"), std::string::npos) << e.what();
  }
  struct Custom : nn::Module {};
  EXPECT_THROW(onnx::export_model(Custom(), randn({3}), scratch("custom.onnx").string()), ValueError);
  EXPECT_FALSE(fs::exists(scratch("custom.onnx")));
}

}  // namespace
