// The op table covers the library: every op struct compiled into libgradlab is produced by some
// row, and every public op function is a row or a listed exemption. Adding an op without a row
// makes these tests fail, naming the op.

#include "gradlab/testing/op_table.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "gradlab/gradlab.hpp"
#include "gradlab/ops/op.hpp"

namespace {

using namespace gradlab;
using namespace gradlab::testing;

// Names of every node reachable from `t`'s grad_fn.
void collect_nodes(const Tensor& t, std::set<std::string>& names) {
  if (!t.defined() || !t.grad_fn()) return;
  std::vector<std::shared_ptr<autograd::Node>> stack{t.grad_fn()};
  std::set<const autograd::Node*> seen;
  while (!stack.empty()) {
    auto n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    names.insert(n->name());
    for (const auto& e : n->next_edges())
      if (e.valid()) stack.push_back(e.fn);
  }
}

// Every node the table's rows produce, in forward graphs and in the graphs of their gradients
// (some ops, such as SliceScatter, appear only as the backward of another).
std::set<std::string> nodes_produced_by_table(int samples_per_row) {
  std::set<std::string> names;
  for (const auto& spec : op_table()) {
    GeneratorDraw d(derive_seed(0x7ab1e, std::hash<std::string>{}(spec.name)));
    for (int i = 0; i < samples_per_row; ++i) {
      const OpCase c = spec.sample(d);
      const TensorList in = differentiable_inputs(c);
      const TensorList out = spec.op(in, c.params);
      TensorList roots, gos, xs;
      for (const Tensor& o : out) {
        collect_nodes(o, names);
        if (o.defined() && o.requires_grad()) {
          roots.push_back(o);
          gos.push_back(
              ones_like(o).requires_grad_(true));  // so the gradient's own graph is recorded
        }
      }
      for (const Tensor& x : in)
        if (x.defined() && x.requires_grad()) xs.push_back(x);
      if (roots.empty() || xs.empty()) continue;
      for (const Tensor& g :
           autograd::grad(roots, xs, gos, true, /*create_graph=*/true, /*allow_unused=*/true))
        collect_nodes(g, names);
    }
  }
  return names;
}

std::vector<std::string> missing(const std::vector<std::string>& registered,
                                 const std::set<std::string>& produced) {
  std::vector<std::string> r;
  for (const auto& n : registered)
    if (!produced.count(n)) r.push_back(n);
  return r;
}

// Public op names declared in a header: functions (or Tensor methods) returning a Tensor, a list
// of them (chunk, split), a [const] Tensor& (in-place) or a (values, indices) tuple.
std::set<std::string> declared_ops(const std::string& text) {
  static const std::regex decl(R"(^\s*(?:const\s+)?(?:Tensor&?|TensorList|std::tuple<Tensor, Tensor>)\s+(\w+)\()");
  std::set<std::string> names;
  std::istringstream is(text);
  std::string line;
  std::smatch m;
  while (std::getline(is, line))
    if (std::regex_search(line, m, decl)) names.insert(m[1]);
  return names;
}

std::filesystem::path source_dir() {
#ifdef GRADLAB_SOURCE_DIR
  if (std::filesystem::exists(GRADLAB_SOURCE_DIR)) return GRADLAB_SOURCE_DIR;
#endif
  return std::filesystem::current_path();
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The headers that declare public ops: every ops/*.hpp but the internal ones, Tensor's methods,
// and nn::functional (whose functions forward to the ops of LibTorch's top-level names).
std::vector<std::filesystem::path> op_headers() {
  const auto root = source_dir() / "src" / "gradlab";
  std::vector<std::filesystem::path> r{root / "core" / "tensor.hpp", root / "nn" / "functional.hpp"};
  for (const auto& e : std::filesystem::directory_iterator(root / "ops")) {
    const auto name = e.path().filename().string();
    if (e.path().extension() == ".hpp" && name != "op.hpp" && name != "common.hpp")
      r.push_back(e.path());
  }
  return r;
}

TEST(OpTable, EveryOpStructInTheLibraryIsProducedByARow) {
  const std::vector<std::string> registered = autograd::registered_ops();
  ASSERT_GE(registered.size(), 30u)
      << "the op registry looks empty: is Op<T>::name() still odr-using kRegistered?";
  const auto produced = nodes_produced_by_table(40);
  const auto m = missing(registered, produced);
  std::string list;
  for (const auto& n : m) list += "  " + n + "\n";
  EXPECT_TRUE(m.empty())
      << "op structs with no row in the op table (add a row whose op produces them to its family "
         "in src/gradlab/testing/op_table/<family>.cpp):\n"
      << list;
}

TEST(OpTable, EveryPublicOpIsARowOrAnExemption) {
  std::set<std::string> rows;
  for (const auto& s : op_table()) rows.insert(s.name);
  const auto& exempt = op_table_exemptions();
  std::set<std::string> declared;
  const auto headers = op_headers();
  ASSERT_GE(headers.size(), 2u);
  for (const auto& h : headers) {
    ASSERT_TRUE(std::filesystem::exists(h)) << h;
    for (const auto& n : declared_ops(read(h))) declared.insert(n);
  }
  ASSERT_GE(declared.size(), 60u) << "found too few op declarations: did the header layout change?";
  std::string without_row;
  for (const auto& n : declared)
    if (!rows.count(n) && !exempt.count(n)) without_row += "  " + n + "\n";
  EXPECT_TRUE(without_row.empty())
      << "public ops with no row in the op table and no exemption (add a row to "
         "src/gradlab/testing/op_table/<family>.cpp, or an exemption with its reason):\n"
      << without_row;
  std::string stale;
  for (const auto& [n, why] : exempt)
    if (!declared.count(n)) stale += "  " + n + "\n";
  EXPECT_TRUE(stale.empty()) << "exemptions for ops that no header declares any more:\n" << stale;
  for (const auto& n : rows)
    EXPECT_TRUE(declared.count(n)) << "row '" << n << "' names no public op";
}

TEST(OpTable, TheCoverageChecksFailForANewOpWithoutARow) {
  // An op struct registered but never produced is reported...
  std::vector<std::string> registered = autograd::registered_ops();
  registered.push_back("BrandNewOpBackward0");
  const auto m = missing(registered, nodes_produced_by_table(5));
  EXPECT_NE(std::find(m.begin(), m.end(), "BrandNewOpBackward0"), m.end());
  // ... and so is a new public function in a header.
  const auto names = declared_ops(
      "Tensor brand_new_op(const Tensor& x, Site site = {});\n"
      "  Tensor& brand_new_(const Scalar& v, Site site = {});\n"
      "std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k);\n"
      "bool allclose(const Tensor& a, const Tensor& b);\n");
  EXPECT_EQ(names, (std::set<std::string>{"brand_new_op", "brand_new_", "topk"}));
}

TEST(OpTable, RowsAreWellFormedAndTheirCasesRun) {
  std::set<std::string> names;
  for (const auto& spec : op_table()) {
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(names.insert(spec.name).second) << "duplicate row";
    ASSERT_TRUE(spec.sample && spec.op);
    EXPECT_FALSE(spec.domain.empty());
    EXPECT_FALSE(spec.shapes.empty());
    GeneratorDraw d(derive_seed(1, std::hash<std::string>{}(spec.name)));
    for (int i = 0; i < 10; ++i) {
      const OpCase c = spec.sample(d);
      EXPECT_FALSE(c.describe.empty());
      int diff = 0;
      for (const Tensor& t : c.inputs) diff += t.is_floating_point();
      EXPECT_GE(diff, 1) << c.describe;
      EXPECT_LE(diff, spec.arity) << c.describe;
      const TensorList out = spec.op(differentiable_inputs(c), c.params);
      ASSERT_FALSE(out.empty()) << c.describe;
      for (const Tensor& o : out) {
        if (!o.is_floating_point()) continue;
        EXPECT_TRUE(isfinite(o).to(kInt64).sum().item<int64_t>() == o.numel())
            << c.describe << ": " << o;
      }
    }
  }
}

TEST(OpTable, ParametersAreNamedAndAMissingOneIsAClearError) {
  const OpParams p =
      OpParams().set("dims", {0, -1}).set("keepdim", true).set("p", 2.5).set("reduction", "mean");
  EXPECT_EQ(p.dims("dims"), (Dims{0, -1}));
  EXPECT_TRUE(p.flag("keepdim"));
  EXPECT_EQ(p.real("p"), 2.5);
  EXPECT_EQ(p.text("reduction"), "mean");
  EXPECT_EQ(OpParams().set("dim", int64_t{-2}).integer("dim"), -2);
  EXPECT_EQ(OpParams().set("exponent", 3).real("exponent"), 3.0);  // an integer reads as a real
  EXPECT_EQ(p.str(), "dims=[0, -1], keepdim=true, p=2.5, reduction=mean");

  // A sampled case knows its row, so the row's op names it when a parameter is missing ...
  GeneratorDraw d(3);
  const OpSpec& sum = op_spec("sum");
  EXPECT_EQ(sum.sample(d).params.row(), "sum");
  const Tensor x = ones({2, 3}, TensorOptions().dtype(kFloat64));
  auto message = [&](const OpSpec& spec, const OpParams& q) {
    try {
      spec.op({x}, q);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  const std::string missing = message(sum, OpParams().set("dims", {1}));
  EXPECT_NE(missing.find("op table row 'sum'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no parameter 'keepdim'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("dims=[1]"), std::string::npos) << missing;  // what the case has
  // ... and when it has the wrong type.
  const std::string wrong = message(op_spec("softmax"), OpParams().set("dim", 1.0));
  EXPECT_NE(wrong.find("op table row 'softmax'"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("parameter 'dim' is read as an integer"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("a real (dim=1)"), std::string::npos) << wrong;
  // Optional parameters are the ones a row tests with has(): sum over everything.
  EXPECT_EQ(sum.op({x}, OpParams())[0].item<double>(), 6.0);
}

TEST(OpTable, PrintsTheTable) {
  int with_ref = 0;
  std::printf("%-34s %-5s %-10s %s\n", "op", "arity", "reference", "domain | shapes");
  for (const auto& s : op_table()) {
    with_ref += s.reference ? 1 : 0;
    std::printf("%-34s %-5d %-10s %s | %s%s\n", s.name.c_str(), s.arity, s.reference ? "yes" : "-",
                s.domain.c_str(), s.shapes.c_str(), s.eps ? "  (own tolerances)" : "");
  }
  std::printf("%zu rows, %d with a reference\n", op_table().size(), with_ref);
  EXPECT_GE(op_table().size(), 80u);
}

}  // namespace
