// The gradlab half of the LibTorch compatibility corpus: every snippet of corpus_snippets.hpp,
// compiled against gradlab through `namespace torch = gradlab;`, must give the values, gradients,
// grad_fn names and errors recorded from LibTorch 1.13 (libtorch_ref.hpp) — except where a flag
// marks a deliberate difference, which is then checked to still be there.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <gradlab/gradlab.hpp>

namespace torch = gradlab;

#include "compat/corpus_snippets.hpp"
#include "compat/corpus_common.hpp"
#include "compat/libtorch_ref.hpp"

namespace {

const corpus::Ref* find_ref(const std::string& name) {
  for (const corpus::Ref& r : corpus::refs())
    if (name == r.name) return &r;
  return nullptr;
}

TEST(LibTorchCorpus, EverySnippetHasARecording) {
  for (const corpus::Snippet& s : corpus::snippets())
    EXPECT_NE(find_ref(s.name), nullptr) << s.name << ": rerun corpus_torch --record";
  EXPECT_EQ(corpus::refs().size(), corpus::snippets().size()) << "stale rows in libtorch_ref.hpp";
}

TEST(LibTorchCorpus, EverySnippetIsNamedInTheParityTable) {
  std::ifstream f(std::string(GRADLAB_SOURCE_DIR) + "/docs/libtorch_parity.md");
  ASSERT_TRUE(f) << "docs/libtorch_parity.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  for (const corpus::Snippet& s : corpus::snippets()) {
    const std::string n = s.name;
    // as a whole word in a "(snippet: a, b)" list
    bool named = false;
    for (const char* end : {",", ")", ";"}) named = named || doc.find(" " + n + end) != std::string::npos;
    EXPECT_TRUE(named) << n << " is not cited in docs/libtorch_parity.md";
  }
}

class Snippet : public ::testing::TestWithParam<corpus::Snippet> {};

TEST_P(Snippet, AgreesWithLibTorch) {
  const corpus::Snippet& s = GetParam();
  const corpus::Ref* ref = find_ref(s.name);
  ASSERT_NE(ref, nullptr);
  const corpus::Result r = corpus::run(s);
  if (s.flags & corpus::kThrowsInGradlab) {
    EXPECT_FALSE(ref->threw) << "LibTorch now refuses it too: drop the flag";
    EXPECT_TRUE(r.threw) << "gradlab no longer refuses it: drop the flag and compare";
    return;
  }
  ASSERT_EQ(r.threw, ref->threw) << (r.threw ? "gradlab threw: " + r.error : "gradlab did not throw");
  if (r.threw) return;
  EXPECT_EQ(corpus::compare_values("value", r.value, ref->value), "");
  if (s.flags & corpus::kNameDiffers)
    EXPECT_NE(r.grad_fn, ref->grad_fn) << "the names agree now: drop kNameDiffers";
  else
    EXPECT_EQ(r.grad_fn, ref->grad_fn);
  ASSERT_EQ(r.grads.size(), ref->grads.size());
  std::string diff;
  for (size_t i = 0; i < r.grads.size(); ++i)
    diff += corpus::compare_values(("grad " + std::to_string(i)).c_str(), r.grads[i], ref->grads[i]);
  if (s.flags & corpus::kGradDiffers)
    EXPECT_NE(diff, "") << "the gradients agree now: drop kGradDiffers";
  else
    EXPECT_EQ(diff, "");
}

INSTANTIATE_TEST_SUITE_P(Corpus, Snippet, ::testing::ValuesIn(corpus::snippets()),
                         [](const ::testing::TestParamInfo<corpus::Snippet>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
