// Answers to the exercises of lesson 09 (state_dict), each claim checked.

#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <string>
#include <vector>

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace fs = std::filesystem;

namespace {

nn::Sequential mlp(int64_t hidden = 128) {
  return nn::Sequential(nn::Linear(64, hidden), nn::ReLU(), nn::Linear(hidden, 10));
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradlab_answers_09_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

struct ClassifierImpl : nn::Module {
  nn::Linear encoder{nullptr}, classifier{nullptr};
  nn::ReLU act{nullptr};
  ClassifierImpl() {
    encoder = register_module("0", nn::Linear(64, 128));  // exercise 6: "encoder" renamed back
    act = register_module("act", nn::ReLU());
    classifier = register_module("classifier", nn::Linear(128, 10));
  }
  gl::Tensor forward(const gl::Tensor& x) {
    return classifier->forward(act->forward(encoder->forward(x)));
  }
};
GRADLAB_MODULE(Classifier);

}  // namespace

TEST(Lesson09Answers, Exercise1ShapeMismatchIsAnErrorEvenWithStrictFalse) {
  gl::manual_seed(0);
  nn::Sequential model = mlp();
  const fs::path path = scratch("ex1.safetensors");
  gl::save(model, path);
  nn::Sequential narrow = mlp(64);
  const std::string what = error_of([&] { gl::load(narrow, path, /*strict=*/false); });
  EXPECT_NE(what.find("0.weight: expected [64, 64] float32, got [128, 64] float32"),
            std::string::npos)
      << what;
}

TEST(Lesson09Answers, Exercise2BatchNormBuffersAreNotParametersAndShiftTheIndices) {
  gl::manual_seed(0);
  nn::Sequential bn(nn::Linear(64, 128), nn::BatchNorm1d(128), nn::ReLU(), nn::Linear(128, 10));
  bn->train();
  bn->forward(gl::randn({32, 64}));  // one training-mode batch updates the running statistics
  std::vector<std::string> state, params;
  for (const auto& [k, t] : bn->state_dict()) state.push_back(k);
  for (const auto& [k, t] : bn->named_parameters()) params.push_back(k);
  std::vector<std::string> not_params;
  for (const auto& k : state)
    if (std::find(params.begin(), params.end(), k) == params.end()) not_params.push_back(k);
  EXPECT_EQ(not_params,
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(bn->state_dict().at("1.num_batches_tracked").item<int64_t>(), 1);

  const fs::path path = scratch("ex2.safetensors");
  gl::save(bn, path);
  nn::Sequential plain = mlp();
  nn::LoadResult r = gl::load(plain, path, /*strict=*/false);
  EXPECT_EQ(sorted(r.missing_keys), (std::vector<std::string>{"2.bias", "2.weight"}));
  EXPECT_EQ(sorted(r.unexpected_keys),
            (std::vector<std::string>{"1.bias", "1.num_batches_tracked", "1.running_mean",
                                      "1.running_var", "1.weight", "3.bias", "3.weight"}));
}

TEST(Lesson09Answers, Exercise3FineTuningMissingKeysAreExactlyTheHead) {
  gl::manual_seed(0);
  nn::Sequential model = mlp();
  const fs::path path = scratch("ex3.safetensors");
  gl::save(model, path);
  nn::Sequential ft({{"0", nn::Linear(64, 128)}, {"1", nn::ReLU()}, {"head", nn::Linear(128, 10)}});
  nn::LoadResult r = gl::load(ft, path, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"head.weight", "head.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"2.weight", "2.bias"}));
  EXPECT_TRUE(gl::equal(ft->state_dict().at("0.weight"), model->state_dict().at("0.weight")));
}

TEST(Lesson09Answers, Exercise5FlippedByteIsAChecksumMismatch) {
  gl::manual_seed(0);
  nn::Sequential model = mlp();
  const fs::path path = scratch("ex5.safetensors");
  gl::save(model, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(bytes.at(i));
  const size_t mid = bytes.size() / 2;
  ASSERT_GT(mid, 8 + hlen);  // the middle of the file is in the raw data, past the header
  bytes[mid] = static_cast<char>(bytes[mid] ^ 0xFF);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  nn::Sequential fresh = mlp();
  const std::string what = error_of([&] { gl::load(fresh, path); });
  EXPECT_NE(what.find("checksum mismatch"), std::string::npos) << what;
}

TEST(Lesson09Answers, Exercise6OnlyClassifierRenamedOneRemapLoads) {
  gl::manual_seed(0);
  nn::Sequential model = mlp();
  const fs::path path = scratch("ex6.safetensors");
  gl::save(model, path);
  Classifier c;
  nn::LoadResult r = gl::load(c, path, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"2.weight", "2.bias"}));
  Classifier c2;
  EXPECT_TRUE(c2->load_state_dict(io::remap_prefix(gl::load(path), "2.", "classifier.")).ok());
  const gl::Tensor x = gl::randn({8, 64});
  EXPECT_TRUE(gl::equal(c2->forward(x), model->forward(x)));
}
