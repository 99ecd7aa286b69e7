// Lesson 18's exercise answers (lessons/18_deployment/README.md), checked.

#include <gtest/gtest.h>

#include <filesystem>
#include <gradlab/gradlab.hpp>

namespace gl = gradlab;
namespace nn = gradlab::nn;

namespace {

// Exercise 1: a module whose forward branches on a value read with item().
struct Branchy : nn::Module {
  gl::Tensor forward(const gl::Tensor& x) { return x.sum().item<float>() > 0 ? x * 2 : -x; }
};

TEST(Lesson18Answers, Exercise1AHostReadInTheForwardRunsEagerly) {
  auto m = std::make_shared<Branchy>();
  auto f = gl::jit::compile([m](const gl::Tensor& x) { return m->forward(x); });
  gl::Tensor pos = gl::ones({3}), neg = -gl::ones({3});
  EXPECT_TRUE(gl::equal(f(pos), pos * 2));
  EXPECT_EQ(f.report(),
            "eager: the function reads tensor values on the host while traced (1 TracerWarning); "
            "its control flow may depend on data, so it runs eagerly\n");
  EXPECT_TRUE(gl::equal(f(neg), -neg));
}

TEST(Lesson18Answers, Exercise3TrainingModeIsAnError) {
  if (!gl::onnx::available()) GTEST_SKIP() << "built without libonnx-dev";
  nn::Sequential model(nn::Linear(64, 64), nn::BatchNorm1d(64), nn::ReLU(), nn::Dropout(0.2),
                       nn::Linear(64, 10));
  const auto path = std::filesystem::temp_directory_path() / "gradlab_answers_18.onnx";
  std::filesystem::remove(path);
  try {
    gl::onnx::export_model(model, gl::randn({4, 64}), path.string());
    FAIL() << "no error";
  } catch (const gl::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "onnx::export_model: BatchNorm1d is in training mode; expected eval mode, got "
                 "training mode; hint: call model->eval() before exporting");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
