// The kernel's cell scanner: what is_complete answers and which trailing text is shown as a value.
#include "cell_scan.hpp"

#include <gtest/gtest.h>

using xgradlab::completeness;
using xgradlab::trailing_expression;

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

TEST(CellScan, TrailingExpression) {
  std::size_t at = 0;
  EXPECT_EQ(trailing_expression("int k = 1;\nk + 1", &at), "\nk + 1");
  EXPECT_EQ(at, 10u);
  EXPECT_EQ(trailing_expression("x.sum()", &at), "x.sum()");
  EXPECT_EQ(at, 0u);
  EXPECT_EQ(trailing_expression("void f() {}\nf()", &at), "\nf()");
  EXPECT_EQ(trailing_expression("x // the tensor", &at), "x // the tensor");
  // Nothing to show: a statement, a definition, a comment, a preprocessor line.
  EXPECT_EQ(trailing_expression("int k = 1;", &at), "");
  EXPECT_EQ(trailing_expression("struct S { int a; };", &at), "");
  EXPECT_EQ(trailing_expression("void f() {}", &at), "");
  EXPECT_EQ(trailing_expression("f(); // done", &at), "");
  EXPECT_EQ(trailing_expression("#include <vector>", &at), "");
  EXPECT_EQ(trailing_expression("int k = 1;\n#include <vector>\n", &at), "");
  // An incomplete cell shows nothing (clang reports the error).
  EXPECT_EQ(trailing_expression("f(1,", &at), "");
  // The `;` inside braces or parentheses is not top-level.
  EXPECT_EQ(trailing_expression("g([] { return 1; })", &at), "g([] { return 1; })");
}
