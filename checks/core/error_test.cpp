// Call sites as errors and anomaly mode print them: the path is cut at a whole source-root
// component, whatever folder the checkout lives in.
#include <gtest/gtest.h>

#include <string>

#include "gradlab/gradlab.hpp"

namespace {

using gradlab::short_source_path;

TEST(SourcePath, CutsAtTheLastRootComponent) {
  EXPECT_EQ(short_source_path("/home/me/gradlab/src/gradlab/nn/layers.cpp"),
            "src/gradlab/nn/layers.cpp");
  EXPECT_EQ(short_source_path("/home/me/gradlab/lessons/13_nan_hunting/main.cpp"),
            "lessons/13_nan_hunting/main.cpp");
  EXPECT_EQ(short_source_path("/r/checks/core/error_test.cpp"), "checks/core/error_test.cpp");
  EXPECT_EQ(short_source_path("src/gradlab/core/error.cpp"), "src/gradlab/core/error.cpp");
}

TEST(SourcePath, ARootInsideAFolderNameDoesNotCount) {
  // The defect lesson 13 exposed: a worktree named i11-lessons printed
  // "lessons/src/gradlab/nn/layers.cpp" for the library's own files.
  EXPECT_EQ(short_source_path("/work/wt/i11-lessons/src/gradlab/nn/layers.cpp"),
            "src/gradlab/nn/layers.cpp");
  EXPECT_EQ(short_source_path("/work/wt/i11-lessons/lessons/13_nan_hunting/main.cpp"),
            "lessons/13_nan_hunting/main.cpp");
  EXPECT_EQ(short_source_path("/x/mybench/src/a.cpp"), "src/a.cpp");
  EXPECT_EQ(short_source_path("/r/src/gradlab/unit_checks/a.cpp"), "src/gradlab/unit_checks/a.cpp");
  // A checkout inside a folder that is itself named like a root: the rightmost root wins.
  EXPECT_EQ(short_source_path("/home/me/lessons/gradlab/src/gradlab/ops/loss.cpp"),
            "src/gradlab/ops/loss.cpp");
  EXPECT_EQ(short_source_path("/home/me/src/gradlab/lessons/07_training_loop/main.cpp"),
            "lessons/07_training_loop/main.cpp");
}

TEST(SourcePath, NoRootKeepsThePath) {
  EXPECT_EQ(short_source_path("/tmp/my_test.cpp"), "/tmp/my_test.cpp");
  EXPECT_EQ(short_source_path("/tmp/resources/x.cpp"), "/tmp/resources/x.cpp");  // not src/
  EXPECT_EQ(short_source_path(""), "");
}

TEST(SourcePath, SiteStrUsesIt) {
  const int line = __LINE__ + 1;
  const std::string s = gradlab::Site::current().str();
  EXPECT_EQ(s.rfind("checks/core/error_test.cpp:" + std::to_string(line), 0), 0u) << s;
}

}  // namespace
