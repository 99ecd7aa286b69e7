// nn::Module forward hooks: called after forward through a holder or a Sequential, removable,
// skipped by a direct ->forward call.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gradlab/nn/nn.hpp"
#include "gradlab/ops/ops.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;

TEST(ForwardHook, HolderAndSequentialCallTheHooks) {
  gl::manual_seed(0);
  nn::Linear fc(4, 3);
  nn::ReLU act;
  nn::Sequential seq(fc, act);
  std::vector<std::string> seen;
  gl::Tensor last;
  const unsigned h1 = fc->register_forward_hook([&](nn::Module& m, const gl::Tensor& y) {
    seen.push_back(m.name() + gl::shape_str(y.sizes()));
  });
  act->register_forward_hook([&](nn::Module& m, const gl::Tensor& y) {
    seen.push_back(m.name());
    last = y;
  });
  seq->register_forward_hook([&](nn::Module& m, const gl::Tensor&) { seen.push_back(m.name()); });

  const gl::Tensor x = gl::randn({2, 4});
  const gl::Tensor out = seq(x);
  EXPECT_EQ(seen, (std::vector<std::string>{"Linear[2, 3]", "ReLU", "Sequential"}))
      << "children in order, then the Sequential itself";
  EXPECT_TRUE(gl::equal(last, out)) << "the hook sees the module's output";

  seen.clear();
  fc(x);
  EXPECT_EQ(seen, (std::vector<std::string>{"Linear[2, 3]"}));
  seen.clear();
  fc->forward(x);
  EXPECT_TRUE(seen.empty()) << "a direct ->forward call skips the hooks";

  fc->remove_forward_hook(h1);
  fc->remove_forward_hook(12345);  // unknown: ignored
  seen.clear();
  seq(x);
  EXPECT_EQ(seen, (std::vector<std::string>{"ReLU", "Sequential"}));
}

TEST(ForwardHook, AHookMayRemoveItself) {
  nn::ReLU act;
  int calls = 0;
  unsigned h = 0;
  h = act->register_forward_hook([&](nn::Module& m, const gl::Tensor&) {
    ++calls;
    m.remove_forward_hook(h);
  });
  act(gl::ones({2}));
  act(gl::ones({2}));
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(act->register_forward_hook(nn::ForwardHook()), gl::ValueError);
}
