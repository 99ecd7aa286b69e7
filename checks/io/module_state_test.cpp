// Module state: state_dict order and contents, strict and non-strict loading, every missing /
// unexpected key reported, shape and dtype mismatches, prefix remaps, gradlab::save / load.

#include <gtest/gtest.h>

#include "gradlab/gradlab.hpp"
#include "io_test_util.hpp"

namespace gl = gradlab;
namespace io = gradlab::io;
namespace nn = gradlab::nn;

namespace {

nn::Sequential mlp(int64_t hidden = 8) {
  return nn::Sequential(nn::Linear(4, hidden), nn::BatchNorm1d(hidden), nn::ReLU(),
                        nn::Linear(hidden, 3));
}

// A model wrapped the way DataParallel-style code does: everything under "module.".
struct WrapperImpl : nn::Module {
  nn::Sequential module{nullptr};
  WrapperImpl() { module = register_module("module", mlp()); }
  gl::Tensor forward(const gl::Tensor& x) { return module->forward(x); }
};
GRADLAB_MODULE(Wrapper);

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ModuleState, KeysInPyTorchOrderSharingStorage) {
  auto m = mlp();
  gl::StateDict sd = m->state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias",
                                                 "1.running_mean", "1.running_var",
                                                 "1.num_batches_tracked", "3.weight", "3.bias"}));
  EXPECT_TRUE(sd.at("0.weight").is_same_storage(m->named_parameters()[0].second));
  EXPECT_FALSE(sd.at("0.weight").requires_grad()) << "detached handles";
}

TEST(ModuleState, SaveLoadRoundTripIntoAFreshModel) {
  gl::manual_seed(1);
  auto a = mlp();
  {
    gl::NoGradGuard g;
    a->named_buffers()[0].second.add_(1.5);  // make the running mean non-trivial
  }
  const auto path = io_test::temp_path("mlp.safetensors");
  gl::save(a, path);
  gl::manual_seed(2);
  auto b = mlp();
  EXPECT_FALSE(gl::equal(a->named_parameters()[0].second, b->named_parameters()[0].second));
  auto r = gl::load(b, path);
  EXPECT_TRUE(r.ok());
  for (const auto& [k, t] : a->state_dict()) EXPECT_TRUE(gl::equal(t, b->state_dict().at(k))) << k;
  // Same through the StateDict API.
  gl::StateDict sd = gl::load(path);
  EXPECT_EQ(sd.keys(), a->state_dict().keys());
  gl::Tensor x = gl::randn({5, 4});
  a->eval();
  b->eval();
  EXPECT_TRUE(gl::equal(a->forward(x), b->forward(x)));
}

TEST(ModuleState, StrictListsEveryMissingAndUnexpectedKey) {
  auto m = mlp();
  gl::StateDict sd = m->state_dict();
  sd.erase("0.bias");
  sd.erase("3.weight");
  sd.insert("4.weight", gl::zeros({2}));
  sd.insert("extra", gl::zeros({1}));
  try {
    m->load_state_dict(sd);
    FAIL();
  } catch (const io::StateDictError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("2 missing and 2 unexpected key(s)"), std::string::npos) << w;
    EXPECT_NE(w.find("missing keys: 0.bias, 3.weight"), std::string::npos) << w;
    EXPECT_NE(w.find("unexpected keys: 4.weight, extra"), std::string::npos) << w;
    EXPECT_EQ(e.missing_keys, (std::vector<std::string>{"0.bias", "3.weight"}));
    EXPECT_EQ(e.unexpected_keys, (std::vector<std::string>{"4.weight", "extra"}));
  }
}

TEST(ModuleState, NonStrictReturnsTheKeysAndLoadsTheRest) {
  auto src = mlp(), dst = mlp();
  gl::StateDict sd = src->state_dict();
  sd.erase("3.bias");
  sd.insert("head.weight", gl::zeros({3}));
  const gl::Tensor before = dst->state_dict().at("3.bias").clone();
  nn::LoadResult r = dst->load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"3.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"head.weight"}));
  EXPECT_TRUE(gl::equal(dst->state_dict().at("0.weight"), src->state_dict().at("0.weight")));
  EXPECT_TRUE(gl::equal(dst->state_dict().at("3.bias"), before)) << "a missing key keeps its value";
}

TEST(ModuleState, ShapeAndDtypeMismatchesAreAlwaysErrorsAndWriteNothing) {
  auto small = mlp(8), big = mlp(16);
  const gl::Tensor before = big->state_dict().at("0.weight").clone();
  for (bool strict : {true, false}) {
    const std::string w = what_of([&] { big->load_state_dict(small->state_dict(), strict); });
    EXPECT_NE(
        w.find("size/dtype mismatch for 0.weight: expected [16, 4] float32, got [8, 4] float32"),
        std::string::npos)
        << w;
    EXPECT_NE(w.find("3.weight: expected [3, 16] float32, got [3, 8] float32"), std::string::npos)
        << w;
    EXPECT_NE(w.find("1.running_var"), std::string::npos) << "every mismatch is listed: " << w;
  }
  EXPECT_TRUE(gl::equal(big->state_dict().at("0.weight"), before)) << "nothing was written";
  gl::StateDict sd = small->state_dict();
  sd.insert("0.bias", sd.at("0.bias").to(gl::kFloat64));
  const std::string w = what_of([&] { small->load_state_dict(sd); });
  EXPECT_NE(w.find("0.bias: expected [8] float32, got [8] float64"), std::string::npos) << w;
}

TEST(ModuleState, PrefixMismatchIsExplainedAndRemapped) {
  Wrapper wrapped;
  auto bare = mlp();
  // Saved from the wrapper, loaded into the bare model.
  std::string w = what_of([&] { bare->load_state_dict(wrapped->state_dict()); });
  EXPECT_NE(w.find("differ only by a prefix: 'module.' in the dict, '' in the module (9 of 9"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("'module.0.weight' -> '0.weight'"), std::string::npos) << w;
  EXPECT_NE(w.find("io::strip_prefix(dict, \"module.\")"), std::string::npos) << w;
  EXPECT_TRUE(bare->load_state_dict(io::strip_prefix(wrapped->state_dict(), "module.")).ok());
  // The other way round.
  w = what_of([&] { wrapped->load_state_dict(bare->state_dict()); });
  EXPECT_NE(w.find("io::add_prefix(dict, \"module.\")"), std::string::npos) << w;
  EXPECT_TRUE(wrapped->load_state_dict(io::add_prefix(bare->state_dict(), "module.")).ok());
  // "model." vs "module.".
  gl::StateDict other = io::remap_prefix(wrapped->state_dict(), "module.", "model.");
  EXPECT_EQ(other.keys()[0], "model.0.weight");
  w = what_of([&] { wrapped->load_state_dict(other); });
  EXPECT_NE(w.find("io::remap_prefix(dict, \"model.\", \"module.\")"), std::string::npos) << w;
}

TEST(ModuleState, RemapHelpers) {
  gl::StateDict sd;
  sd.insert("module.a", gl::ones({1}));
  sd.insert("b", gl::ones({1}));
  sd.metadata["k"] = "v";
  EXPECT_EQ(io::strip_prefix(sd, "module.").keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(io::add_prefix(sd, "x.").keys(), (std::vector<std::string>{"x.module.a", "x.b"}));
  EXPECT_EQ(io::sub_dict(sd, "module.").keys(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(io::strip_prefix(sd, "module.").metadata.at("k"), "v");
  auto r = io::find_prefix_remap({"enc.0.w", "enc.1.w"}, {"model.enc.0.w", "model.enc.1.w"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from, "model.");
  EXPECT_EQ(r->to, "");
  EXPECT_EQ(r->explained, 2u);
  EXPECT_FALSE(io::find_prefix_remap({"a"}, {"b"}).has_value());
}

TEST(ModuleState, LoadingBumpsVersionsAndNeedsNoGradGuard) {
  auto m = mlp();
  gl::Tensor w = m->named_parameters()[0].second;
  const auto v = w.version();
  m->load_state_dict(mlp()->state_dict());  // parameters require grad: copy_ runs under NoGradGuard
  EXPECT_GT(w.version(), v);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}
