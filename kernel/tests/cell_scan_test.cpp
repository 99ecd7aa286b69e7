// The kernel's cell scanner: what is_complete answers.
#include "cell_scan.hpp"

#include <gtest/gtest.h>

using xgradlab::completeness;

TEST(CellScan, Completeness) {
  EXPECT_EQ(completeness("int a = 1;"), "complete");
  EXPECT_EQ(completeness("for (int i = 0; i < 3; ++i) {"), "incomplete");
  EXPECT_EQ(completeness("f(1,\n"), "incomplete");
  EXPECT_EQ(completeness("auto s = \"abc"), "incomplete");
  EXPECT_EQ(completeness("/* open comment"), "incomplete");
  EXPECT_EQ(completeness("int a = 1 + \\"), "incomplete");
  EXPECT_EQ(completeness("}"), "invalid");
  EXPECT_EQ(completeness("auto s = \"{\"; // {\nchar c = '{';"), "complete");
  EXPECT_EQ(completeness("auto r = R\"x(a { \" b)x\";"), "complete");
  EXPECT_EQ(completeness("int n = 1'000'000;"), "complete");
}
