// amp::GradScaler against trajectories recorded from PyTorch (checks/amp/record_pytorch.py ->
// pytorch_ref_amp.hpp), its defaults, its misuse errors and its state in checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "gradlab/gradlab.hpp"
#include "pytorch_ref_amp.hpp"

namespace {

using namespace gradlab;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

Tensor f32(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, TensorOptions().dtype(kFloat32));
}

// Replays one recorded case: loss_t = sum(p * c_t), scaled, (unscaled and clipped,) stepped,
// updated. The scale, the growth tracker and skip / step must match exactly.
void replay(const ref::ScalerCase& c, const char* name) {
  Tensor p = f32({ref::kP0[0], ref::kP0[1], ref::kP0[2], ref::kP0[3]}).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions()
                             .init_scale(c.init_scale)
                             .growth_factor(c.growth_factor)
                             .backoff_factor(c.backoff_factor)
                             .growth_interval(c.growth_interval));
  for (size_t t = 0; t < c.coeffs.size(); ++t) {
    SCOPED_TRACE(std::string(name) + " step " + std::to_string(t));
    opt.zero_grad();
    Tensor loss = (p * f32(c.coeffs[t])).sum();
    scaler.scale(loss).backward();
    if (c.clip) {
      scaler.unscale_(opt);
      nn::utils::clip_grad_norm_({p}, 1.0);
    }
    const bool stepped = scaler.step(opt);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), c.scale[t]);  // exact: float32 arithmetic as _amp_update_scale_
    EXPECT_EQ(scaler.get_growth_tracker(), c.growth_tracker[t]);
    EXPECT_EQ(stepped ? 1 : 0, c.stepped[t]);
    const std::vector<double> got = p.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], c.p[t][i], 1e-6 * (1 + std::abs(c.p[t][i]))) << "p[" << i << "]";
  }
}

TEST(GradScaler, MatchesPyTorchWithTheDefaults) { replay(ref::kDefaults, "defaults"); }
TEST(GradScaler, MatchesPyTorchGrowingEveryThreeCleanSteps) { replay(ref::kGrow3, "grow3"); }
TEST(GradScaler, MatchesPyTorchWithUnscaleAndClipBeforeStep) { replay(ref::kClip, "clip"); }
TEST(GradScaler, MatchesPyTorchWithOtherFactors) { replay(ref::kFactors, "factors"); }
TEST(GradScaler, MatchesPyTorchWhenGrowingWouldOverflowFloat32) { replay(ref::kOverflow, "overflow"); }

TEST(GradScaler, DefaultsArePyTorchs) {
  amp::GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.get_growth_factor(), 2.0);
  EXPECT_EQ(s.get_backoff_factor(), 0.5);
  EXPECT_EQ(s.get_growth_interval(), 2000);
  EXPECT_TRUE(s.is_enabled());
}

TEST(GradScaler, ScaleMultipliesAndUnscaleGivesTheTrueGradient) {
  Tensor p = f32({1, 2}).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.0));
  amp::GradScaler s;
  Tensor loss = (p * f32({3, -4})).sum();
  Tensor scaled = s.scale(loss);
  EXPECT_DOUBLE_EQ(scaled.item<double>(), 65536.0 * loss.item<double>());
  scaled.backward();
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{3 * 65536.0, -4 * 65536.0}));
  s.unscale_(opt);
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{3, -4}));
  EXPECT_TRUE(s.step(opt));  // step does not unscale a second time
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{3, -4}));
}

TEST(GradScaler, MisuseIsAnErrorWithPyTorchsWording) {
  Tensor p = f32({1}).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  amp::GradScaler s;
  try {
    s.update();
    ADD_FAILURE() << "update before scale";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("scale() was never called"));
  }
  s.scale((p * 2).sum()).backward();
  s.unscale_(opt);
  try {
    s.unscale_(opt);
    ADD_FAILURE() << "a second unscale_";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unscale_() has already been called on this optimizer since the last update()"));
  }
  s.step(opt);
  try {
    s.step(opt);
    ADD_FAILURE() << "a second step";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("step() has already been called since the last update()"));
  }
  EXPECT_THROW(s.unscale_(opt), ValueError);  // after step
  s.update();
  // float16 gradients are refused (PyTorch: "Attempting to unscale FP16 gradients.")
  Tensor h = f32({1}).to(kFloat16).requires_grad_(true);
  optim::SGD oh({h}, optim::SGDOptions(0.1));
  s.scale((h * 2).sum()).backward();
  try {
    s.unscale_(oh);
    ADD_FAILURE() << "float16 gradients";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("float16 gradients"));
  }
}

TEST(GradScaler, DisabledIsATransparentWrapper) {
  Tensor p = f32({1}).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.5));
  amp::GradScaler s(amp::GradScalerOptions().enabled(false));
  Tensor loss = (p * 2).sum();
  EXPECT_EQ(s.scale(loss).impl(), loss.impl());
  loss.backward();
  EXPECT_TRUE(s.step(opt));
  s.update();
  EXPECT_EQ(p.item<double>(), 0.0);
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_TRUE(s.state_dict().empty());
}

TEST(GradScaler, StateDictRoundTripsThroughACheckpoint) {
  amp::GradScaler s(amp::GradScalerOptions().init_scale(1024).growth_interval(3));
  Tensor p = f32({1}).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  for (int t = 0; t < 4; ++t) {  // 3 clean steps: grows to 2048, then one more clean step
    opt.zero_grad();
    s.scale((p * 2).sum()).backward();
    s.step(opt);
    s.update();
  }
  ASSERT_EQ(s.get_scale(), 2048.0);
  ASSERT_EQ(s.get_growth_tracker(), 1);
  const StateDict d = s.state_dict();
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"scale", "growth_factor", "backoff_factor", "growth_interval",
                                                "_growth_tracker"}));
  io::Checkpoint c;
  c.scaler = d;
  const fs::path path = fs::temp_directory_path() / ("gradlab_scaler_" + std::to_string(::getpid()) + ".safetensors");
  io::save_checkpoint(c, path);
  io::Checkpoint r = io::load_checkpoint(path);
  fs::remove(path);
  amp::GradScaler back;
  back.load_state_dict(r.scaler);
  EXPECT_EQ(back.get_scale(), 2048.0);
  EXPECT_EQ(back.get_growth_tracker(), 1);
  EXPECT_EQ(back.get_growth_interval(), 3);
  // The restored scaler continues as the original: two more clean steps grow it again.
  for (amp::GradScaler* sc : {&s, &back}) {
    for (int t = 0; t < 2; ++t) {
      opt.zero_grad();
      sc->scale((p * 2).sum()).backward();
      sc->step(opt);
      sc->update();
    }
  }
  EXPECT_EQ(back.get_scale(), 4096.0);
  EXPECT_EQ(back.get_scale(), s.get_scale());
  EXPECT_THROW(back.load_state_dict(StateDict()), ValueError);
}

}  // namespace
