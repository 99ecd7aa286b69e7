// Lesson 19: inside the engine.
//
// The lessons so far used gradlab from outside. This one opens it: one built-in op struct (Mul)
// read from its source, the engine's backward loop watched on a diamond graph (a node runs only
// when all its consumers have sent their gradient, and what they send is summed), a new op
// written here (smooth_abs) and tested the way gradlab tests its own (gradcheck in float64, an
// op-table row, a wrong backward planted with testing::BackwardOverride that the row's cases
// must reject), and finally a 60-line scalar engine in the style of micrograd, checked against
// gradlab on the same expression.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <gradlab/gradlab.hpp>
#include <gradlab/ops/internal/elementwise.hpp>
#include <gradlab/ops/op.hpp>
#include <gradlab/testing/gradcheck.hpp>
#include <gradlab/testing/mutants.hpp>
#include <gradlab/testing/op_table.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
using gl::autograd::GradList;
using lesson::fmt;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// ---- a new op, written as gradlab writes its own ---------------------------------------------
// y = √(x² + 1) - 1      dx = dy * x / (y + 1)      (a smooth |x|: quadratic near 0, |x| - 1 far)
struct SmoothAbs : gl::autograd::Op<SmoothAbs> {
  static constexpr const char* kName = "SmoothAbsBackward0";
  gl::autograd::SavedTensor x_, y_;
  gl::Tensor forward(const gl::Tensor& x) {  // runs with grad mode off: nothing recorded here
    gl::Tensor y = gl::sqrt(x * x + 1.0) - 1.0;
    save(x_, x);
    save(y_, y, gl::autograd::kOutput);
    return y;
  }
  // Written with gradlab's ops, so under create_graph it is recorded (second derivatives).
  GradList backward(const GradList& dy) { return {dy[0] * x_.unpack() / (y_.unpack() + 1.0)}; }
};
gl::Tensor smooth_abs(const gl::Tensor& x, gl::Site site = {}) {
  return gl::autograd::record<SmoothAbs>(site, x);
}

// Its row in the op table's format: what a property needs to test it.
gl::testing::OpSpec smooth_abs_row() {
  using namespace gl::testing;
  OpSpec s;
  s.name = "smooth_abs";
  s.arity = 1;
  s.domain = "x: any in [-3, 3]";
  s.shapes = "any shape (rank 0-4)";
  s.sample = [](Draw& d) {
    gl::Tensor x = d.values(d.shape(), Domain::any(-3, 3));
    return OpCase{
        {x}, OpParams().row("smooth_abs"), "smooth_abs(x " + gl::shape_str(x.sizes()) + ")"};
  };
  s.op = [](const gl::TensorList& in, const OpParams&) {
    return gl::TensorList{smooth_abs(in[0])};
  };
  s.reference = [](const gl::TensorList& in, const OpParams&) {  // plain doubles, no gradlab op
    std::vector<double> v = in[0].contiguous().to_vector<double>();
    for (double& e : v) e = std::sqrt(e * e + 1) - 1;
    return gl::TensorList{gl::tensor(v, f64).reshape(in[0].sizes())};
  };
  return s;
}

struct TableRun {
  int cases = 0, gradcheck_failed = 0, reference_failed = 0, with_negative = 0;
  int failed_without_negative = 0;  // killed cases that had no negative element
  std::string first_failure;        // the first failing case and what gradcheck said
};
// The row's properties on `n` drawn cases: gradcheck in float64 and forward vs reference.
TableRun run_row(const gl::testing::OpSpec& spec, int n, uint64_t seed) {
  gl::testing::GeneratorDraw draw(seed);
  TableRun r;
  for (int i = 0; i < n; ++i) {
    const gl::testing::OpCase c = spec.sample(draw);
    ++r.cases;
    const std::vector<double> xs = c.inputs[0].contiguous().to_vector<double>();
    const bool negative = std::any_of(xs.begin(), xs.end(), [](double v) { return v < 0; });
    r.with_negative += negative;
    const auto rep =
        gl::testing::gradcheck(spec.bind(c.params), gl::testing::differentiable_inputs(c),
                               spec.options().raise_exception(false));
    if (!rep.ok) {
      ++r.gradcheck_failed;
      if (!negative) ++r.failed_without_negative;
      if (r.first_failure.empty()) {
        r.first_failure = c.describe + ": " + rep.first_failure() + " check failed";
        if (!rep.failures.empty())
          r.first_failure += ", worst entry analytic " + fmt("%.4f", rep.failures[0].analytic) +
                             " vs numeric " + fmt("%.4f", rep.failures[0].numeric);
      }
    }
    const gl::Tensor got = spec.op(c.inputs, c.params)[0],
                     want = spec.reference(c.inputs, c.params)[0];
    if (lesson::max_abs_diff(got.to_vector<double>(), want.to_vector<double>()) > 1e-12)
      ++r.reference_failed;
  }
  return r;
}

// ---- a scalar engine, micrograd style (about 60 lines) -----------------------------------------
// Planted bugs (see main): `=` instead of `+=` in the backward closures, and an order that visits
// a node before all of its consumers.
bool g_assign_not_accumulate = false, g_preorder = false;

struct V {
  double data = 0, grad = 0;
  std::vector<std::shared_ptr<V>> prev;  // the nodes this one was computed from
  std::function<void()> backward_fn = [] {};
  std::string op;
};
using Value = std::shared_ptr<V>;

Value val(double d) {
  return std::make_shared<V>(V{d, 0, {}, [] {}, "leaf"});
}
void acc(V& n, double g) {
  if (g_assign_not_accumulate)
    n.grad = g;  // BUG: the second path overwrites the first
  else
    n.grad += g;
}
Value operator+(const Value& a, const Value& b) {
  auto o = std::make_shared<V>(V{a->data + b->data, 0, {a, b}, {}, "+"});
  V* w = o.get();
  o->backward_fn = [a, b, w] { acc(*a, w->grad), acc(*b, w->grad); };
  return o;
}
Value operator*(const Value& a, const Value& b) {
  auto o = std::make_shared<V>(V{a->data * b->data, 0, {a, b}, {}, "*"});
  V* w = o.get();
  o->backward_fn = [a, b, w] { acc(*a, b->data * w->grad), acc(*b, a->data * w->grad); };
  return o;
}
Value tanh(const Value& a) {
  const double t = std::tanh(a->data);
  auto o = std::make_shared<V>(V{t, 0, {a}, {}, "tanh"});
  V* w = o.get();
  o->backward_fn = [a, w, t] { acc(*a, (1 - t * t) * w->grad); };
  return o;
}
Value exp(const Value& a) {
  const double e = std::exp(a->data);
  auto o = std::make_shared<V>(V{e, 0, {a}, {}, "exp"});
  V* w = o.get();
  o->backward_fn = [a, w, e] { acc(*a, e * w->grad); };
  return o;
}
Value pow(const Value& a, double k) {
  auto o = std::make_shared<V>(V{std::pow(a->data, k), 0, {a}, {}, "pow"});
  V* w = o.get();
  o->backward_fn = [a, w, k] { acc(*a, k * std::pow(a->data, k - 1) * w->grad); };
  return o;
}
// The order backward runs nodes in: reverse post-order of a depth-first search (a node after all
// of its consumers). The planted bug uses pre-order: a node as soon as one consumer reaches it.
std::vector<V*> backward_order(const Value& root) {
  std::vector<V*> post, pre;
  std::set<V*> seen;
  std::function<void(V*)> visit = [&](V* n) {
    if (!seen.insert(n).second) return;
    pre.push_back(n);
    for (const Value& p : n->prev) visit(p.get());
    post.push_back(n);
  };
  visit(root.get());
  if (g_preorder) return pre;  // BUG: parents reached by one consumer run before the others
  std::reverse(post.begin(), post.end());
  return post;
}
void backward(const Value& root) {
  root->grad = 1;
  for (V* n : backward_order(root)) n->backward_fn();
}

// The expression both engines compute: h = x1 * x2 + x1 (x1 used twice), t = tanh(h) used three
// times, y = t * exp(t) + t^2 + x2^3.
template <class T, class Tanh, class Exp, class Pow>
T expression(const T& x1, const T& x2, Tanh tanh_, Exp exp_, Pow pow_) {
  T h = x1 * x2 + x1;
  T t = tanh_(h);
  return t * exp_(t) + pow_(t, 2.0) + pow_(x2, 3.0);
}

// Reads `path` (below the source tree) and returns the 1-based number of the first line that
// contains `needle` at or after line `from`, 0 when none.
int find_line(const std::vector<std::string>& lines, const std::string& needle, int from = 1) {
  for (int i = std::max(from, 1); i <= static_cast<int>(lines.size()); ++i)
    if (lines[i - 1].find(needle) != std::string::npos) return i;
  return 0;
}
std::vector<std::string> read_lines(const std::string& rel) {
  std::ifstream in(std::string(GRADLAB_SOURCE_DIR) + "/" + rel);
  std::vector<std::string> lines;
  for (std::string s; std::getline(in, s);) lines.push_back(s);
  return lines;
}
// "[1.5, -2, 0.5]": up to 4 significant digits.
std::string vec_str(const std::vector<double>& v) {
  std::vector<std::string> items;
  for (double e : v) items.push_back(fmt("%.4g", e));
  return "[" + lesson::join(items) + "]";
}
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L(
      "19", "inside the engine", argc, argv,
      {{"mul_swapped", "Mul's backward swaps its operands: da = dc * a, db = dc * b",
        "a.grad = dc * b and b.grad = dc * a"},
       {"smooth_abs_grad",
        "smooth_abs's backward divides by y instead of y + 1 (forgets the forward's - 1)",
        "gradcheck (float64, full Jacobian) accepts smooth_abs"},
       {"value_assign", "the Value engine's backward assigns (=) where it must accumulate (+=)",
        "the Value engine's gradients equal gradlab's"},
       {"value_preorder",
        "the Value engine runs nodes in DFS pre-order: a node before all of its consumers",
        "every node runs after all of its consumers"}});
  namespace od = gl::ops_detail;
  std::optional<gl::testing::BackwardOverride<od::Mul>> mul_bug;
  std::optional<gl::testing::BackwardOverride<SmoothAbs>> smooth_bug;
  if (L.bug("mul_swapped"))
    mul_bug.emplace([](od::Mul& op, const GradList& g) {  // BUG: each operand gets its own value
      return GradList{op.needs_input_grad(0) ? g[0] * op.a_.unpack() : gl::Tensor(),
                      op.needs_input_grad(1) ? g[0] * op.b_.unpack() : gl::Tensor()};
    });
  if (L.bug("smooth_abs_grad"))
    smooth_bug.emplace([](SmoothAbs& op, const GradList& g) {  // BUG: y, not y + 1
      return GradList{g[0] * op.x_.unpack() / op.y_.unpack()};
    });
  g_assign_not_accumulate = L.bug("value_assign");
  g_preorder = L.bug("value_preorder");

  return L.run([&] {
    // -----------------------------------------------------------------------------------------
    L.section("1. one op struct: Mul, from its source");
    const std::string hpp = "src/gradlab/ops/internal/elementwise.hpp";
    const std::vector<std::string> src = read_lines(hpp);
    // The formula line, the struct, the name its nodes carry, its derivative, its forward and its
    // backward, in that order.
    const std::vector<std::string> wanted = {
        "// c = a * b          da = dc * b, db = dc * a",
        "struct Mul : BuiltinOp<Mul> {",
        "static constexpr const char* kName = \"MulBackward0\";",
        "return {in.want_a ? dc * in.b : T(), in.want_b ? dc * in.a : T()};",
        "return kern::binary(Binary::Mul, a, b);",
        "GradList backward(const GradList& g) { return binary_backward<Mul>(*this, g[0], a_, b_); "
        "}"};
    int at = 1;
    bool in_order = !src.empty();
    for (const std::string& w : wanted) {
      const int n = find_line(src, w, at);
      if (n == 0 || (at > 1 && n > at + 12)) {
        in_order = false;
        std::cout << hpp << ": not found after line " << at << ": " << w << "\n";
        continue;
      }
      std::cout << hpp << ":" << n << ": " << trim(src[n - 1]) << "\n";
      at = n + 1;
    }
    L.check(in_order,
            "the formula line, struct Mul, its kName, derivative, forward and backward are "
            "in elementwise.hpp, in that order, within a few lines of each other");
    const std::vector<std::string> row_src =
        read_lines("src/gradlab/testing/op_table/elementwise.cpp");
    const int row_line =
        find_line(row_src, "\"mul\", [](const Tensor& a, const Tensor& b) { return mul(a, b); },");
    if (row_line)
      std::cout << "src/gradlab/testing/op_table/elementwise.cpp:" << row_line << ": "
                << trim(row_src[row_line - 1]) << "\n";
    L.check(row_line > 0 && gl::testing::op_spec("mul").arity == 2,
            "the op table has a row \"mul\" (two differentiable inputs) that calls mul(a, b)");

    // The formula line must be true of the op that runs.
    gl::Tensor a = gl::tensor({1.5, -2.0, 0.5}, f64.requires_grad(true));
    gl::Tensor b = gl::tensor({4.0, 3.0, -1.0}, f64.requires_grad(true));
    gl::Tensor c = a * b;
    const gl::Tensor dc = gl::tensor({1.0, 10.0, 100.0}, f64);
    c.backward(dc);
    std::cout << "c = a * b: c.grad_fn() = " << c.grad_fn()->name() << ", with "
              << c.grad_fn()->next_edges().size() << " next edges (one per input)\n"
              << "a = " << vec_str(a.to_vector<double>())
              << "  b = " << vec_str(b.to_vector<double>())
              << "  dc = " << vec_str(dc.to_vector<double>())
              << "\na.grad = " << vec_str(a.grad().to_vector<double>())
              << "  b.grad = " << vec_str(b.grad().to_vector<double>()) << "\n";
    L.check(c.grad_fn()->name() == "MulBackward0" && c.grad_fn()->next_edges().size() == 2,
            "c's grad_fn is a MulBackward0 node (the kName quoted above) with one edge per input");
    L.check(a.grad().to_vector<double>() == (dc * b).to_vector<double>() &&
                b.grad().to_vector<double>() == (dc * a).to_vector<double>(),
            "a.grad = dc * b and b.grad = dc * a exactly, as the formula line says");
    {
      gl::testing::GeneratorDraw draw(19);
      const auto& spec = gl::testing::op_spec("mul");
      int passed = 0;
      for (int i = 0; i < 10; ++i) {
        const auto cs = spec.sample(draw);
        passed +=
            gl::testing::gradcheck(spec.bind(cs.params), gl::testing::differentiable_inputs(cs),
                                   spec.options().raise_exception(false))
                .ok;
      }
      std::cout << "the table's row \"mul\": gradcheck on 10 drawn cases (" << spec.shapes
                << "): " << passed << " passed\n";
      L.check(passed == 10, "gradcheck passes on all 10 cases the row \"mul\" draws");
    }

    // -----------------------------------------------------------------------------------------
    L.section("2. the engine loop: dependency counts and accumulation");
    // x -> h = tanh(x) -> p = sin(h), q = exp(h) -> y = p * q: h has two consumers.
    const double x0 = 0.6;
    gl::Tensor x = gl::tensor(x0, f64.requires_grad(true));
    gl::Tensor h = gl::tanh(x);
    gl::Tensor p = gl::sin(h), q = gl::exp(h);
    gl::Tensor y = p * q;
    // The graph, from y: its node's edges lead to p's and q's nodes, both of which lead to h's.
    const auto& ye = y.grad_fn()->next_edges();
    const bool diamond = ye.size() == 2 && ye[0].fn == p.grad_fn() && ye[1].fn == q.grad_fn() &&
                         p.grad_fn()->next_edges()[0].fn == h.grad_fn() &&
                         q.grad_fn()->next_edges()[0].fn == h.grad_fn();
    std::cout << y.grad_fn()->name() << " -> " << ye[0].fn->name() << ", " << ye[1].fn->name()
              << "; both -> " << p.grad_fn()->next_edges()[0].fn->name() << " -> "
              << h.grad_fn()->next_edges()[0].fn->name() << "\n";
    L.check(diamond,
            "p's and q's nodes both point to the same TanhBackward0 node (one node, two "
            "consumers)");
    // Hooks run when a node's gradient is complete, just before its backward: they show the order.
    std::vector<std::string> order;
    std::vector<double> h_grads;
    y.register_hook([&](const gl::Tensor&) { order.push_back("y"); });
    p.register_hook([&](const gl::Tensor&) { order.push_back("p"); });
    q.register_hook([&](const gl::Tensor&) { order.push_back("q"); });
    h.register_hook([&](const gl::Tensor& g) {
      order.push_back("h");
      h_grads.push_back(g.item<double>());
    });
    x.register_hook([&](const gl::Tensor&) { order.push_back("x"); });
    y.backward({}, /*retain_graph=*/true);
    std::string order_str;
    for (const auto& s : order) order_str += (order_str.empty() ? "" : " ") + s;
    std::cout << "order the hooks ran in: " << order_str << "\n";
    L.check(order.size() == 5 && order.front() == "y" && order[3] == "h" && order[4] == "x",
            "h's node runs once, after both its consumers p and q (its dependency count was 2)");
    L.check(order.size() == 5 && order[1] == "q" && order[2] == "p",
            "of the two ready nodes the later-made one (q) runs first, as PyTorch's ready queue");
    const double hv = std::tanh(x0);
    const double dy_dh = std::cos(hv) * std::exp(hv) + std::sin(hv) * std::exp(hv);
    const double dy_dx = dy_dh * (1 - hv * hv);
    std::cout << "dy/dh through p: cos(h) e^h = " << fmt("%.12f", std::cos(hv) * std::exp(hv))
              << "   through q: sin(h) e^h = " << fmt("%.12f", std::sin(hv) * std::exp(hv)) << "\n"
              << "gradient h's hook saw: " << fmt("%.12f", h_grads.empty() ? NAN : h_grads[0])
              << "   x.grad = " << fmt("%.12f", x.grad().item<double>()) << "\n";
    L.check(h_grads.size() == 1 && std::abs(h_grads[0] - dy_dh) < 1e-12,
            "the gradient reaching h is the sum of both paths, cos(h) e^h + sin(h) e^h (to 1e-12)");
    L.check(std::abs(x.grad().item<double>() - dy_dx) < 1e-12,
            "x.grad = (cos(h) + sin(h)) e^h (1 - h²) to 1e-12");
    const double first = x.grad().item<double>();
    y.backward();
    std::cout << "after a second backward (no zero_grad): x.grad = "
              << fmt("%.12f", x.grad().item<double>()) << "\n";
    L.check(std::abs(x.grad().item<double>() - 2 * first) < 1e-12,
            "a second backward adds into the leaf's .grad (the engine accumulates: 2x the first)");

    // -----------------------------------------------------------------------------------------
    L.section("3. writing an op: smooth_abs, gradcheck, its table row, a mutant");
    std::cout
        << "y = sqrt(x^2 + 1) - 1      dx = dy * x / (y + 1)     (struct SmoothAbs, above main)\n";
    gl::Tensor sx = gl::tensor({{-2.5, -0.3, 0.0}, {0.4, 1.0, 2.8}}, f64.requires_grad(true));
    gl::Tensor sy = smooth_abs(sx);
    std::cout << "smooth_abs(" << vec_str(sx.to_vector<double>())
              << ") = " << vec_str(sy.to_vector<double>()) << ", grad_fn " << sy.grad_fn()->name()
              << "\n";
    const auto rep =
        gl::testing::gradcheck(gl::testing::TensorFn([](const gl::TensorList& in) {
                                 return gl::TensorList{smooth_abs(in[0])};
                               }),
                               {sx}, gl::testing::GradcheckOptions().raise_exception(false));
    std::cout << "gradcheck: " << (rep.ok ? "passed" : "FAILED") << " (" << rep.mode << ", "
              << rep.comparisons << " comparisons"
              << (rep.ok ? "" : ", first failing check: " + rep.first_failure()) << ")\n";
    L.check(rep.ok && rep.verdict == gl::testing::Verdict::Passed,
            "gradcheck (float64, full Jacobian) accepts smooth_abs's backward");
    const auto rep2 = gl::testing::gradgradcheck(
        gl::testing::TensorFn(
            [](const gl::TensorList& in) { return gl::TensorList{smooth_abs(in[0])}; }),
        {sx}, {}, gl::testing::GradcheckOptions().raise_exception(false));
    L.check(rep2.ok,
            "gradgradcheck passes too: the backward is written with gradlab ops, so it is "
            "itself differentiable");

    const gl::testing::OpSpec spec = smooth_abs_row();
    const TableRun good = run_row(spec, 30, 7);
    std::cout << "row \"" << spec.name << "\" (" << spec.domain << "; " << spec.shapes
              << "): " << good.cases << " cases, gradcheck failed on " << good.gradcheck_failed
              << ", forward vs reference failed on " << good.reference_failed << "\n";
    L.check(good.cases == 30 && good.gradcheck_failed == 0 && good.reference_failed == 0,
            "the row's 30 drawn cases all pass gradcheck and match the plain-double reference");

    // The mutant: a backward that is right for x > 0 only (|x| where x belongs).
    TableRun bad;
    {
      gl::testing::BackwardOverride<SmoothAbs> mutant([](SmoothAbs& op, const GradList& g) {
        return GradList{g[0] * gl::abs(op.x_.unpack()) / (op.y_.unpack() + 1.0)};  // MUTANT
      });
      bad = run_row(spec, 30, 7);
    }
    std::cout << "mutant dx = dy * |x| / (y + 1): gradcheck failed on " << bad.gradcheck_failed
              << " of " << bad.cases << " cases (" << bad.with_negative
              << " have an x < 0); first: " << bad.first_failure << "\n";
    L.check(bad.gradcheck_failed == bad.with_negative && bad.failed_without_negative == 0 &&
                bad.with_negative > 0,
            "the row kills the mutant on exactly the cases with a negative x, and only those");
    L.check(bad.reference_failed == 0,
            "the mutant's forward still matches the reference: only a gradient check can see it");

    // -----------------------------------------------------------------------------------------
    L.section("4. a 60-line scalar engine, micrograd style, against gradlab");
    const double v1 = 0.8, v2 = -0.45;
    Value X1 = val(v1), X2 = val(v2);
    Value Y = expression(
        X1, X2, [](const Value& a) { return tanh(a); }, [](const Value& a) { return exp(a); },
        [](const Value& a, double k) { return pow(a, k); });
    backward(Y);
    gl::Tensor g1 = gl::tensor(v1, f64.requires_grad(true)),
               g2 = gl::tensor(v2, f64.requires_grad(true));
    gl::Tensor gy = expression(
        g1, g2, [](const gl::Tensor& a) { return gl::tanh(a); },
        [](const gl::Tensor& a) { return gl::exp(a); },
        [](const gl::Tensor& a, double k) { return gl::pow(a, k); });
    gy.backward();
    std::cout << "y = t * exp(t) + t^2 + x2^3,  t = tanh(x1 * x2 + x1),  x1 = 0.8, x2 = -0.45\n"
              << "Value engine: y = " << fmt("%.12f", Y->data)
              << "  dy/dx1 = " << fmt("%.12f", X1->grad) << "  dy/dx2 = " << fmt("%.12f", X2->grad)
              << "\n"
              << "gradlab:      y = " << fmt("%.12f", gy.item<double>())
              << "  dy/dx1 = " << fmt("%.12f", g1.grad().item<double>())
              << "  dy/dx2 = " << fmt("%.12f", g2.grad().item<double>()) << "\n";
    L.check(std::abs(Y->data - gy.item<double>()) < 1e-12,
            "the Value engine's y equals gradlab's to 1e-12");
    L.check(std::abs(X1->grad - g1.grad().item<double>()) < 1e-12 &&
                std::abs(X2->grad - g2.grad().item<double>()) < 1e-12,
            "the Value engine's gradients equal gradlab's to 1e-12 (x1 feeds two ops, t three)");
    // Its order, checked node by node: no node may run before one of its consumers.
    const std::vector<V*> ord = backward_order(Y);
    bool consumers_first = true;
    std::set<V*> done;
    for (V* n : ord) {
      for (V* m : ord)
        for (const Value& pv : m->prev)
          if (pv.get() == n && !done.count(m)) consumers_first = false;
      done.insert(n);
    }
    std::string ops;
    for (V* n : ord) ops += (ops.empty() ? "" : " ") + n->op;
    std::cout << "Value engine's order (" << ord.size() << " nodes): " << ops << "\n";
    L.check(consumers_first,
            "in the Value engine's order every node runs after all of its consumers "
            "(a topological order)");
  });
}
