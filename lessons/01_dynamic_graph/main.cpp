// Lesson 01: define-by-run graphs.
//
// gradlab, like PyTorch, records the autograd graph *while your code runs*: every op on a tensor
// that requires grad appends one backward node. So an ordinary `if` or `while` decides which nodes
// exist, you can print any intermediate, every call builds a fresh graph, and a shape mismatch
// stops the forward at the op that makes it (gl::ShapeError, right at that line).

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/figures.hpp"  // and common/lesson.hpp

namespace gl = gradlab;

namespace {

// How many nodes of the graph behind `root` have the name `name` (one line each in
// graph_summary; a line starts with the node's name).
int count_named(const gl::Tensor& root, const std::string& name) {
  std::istringstream lines(gl::autograd::graph_summary(root));
  int n = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name, 0) == 0 && (line.size() == name.size() || line[name.size()] == ' ')) ++n;
  return n;
}

bool same_values(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol)) return false;
  return true;
}

std::string str(const std::vector<float>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "]";
}

// The model of this lesson. In PyTorch:
//
//   def forward(x):
//       h = x * 2
//       if h.sum() > 0:              # a plain Python `if`, decided by the data
//           y = torch.relu(h)        # branch A
//       else:
//           y = torch.tanh(h) * h    # branch B
//       return y.sum()
//
// `branch` reports which way the `if` went, so the lesson can check it.
int relu_line = 0;  // the source line of the relu call below (checked against the DOT dump)
gl::Tensor forward(const gl::Tensor& x, char* branch) {
  gl::Tensor h = x * 2;
  gl::Tensor y;
  if (h.sum().item<float>() > 0) {  // .item() reads a number out: ordinary C++ decides
    *branch = 'A';
    relu_line = __LINE__ + 1;  // the next line
    y = gl::relu(h);
  } else {
    *branch = 'B';
    y = gl::tanh(h) * h;
  }
  return y.sum();
}

// Writes the DOT text of `root`'s graph to the lesson's output folder; returns the path.
std::filesystem::path dump_dot(const gl::Tensor& root, const std::string& file,
                               const std::string& title) {
  const std::filesystem::path path = lesson::output_dir() / file;
  std::ofstream(path) << gl::autograd::to_dot(root, title);
  return path;
}

// The first line of `text` that contains `needle` ("" if none).
std::string line_with(const std::string& text, const std::string& needle) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

// Runs `f`, which should throw gl::ShapeError, and returns the message ("" when nothing is
// thrown; another exception type is reported as such).
template <class F>
std::string shape_error_of(F&& f) {
  try {
    f();
  } catch (const gl::ShapeError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a gl::ShapeError) ") + e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L("01", "dynamic graph (define-by-run)", argc, argv,
                   {{"shapeless_error",
                     "matmul's error is replaced by one that names only the op ('matmul: shapes "
                     "cannot be multiplied'), as a library that loses the shapes would",
                     "a @ w throws gl::ShapeError naming"}});
  return L.run([&] {
    // ---------------------------------------------------------------------------------------
    L.section("1. intermediates are real tensors you can print");
    // x = torch.tensor([[1., -2.], [3., 0.5]], requires_grad=True)
    gl::Tensor x = gl::tensor({{1.0, -2.0}, {3.0, 0.5}}, gl::requires_grad());
    gl::Tensor h = x * 2;  // h = x * 2
    gl::Tensor r = gl::relu(h);
    std::cout << "x = " << x << "\n";
    std::cout << "h = x * 2 = " << h << "\n";
    std::cout << "relu(h)   = " << r << "\n";
    L.check(
        same_values(h.to_vector<float>(), {2, -4, 6, 1}),
        "h already holds its values (2, -4, 6, 1) before any backward: the forward ran eagerly");
    L.check(h.str().find("grad_fn=<MulBackward0>") != std::string::npos,
            "printing h shows grad_fn=<MulBackward0>, the node that will compute its gradient");
    L.check(x.str().find("requires_grad=True") != std::string::npos && x.grad_fn() == nullptr,
            "x prints requires_grad=True and has no grad_fn: it is a leaf made by the user");
    L.check(
        r.grad_fn() && r.grad_fn()->name() == "ReluBackward0" &&
            r.grad_fn()->next_edges().size() == 1 && r.grad_fn()->next_edges()[0].fn == h.grad_fn(),
        "relu(h).grad_fn points back at h.grad_fn: the graph is a chain of nodes built as we go");

    // ---------------------------------------------------------------------------------------
    L.section("2. an if in forward changes the graph");
    gl::Tensor xa = gl::tensor({{1.0, -2.0}, {3.0, 0.5}}, gl::requires_grad());   // sum(2x) = 5
    gl::Tensor xb = gl::tensor({{-1.0, 2.0}, {-3.0, 0.5}}, gl::requires_grad());  // sum(2x) = -3
    char branch_a = '?', branch_b = '?';
    gl::Tensor la = forward(xa, &branch_a);
    gl::Tensor lb = forward(xb, &branch_b);
    std::cout << "forward(xa) took branch " << branch_a << ", loss = " << la << "\n";
    std::cout << "graph of branch A (graph_summary, one node per line):\n"
              << gl::autograd::graph_summary(la);
    std::cout << "forward(xb) took branch " << branch_b << ", loss = " << lb << "\n";
    std::cout << "graph of branch B:\n" << gl::autograd::graph_summary(lb);
    const size_t na = gl::autograd::count_nodes(la), nb = gl::autograd::count_nodes(lb);
    std::cout << "nodes: branch A = " << na << ", branch B = " << nb << "\n";
    // The branch is decided by gradlab's sum(2x); the losses are checked against the math of
    // the branch the data should select: A: sum(relu(2x)) = 2 + 6 + 1 = 9,
    // B: sum(tanh(2x) * 2x) over 2x = (-2, 4, -6, 1).
    double loss_b_math = 0;
    for (double h : {-2.0, 4.0, -6.0, 1.0}) loss_b_math += std::tanh(h) * h;
    L.check(branch_a == 'A' && branch_b == 'B' && (xa * 2).sum().item<float>() == 5.0f &&
                (xb * 2).sum().item<float>() == -3.0f && std::abs(la.item<double>() - 9.0) < 1e-5 &&
                std::abs(lb.item<double>() - loss_b_math) < 1e-5,
            "the data decided the branch: sum(2x) = 5 sends xa to A (loss 9), -3 sends xb to B "
            "(loss sum(tanh(2x) * 2x))");
    // A: Sum <- Relu <- Mul <- AccumulateGrad(x)
    L.check(na == 4 && count_named(la, "ReluBackward0") == 1 &&
                count_named(la, "MulBackward0") == 1 && count_named(la, "AccumulateGrad") == 1,
            "branch A recorded 4 nodes: sum, relu, the mul of x * 2, and x's AccumulateGrad");
    // B: Sum <- Mul(tanh(h), h) <- {Tanh <- Mul(x*2), Mul(x*2)} <- AccumulateGrad(x)
    L.check(nb == 5 && count_named(lb, "TanhBackward0") == 1 &&
                count_named(lb, "MulBackward0") == 2 && count_named(lb, "ReluBackward0") == 0,
            "branch B recorded 5 nodes: sum, mul, tanh, the mul of x * 2, AccumulateGrad; no relu");

    // Backward follows whichever graph was recorded. By hand:
    //   A: L = sum(relu(2x))        dL/dx = 2 * (2x > 0)
    //   B: L = sum(tanh(2x) * 2x)   dL/dx = 2 * (tanh(h) + h * (1 - tanh(h)^2)),  h = 2x
    la.backward();
    lb.backward();
    std::vector<float> want_a, want_b;
    for (float v : xa.to_vector<float>()) want_a.push_back(2.0f * v > 0 ? 2.0f : 0.0f);
    for (float v : xb.to_vector<float>()) {
      const float hv = 2 * v, t = std::tanh(hv);
      want_b.push_back(2 * (t + hv * (1 - t * t)));
    }
    std::cout << "xa.grad = " << xa.grad() << "   by hand: " << str(want_a) << "\n";
    std::cout << "xb.grad = " << xb.grad() << "   by hand: " << str(want_b) << "\n";
    L.check(same_values(xa.grad().to_vector<float>(), want_a, 1e-6f),
            "xa.grad = 2 * (2x > 0): backward went through relu, the branch that ran");
    L.check(same_values(xb.grad().to_vector<float>(), want_b, 1e-5f),
            "xb.grad = 2 * (tanh(h) + h * (1 - tanh(h)^2)): backward went through tanh * h");

    // ---------------------------------------------------------------------------------------
    L.section("3. a data-dependent loop: the graph is as deep as the loop ran");
    // y = x
    // while y.norm() < 100:
    //     y = y * 2
    gl::Tensor xl = gl::tensor({0.5, 1.0}, gl::requires_grad());
    gl::Tensor y = xl;
    int steps = 0;
    while (gl::norm(y).item<float>() < 100) {
      y = y * 2;
      ++steps;
    }
    gl::Tensor loss = y.sum();
    const size_t nl = gl::autograd::count_nodes(loss);
    std::cout << "the loop ran " << steps << " times; nodes in the graph of y.sum(): " << nl
              << "\n";
    loss.backward();
    std::cout << "xl.grad = " << xl.grad() << "   (2^" << steps << " = " << (1 << steps) << ")\n";
    L.check(steps == 7, "|x| = 1.118 doubles 7 times before it passes 100 (1.118 * 2^7 = 143)");
    L.check(nl == static_cast<size_t>(steps) + 2 && count_named(loss, "MulBackward0") == steps,
            "the graph holds one MulBackward0 per iteration, plus the sum and x's AccumulateGrad");
    L.check(same_values(xl.grad().to_vector<float>(), {128.0f, 128.0f}),
            "d sum(x * 2^7) / dx = 2^7 = 128 for every element");

    // ---------------------------------------------------------------------------------------
    L.section("4. every call builds a fresh graph; no requires_grad, no graph");
    char b1 = '?', b2 = '?';
    gl::Tensor l1 = forward(xa, &b1);
    gl::Tensor l2 = forward(xa, &b2);
    L.check(l1.grad_fn() != nullptr && l2.grad_fn() != nullptr && l1.grad_fn() != l2.grad_fn(),
            "calling forward twice on the same input records two separate graphs");
    gl::Tensor plain = gl::tensor({{1.0, -2.0}, {3.0, 0.5}});  // requires_grad defaults to false
    char bp = '?';
    gl::Tensor lp = forward(plain, &bp);
    std::cout << "forward(plain) = " << lp
              << "  graph_summary: " << gl::autograd::graph_summary(lp);
    L.check(
        lp.grad_fn() == nullptr && gl::autograd::count_nodes(lp) == 0 && !lp.requires_grad(),
        "with no input requiring grad, forward records nothing (0 nodes): no graph cost at all");

    // ---------------------------------------------------------------------------------------
    L.section("5. dump the graph to Graphviz DOT");
    char bd = '?';
    gl::Tensor xd = gl::tensor({{1.0, -2.0}, {3.0, 0.5}}, gl::requires_grad());
    gl::Tensor ld_a = forward(xd, &bd);
    gl::Tensor xe = gl::tensor({{-1.0, 2.0}, {-3.0, 0.5}}, gl::requires_grad());
    gl::Tensor ld_b = forward(xe, &bd);
    const auto path_a = dump_dot(ld_a, "01_branch_a.dot", "lesson 01: branch A");
    const auto path_b = dump_dot(ld_b, "01_branch_b.dot", "lesson 01: branch B");
    const std::string dot_a = read_file(path_a), dot_b = read_file(path_b);
    std::cout << "wrote " << path_a.string() << " and " << path_b.string() << "\n";
    std::cout << "render with: dot -Tpng " << path_a.string() << " -o branch_a.png\n";
    std::cout << dot_a;
    // The README shows both graphs as pictures (tools/make_lesson_figures.py; Graphviz's dot).
    LESSON_FIGURE("branch_a.svg", gl::graph_view(ld_a, "lesson 01: branch A"));
    LESSON_FIGURE("branch_b.svg", gl::graph_view(ld_b, "lesson 01: branch B"));
    L.check(dot_a.rfind("digraph", 0) == 0 && dot_a.find("ReluBackward0") != std::string::npos &&
                dot_a.find("TanhBackward0") == std::string::npos,
            "branch A's DOT file is a digraph with a ReluBackward0 box and no TanhBackward0");
    L.check(dot_b.find("TanhBackward0") != std::string::npos &&
                dot_b.find("ReluBackward0") == std::string::npos,
            "branch B's DOT file has a TanhBackward0 box and no ReluBackward0");
    L.check(line_with(dot_a, "ReluBackward0").find("main.cpp:" + std::to_string(relu_line)) !=
                std::string::npos,
            "each box names the line of main.cpp where its op was called (relu: line " +
                std::to_string(relu_line) + ")");
    const std::string leaf = line_with(dot_a, "leaf [2, 2] float32");
    L.check(leaf.find("shape=ellipse") != std::string::npos &&
                leaf.find("requires_grad") != std::string::npos,
            "the leaf x appears as an ellipse labelled with its shape, dtype and requires_grad");

    // ---------------------------------------------------------------------------------------
    L.section("6. a shape mismatch stops the forward at the op that cannot run");
    // a = torch.tensor([[1., 2., 3.], [4., 5., 6.]]); w = torch.tensor([[1., 0., 1.], [0., 1., 0.]])
    // a @ w   -> RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)
    gl::Tensor a = gl::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, gl::requires_grad());
    gl::Tensor w = gl::tensor({{1.0, 0.0, 1.0}, {0.0, 1.0, 0.0}});
    L.say("The graph is built as the code runs, so a wrong shape fails at the very op that gets\n"
          "it, with a gl::ShapeError: <op>: <what>; expected <X>, got <Y>; hint: <what to do>.");
    const std::string mm_error = shape_error_of([&] {
      if (!L.bug("shapeless_error")) return (void)a.matmul(w);
      try {
        (void)a.matmul(w);
      } catch (const gl::ShapeError&) {  // BUG: the message loses the shapes and the hint
        throw gl::ShapeError("matmul: shapes cannot be multiplied");
      }
    });
    std::cout << "a " << gl::shape_str(a.sizes()) << " @ w " << gl::shape_str(w.sizes())
              << " -> gl::ShapeError: " << mm_error << "\n";
    L.check(mm_error.rfind("matmul: ", 0) == 0 && has(mm_error, "expected inner dims to match") &&
                has(mm_error, "got [2, 3] @ [2, 3]") && has(mm_error, "; hint: transpose"),
            "a @ w throws gl::ShapeError naming the op (matmul), what it expected (inner dims "
            "to match), the shapes it found ([2, 3] @ [2, 3]) and a hint (transpose one operand)");
    gl::Tensor aw = a.matmul(w.t());  // the fix the hint names: [2, 3] @ [3, 2]
    std::cout << "fix: a @ w.t() = " << aw << "\n";
    L.check(aw.sizes() == gl::Shape{2, 2} && same_values(aw.to_vector<float>(), {4, 2, 10, 5}) &&
                aw.grad_fn() && aw.grad_fn()->name() == "MmBackward0",
            "the fix a @ w.t() runs: [2, 3] @ [3, 2] = [2, 2] = [[4, 2], [10, 5]], recorded as "
            "MmBackward0");
    // a + torch.tensor([10., 20.])   -> RuntimeError: The size of tensor a (3) must match ...
    gl::Tensor bias = gl::tensor({10.0, 20.0});  // one value per row, but shaped [2]
    const std::string add_error = shape_error_of([&] { (void)(a + bias); });
    std::cout << "a " << gl::shape_str(a.sizes()) << " + bias " << gl::shape_str(bias.sizes())
              << " -> gl::ShapeError: " << add_error << "\n";
    L.check(add_error.rfind("add: ", 0) == 0 && has(add_error, "size of a (3) must match size of b (2)") &&
                has(add_error, "expected broadcastable shapes, got [2, 3] and [2]") &&
                has(add_error, "; hint: "),
            "a + bias throws gl::ShapeError naming the op (add), the clashing sizes (3 vs 2), "
            "the shapes ([2, 3] and [2]) and a hint: shapes broadcast from the last dim");
    gl::Tensor shifted = a + bias.reshape({2, 1});  // [2, 3] + [2, 1]: one value per row
    std::cout << "fix: a + bias.reshape({2, 1}) = " << shifted << "\n";
    L.check(shifted.sizes() == gl::Shape{2, 3} &&
                same_values(shifted.to_vector<float>(), {11, 12, 13, 24, 25, 26}),
            "the fix bias.reshape({2, 1}) broadcasts one value per row: [[11, 12, 13], [24, 25, 26]]");
  });
}
