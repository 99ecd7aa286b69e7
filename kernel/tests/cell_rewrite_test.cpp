// The kernel's cell rewriter: which chunks stay at namespace scope, which go into a wrapper
// function, and how lambdas and captures are rewritten (see cell_rewrite.hpp for why).
#include "cell_rewrite.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

using xgradlab::ChunkKind;
using xgradlab::drop_static;
using xgradlab::rewrite_captures;
using xgradlab::rewrite_cell;
using xgradlab::rewrite_cell_parts;
using xgradlab::split_cell;
using xgradlab::trailing_expression_begin;

namespace {

std::vector<ChunkKind> kinds(const std::string& code) {
  std::vector<ChunkKind> out;
  for (const auto& c : split_cell(code)) out.push_back(c.kind);
  return out;
}

std::vector<std::string> texts(const std::string& code) {
  std::vector<std::string> out;
  for (const auto& c : split_cell(code)) out.push_back(code.substr(c.begin, c.end - c.begin));
  return out;
}

constexpr ChunkKind P = ChunkKind::Preprocessor, D = ChunkKind::Declaration,
                    V = ChunkKind::Variable, L = ChunkKind::LambdaVariable,
                    S = ChunkKind::Statement;

}  // namespace

TEST(CellRewrite, Declarations) {
  EXPECT_EQ(kinds("#include <vector>\nnamespace gl = gradlab;\nusing namespace std;"),
            (std::vector<ChunkKind>{P, D, D}));
  EXPECT_EQ(kinds("struct S { int a; } s;\nclass C { void f() {} };\nenum class E { A, B };"),
            (std::vector<ChunkKind>{D, D, D}));
  EXPECT_EQ(kinds("void hello() { std::cout << 1; }\ngl::Tensor f(const gl::Tensor& x) { return x; }"),
            (std::vector<ChunkKind>{D, D}));
  EXPECT_EQ(kinds("template <class T = int> T sq(T x) { return x * x; }\n"
                  "template <class T> struct B { T v; };\nnamespace a { int z; }"),
            (std::vector<ChunkKind>{D, D, D}));
  EXPECT_EQ(kinds("std::ostream& operator<<(std::ostream& os, const P& p) { return os << p.x; }"),
            (std::vector<ChunkKind>{D}));
  EXPECT_EQ(kinds("[[nodiscard]] int g() { return 1; }"), (std::vector<ChunkKind>{D}));
  // A declaring macro (LibTorch's TORCH_MODULE) stays at namespace scope; a call does not.
  EXPECT_EQ(kinds("GRADLAB_MODULE(Good);\nGood good;\nprint_it(good);"),
            (std::vector<ChunkKind>{D, V, S}));
}

TEST(CellRewrite, VariablesAndStatements) {
  EXPECT_EQ(kinds("double k = 2.0;\nauto x = gl::tensor({1.0, 2.0});\nstd::vector<int> v{3, 1};\n"
                  "Net net;\nconst auto& r = v;\nauto [a, b] = std::pair<int, int>(1, 2);\n"
                  "std::shared_ptr<Net> p = std::make_shared<Net>();\nint* q = nullptr;"),
            (std::vector<ChunkKind>{V, V, V, V, V, V, V, V}));
  EXPECT_EQ(kinds("x.backward();\nk = 3;\nstd::cout << k;\n*q = 1;\n++k;\nf(x);\n"
                  "std::sort(v.begin(), v.end());\nthrow 1;\ndelete q;\na < b;"),
            (std::vector<ChunkKind>(10, S)));
  EXPECT_EQ(kinds("for (int i = 0; i < 3; ++i) { f(i); }\nif (k) { f(1); } else { f(2); }\n"
                  "try { f(1); } catch (...) { }\ndo { ++k; } while (k < 3);\n{ int z = 1; }"),
            (std::vector<ChunkKind>(5, S)));
  EXPECT_EQ(kinds("for (auto& [a, b] : m) f(a);"), (std::vector<ChunkKind>{S}));
}

TEST(CellRewrite, Lambdas) {
  EXPECT_EQ(kinds("auto f = [&](const gl::Tensor& t) { return (t * k).sum(); };\n"
                  "auto g = [](int a) { return a; };\n"
                  "double r = gradcheck([&](const std::vector<T>& in) { return in[0]; }, {x});"),
            (std::vector<ChunkKind>{L, L, L}));
  EXPECT_EQ(kinds("std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });\n"
                  "[] { std::cout << 1; }();"),
            (std::vector<ChunkKind>{S, S}));
  // Subscripts, array declarators, structured bindings and attributes are not lambdas.
  EXPECT_EQ(kinds("int a[3] = {1, 2, 3};\nauto& [p, q] = pr;\nint z = a[1];\n"
                  "[[maybe_unused]] int w = 1;"),
            (std::vector<ChunkKind>{V, V, V, V}));
}

TEST(CellRewrite, ChunksEndWhereTheyShould) {
  EXPECT_EQ(texts("void f() {}\nf();"), (std::vector<std::string>{"void f() {}", "f();"}));
  EXPECT_EQ(texts("struct S {\n  int a;\n} s;  // one\nint b;"),
            (std::vector<std::string>{"struct S {\n  int a;\n} s;", "int b;"}));
  EXPECT_EQ(texts("auto f = [] { return 1; };\nf()"),
            (std::vector<std::string>{"auto f = [] { return 1; };", "f()"}));
  EXPECT_EQ(texts("auto s = \"; }\"; // ; }\nchar c = '}';"),
            (std::vector<std::string>{"auto s = \"; }\";", "char c = '}';"}));
}

TEST(CellRewrite, Captures) {
  EXPECT_EQ(rewrite_captures("[x](int a) { return a + x; }"), "[x = x](int a) { return a + x; }");
  EXPECT_EQ(rewrite_captures("[&x, y]() mutable { }"), "[&x = x, y = y]() mutable { }");
  EXPECT_EQ(rewrite_captures("[=, &s] { }"), "[=, &s = s] { }");
  // Unchanged: defaults, this, *this, init-captures, packs, subscripts, bindings.
  for (const char* same : {"[&] { }", "[=] { }", "[this] { }", "[*this] { }", "[n = 0]() mutable { }",
                           "[args...] { }", "v[i] = 1;", "auto [a, b] = p;", "[[nodiscard]] int f();",
                           "\"[x]() {}\""}) {
    EXPECT_EQ(rewrite_captures(same), same);
  }
}

TEST(CellRewrite, WrappedCellKeepsLines) {
  const std::string out = rewrite_cell("double k = 2.0;\nstd::cout << k;\nstd::cout << 1;\nint z;", 7);
  EXPECT_EQ(
      out,
      "[[gnu::used]] double k = 2.0;\nvoid __gl_cell_7_0() { std::cout << k;\nstd::cout << 1; } "
      "int __gl_run_7_0 = (__gl_cell_7_0(), 0);[[gnu::used]]\nint z;");
  // [[gnu::used]] goes after the chunk before, ahead of its comment: the variable keeps its
  // columns.
  EXPECT_EQ(rewrite_cell("struct P {};  // p\nP p;\n#include <map>\nint n;", 2),
            "struct P {};[[gnu::used]]  // p\nP p;\n#include <map>\n[[gnu::used]] int n;");
  const std::string lam = rewrite_cell("auto f = [&](int a) {\n  return a * k;\n};", 3);
  EXPECT_EQ(lam,
            "inline auto __gl_init_3_0() { return [&](int a) {\n  return a * k;\n}; } auto f = "
            "__gl_init_3_0();");
  EXPECT_EQ(rewrite_cell("constexpr auto sq = [](int a) { return a * a; };", 1),
            "constexpr auto __gl_init_1_0() { return [](int a) { return a * a; }; } constexpr "
            "auto sq = __gl_init_1_0();");
  EXPECT_EQ(rewrite_cell("std::vector<std::function<int()>> fs = {[] { return 1; }};", 2),
            "extern std::vector<std::function<int()>> fs; inline std::vector<std::function<int()>>  "
            "__gl_init_2_0() { return {[] { return 1; }}; } std::vector<std::function<int()>> fs = "
            "__gl_init_2_0();");
  // Direct-initialization: a functional cast in the init function.
  EXPECT_EQ(rewrite_cell("const std::vector<F> fs{[] { return 1; }};", 2),
            "extern const std::vector<F> fs; inline std::vector<F>  __gl_init_2_0() { return "
            "std::vector<F> {[] { return 1; }}; } const std::vector<F> fs = __gl_init_2_0();");
  // A lambda that refers to the variable it initializes: declared (extern) first.
  EXPECT_EQ(rewrite_cell("std::function<int(int)> fib = [&fib](int n) { return fib(n - 1); };", 8),
            "extern std::function<int(int)> fib; inline auto __gl_init_8_0() { return [&fib = fib](int "
            "n) { return fib(n - 1); }; } std::function<int(int)> fib = __gl_init_8_0();");
  // Declarations are left as they are; a cell without statements gets no wrapper.
  EXPECT_EQ(rewrite_cell("struct S { int a; };\nvoid f() {}", 4), "struct S { int a; };\nvoid f() {}");
  // An explicit capture of a top-level variable becomes an init-capture.
  EXPECT_EQ(rewrite_cell("std::for_each(v.begin(), v.end(), [k](int& e) { e *= k; });", 5),
            "void __gl_cell_5_0() { std::for_each(v.begin(), v.end(), [k = k](int& e) { e *= k; }); } "
            "int __gl_run_5_0 = (__gl_cell_5_0(), 0);");
}

// The cell in parts that run one after the other (cell_rewrite.hpp, "Order"): at most one thing
// that runs per part, after the declarations before it.
TEST(CellRewrite, PartsRunInOrder) {
  const std::vector<std::string> parts =
      rewrite_cell_parts("x = 3;\nconst double y = x * 2;\nvoid f() {}\nf();\nstruct S {};", 1);
  const std::string run0 =
      "void __gl_cell_1_0() { x = 3; } int __gl_run_1_0 = (__gl_cell_1_0(), 0);";
  const std::string y = "const double y = x * 2;";
  const std::string run1 = "void __gl_cell_1_1() { f(); } int __gl_run_1_1 = (__gl_cell_1_1(), 0);";
  // Padded to their line and column: a part starts where the previous one ended.
  EXPECT_EQ(parts, (std::vector<std::string>{
                       run0, std::string(run0.size(), ' ') + "[[gnu::used]]\n" + y,
                       std::string(1, '\n').append(y.size(), ' ') + "\nvoid f() {}\n" + run1,
                       std::string(3, '\n').append(run1.size(), ' ') + "\nstruct S {};"}));
  // Consecutive statements stay one run; declarations only: one part; an empty cell: one part.
  EXPECT_EQ(rewrite_cell_parts("a();\nb();", 2).size(), 1u);
  EXPECT_EQ(rewrite_cell_parts("#include <vector>\nstruct P {};\nint g() { return 1; }", 3).size(),
            1u);
  EXPECT_EQ(rewrite_cell_parts("// nothing", 4), (std::vector<std::string>{"// nothing"}));
  EXPECT_EQ(rewrite_cell_parts("int a = 1;\nint b = a;\nconst auto [c, d] = p;", 5).size(), 3u);
  // Inside #if ... #endif a part closes the open groups, and the next opens them again on its
  // padding lines: the same branches, the same line numbers.
  EXPECT_EQ(
      rewrite_cell_parts("#if A\n#else\na();\nint b = 1;\n#endif\nc();", 6),
      (std::vector<std::string>{
          "#if A\n#else\nvoid __gl_cell_6_0() { a(); } int __gl_run_6_0 = (__gl_cell_6_0(), "
          "0);\n#endif",
          "#if A\n#else\n" + std::string(70, ' ') + "[[gnu::used]]\nint b = 1;\n#endif",
          "#if A\n#else\n\n" + std::string(10, ' ') +
              "\n#endif\nvoid __gl_cell_6_1() { c(); } int __gl_run_6_1 = (__gl_cell_6_1(), 0);"}));
  // ... but not inside a group after a #define or #undef: opened again, it may take another branch.
  EXPECT_EQ(
      rewrite_cell_parts("#ifndef ONCE\n#define ONCE\na();\nint b = 1;\n#endif\nc();", 7).size(),
      2u);
  // Each part, without its padding, is the next piece of rewrite_cell, on the same line and column.
  const std::string cell =
      "int k = 1;\n#include <map>\nk = 2; auto g = [k] { return k; };\nconst int m = g();\nm";
  std::string joined;
  for (const std::string& part : rewrite_cell_parts(cell, 9)) {
    const std::size_t lines =
        static_cast<std::size_t>(std::count(joined.begin(), joined.end(), '\n'));
    const std::size_t last_newline = joined.rfind('\n');
    const std::size_t column =
        joined.size() - (last_newline == std::string::npos ? 0 : last_newline + 1);
    ASSERT_GE(part.size(), lines + column);
    EXPECT_EQ(part.substr(0, lines + column), std::string(lines, '\n') + std::string(column, ' '));
    joined += part.substr(lines + column);
  }
  EXPECT_EQ(joined, rewrite_cell(cell, 9));
}

TEST(CellRewrite, StaticIsDropped) {
  // Columns stay: `static` becomes six spaces.
  EXPECT_EQ(drop_static("static int hits = 0;"), "       int hits = 0;");
  EXPECT_EQ(drop_static("const static double c = f();"), "const        double c = f();");
  EXPECT_EQ(drop_static("static inline int n = 1;"), "       inline int n = 1;");
  EXPECT_EQ(drop_static("static int tick() { static int n = 0; return ++n; }"),
            "       int tick() { static int n = 0; return ++n; }");
  EXPECT_EQ(drop_static("template <class T> static T sq(T a) { return a * a; }"),
            "template <class T>        T sq(T a) { return a * a; }");
  EXPECT_EQ(drop_static("static auto f = [&] { return 1; };"),
            "       auto f = [&] { return 1; };");
  // Not a top-level variable's or function's `static`: left alone.
  for (const char* same : {"struct S { static int k; };", "static_assert(sizeof(int) == 4);",
                           "int n = static_cast<int>(2.5);", "{ static int once = 0; }",
                           "for (;;) { static int z; break; }", "#define STATIC static"}) {
    EXPECT_EQ(drop_static(same), same);
  }
}

TEST(CellRewrite, TrailingExpression) {
  const auto npos = std::string::npos;
  EXPECT_EQ(trailing_expression_begin("int k = 1;\nk + 1"), 11u);
  EXPECT_EQ(trailing_expression_begin("Point{3.0, 4.0}"), 0u);
  EXPECT_EQ(trailing_expression_begin("[](int a) { return a * 2; }(21)"), 0u);
  EXPECT_EQ(trailing_expression_begin("void f() {}\nf() // done"), 12u);
  EXPECT_EQ(trailing_expression_begin("x.sum()"), 0u);
  EXPECT_EQ(trailing_expression_begin("x // the tensor"), 0u);
  EXPECT_EQ(trailing_expression_begin("g([] { return 1; })"), 0u);  // its ';' is not top-level
  // Nothing to show: statements, definitions, preprocessor lines.
  for (const char* none : {"int k = 1;", "struct S { int a; };", "void f() {}", "f(); // done",
                           "#include <vector>", "for (int i = 0; i < 2; ++i) { f(i); }",
                           "if (k) { f(); }", "{ f(); }", "try { f(); } catch (...) {}", "",
                           "int k = 1;\n#include <vector>\n", "// only a comment"}) {
    EXPECT_EQ(trailing_expression_begin(none), npos) << none;
  }
}
