// Lesson 04: autograd pitfalls.
//
// Six mistakes that every PyTorch user makes once, each shown, caught and explained:
//   1. a target computed from the model without detach() (gradients flow into the target);
//   2. an in-place write to a leaf that requires grad;
//   3. a tensor saved for backward, modified in place before backward runs;
//   4. `x = x + 1` (a new tensor) versus `x += 1` (a write into x's storage);
//   5. `x[0] = 2` (index_put_, or a write through a view) on a tensor that requires grad;
//   6. a running sum of losses without detach(), which keeps every step's graph in memory.
// Each error is caught, its message printed, and the message's key parts checked.

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <gradlab/ops/internal/elementwise.hpp>
#include <gradlab/testing/mutants.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
using lesson::fmt;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// Runs f, returns the exception message ("" when nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  // Break-it switches: three mistakes of the lesson's own code, and one gradlab bug.
  lesson::Lesson L(
      "04", "autograd pitfalls", argc, argv,
      {{"no_detach_target", "section 1's fixed target is w * x2 without .detach()",
        "with detach() it is 2(wx - c)x"},
       {"skip_clone", "section 3's fix writes into e itself instead of e.clone()",
        "writing into e.clone() instead leaves the saved e alone"},
       {"overwrite_grad_leaks",
        "Where's backward (which x[0] = 2 records) sends dy to both branches, so the overwritten "
        "element still gets a gradient",
        "x.grad = [0, 4, 6]: 0 where y was overwritten"},
       {"running_sum_no_detach", "section 6's 'fixed' loop still sums loss, not loss.detach()",
        "with detach it stays flat"}});
  std::optional<gl::testing::BackwardOverride<gl::ops_detail::Where>> where_bug;
  if (L.bug("overwrite_grad_leaks"))
    where_bug.emplace([](gl::ops_detail::Where& op, const gl::autograd::GradList& g) {
      // BUG: da = db = dy, whatever the condition
      return gl::autograd::GradList{gl::Tensor(), op.needs_input_grad(1) ? g[0] : gl::Tensor(),
                                    op.needs_input_grad(2) ? g[0] : gl::Tensor()};
    });
  return L.run([&] {
    // -----------------------------------------------------------------------------------------
    L.section("1. requires_grad spreads; detach() fixes a target");
    // A one-parameter model pred = w * x, trained toward a "bootstrapped" target computed by the
    // same model on another input (as in TD learning or self-distillation): target = w * x2.
    const double w0 = 0.5, xv = 2.0, x2v = 3.0;
    gl::Tensor w = gl::tensor(w0, f64.requires_grad(true));
    gl::Tensor x = gl::tensor(xv, f64), x2 = gl::tensor(x2v, f64);
    gl::Tensor target = w * x2;  // requires grad: w does
    std::cout << "target = w * x2 = " << target << "\n";
    L.check(target.requires_grad(),
            "a target computed from w requires grad: requires_grad spreads through every op");
    gl::Tensor loss = (w * x - target).pow(2);
    loss.backward();
    const double without = w.grad().item<double>();
    // d/dw (w x - w x2)² = 2 (w x - w x2)(x - x2): the gradient also moves the target.
    const double want_without = 2 * (w0 * xv - w0 * x2v) * (xv - x2v);
    w.zero_grad();
    gl::Tensor fixed = L.bug("no_detach_target") ? w * x2              // BUG: the detach forgotten
                                                 : (w * x2).detach();  // target = (w * x2).detach()
    gl::Tensor loss2 = (w * x - fixed).pow(2);
    loss2.backward();
    const double with = w.grad().item<double>();
    // d/dw (w x - c)² = 2 (w x - c) x: the target is a constant.
    const double want_with = 2 * (w0 * xv - w0 * x2v) * xv;
    std::cout << "without detach: w.grad = " << fmt("%.6g", without)
              << "   with detach: w.grad = " << fmt("%.6g", with) << "\n";
    L.check(std::abs(without - want_without) < 1e-12,
            "without detach() the gradient is 2(wx - wx2)(x - x2) = " + fmt("%.6g", want_without) +
                ": it also pulls the target");
    L.check(std::abs(with - want_with) < 1e-12,
            "with detach() it is 2(wx - c)x = " + fmt("%.6g", want_with) +
                ": the target is a constant, as intended");
    L.check(!fixed.requires_grad() && fixed.is_leaf() && fixed.grad_fn() == nullptr,
            "the detached target is a leaf with no grad_fn that does not require grad");
    w.zero_grad();

    // -----------------------------------------------------------------------------------------
    L.section("2. An in-place write to a leaf that requires grad");
    gl::Tensor p = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    std::string err = error_of([&] {
      p.add_(gl::tensor({0.5, 0.5}, f64));
    });  // a "manual SGD step" done wrong
    std::cout << "p.add_(...) -> " << err << "\n";
    L.check(has(err, "a leaf Variable that requires grad is being used in an in-place operation"),
            "writing into a leaf that requires grad is an error (PyTorch's wording)");
    L.check(has(err, "hint: wrap parameter updates in NoGradGuard"),
            "the message says how to do it instead");
    // Why: p's old value may be needed by backward, and p.grad must stay the gradient at the
    // point where the graph was recorded. An optimizer step is not part of the model: no graph.
    {
      gl::NoGradGuard no_grad;
      p.sub_(gl::tensor({0.5, 0.5}, f64));
    }
    L.check(
        p.to_vector<double>() == std::vector<double>{0.5, 1.5} && p.requires_grad() && p.is_leaf(),
        "inside NoGradGuard the same write works, and p stays a leaf that requires grad");

    // -----------------------------------------------------------------------------------------
    L.section("3. A tensor saved for backward, modified before backward runs");
    gl::Tensor a = gl::tensor({0.0, 1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor e = a.exp();  // ExpBackward saves its output e: d exp(a)/da = exp(a) = e
    gl::Tensor s = (e * 2.0).sum();
    const int write_line = __LINE__ + 1;
    e.add_(1.0);  // e is not a leaf, so this is allowed... but e was saved
    std::cout << "e.version() after the write = " << e.version() << "\n";
    err = error_of([&] { s.backward(); });
    std::cout << "backward -> " << err << "\n";
    L.check(e.version() == 1, "every in-place write bumps the tensor's version counter (0 -> 1)");
    L.check(has(err,
                "one of the variables needed for gradient computation has been modified by an "
                "inplace operation"),
            "backward notices the saved tensor changed and refuses, with PyTorch's message");
    L.check(has(err, "output 0 of ExpBackward0") && has(err, "is at version 1; expected version 0"),
            "it names the saved tensor (output 0 of ExpBackward0) and the versions");
    L.check(has(err, "main.cpp:" + std::to_string(write_line)),
            "and gradlab names the line of the write (main.cpp:" + std::to_string(write_line) +
                "): the culprit");
    // The fix: write into a copy (or out of place), and backward sees the value it saved.
    gl::Tensor a2 = gl::tensor({0.0, 1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor e2 = a2.exp();
    gl::Tensor s2 = (e2 * 2.0).sum();
    gl::Tensor shown = L.bug("skip_clone") ? e2 : e2.clone();  // BUG: the clone skipped
    shown.add_(1.0);
    err = error_of([&] { s2.backward(); });
    if (!err.empty()) std::cout << "backward -> " << err.substr(0, err.find('\n')) << "\n";
    L.check(
        err.empty() && gl::allclose(a2.grad(), a2.detach().exp() * 2.0, 1e-15, 0),
        "writing into e.clone() instead leaves the saved e alone: backward works, grad = 2 exp(a)");

    // -----------------------------------------------------------------------------------------
    L.section("4. x = x + 1 versus x += 1");
    gl::Tensor b = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor h = b.exp();
    gl::Tensor h_before = h;  // a second handle to the same tensor
    h = h + 1;                // out of place: a NEW tensor; the name h now points to it
    L.check(
        !h.is_same_storage(h_before) && h_before.version() == 0,
        "h = h + 1 makes a new tensor: the old one (saved by ExpBackward) is untouched, version 0");
    h.sum().backward();
    L.check(gl::allclose(b.grad(), b.detach().exp(), 1e-15, 0),
            "so backward works: d/db sum(exp(b) + 1) = exp(b)");

    gl::Tensor c = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor k = c.exp();
    gl::Tensor k_before = k;
    k += 1;  // in place: writes into the storage ExpBackward saved
    L.check(k.is_same_storage(k_before) && k_before.version() == 1 &&
                k.grad_fn()->name() == "AddBackward0",
            "k += 1 writes into the same storage (version 1) and rebases k's history onto an "
            "AddBackward0");
    err = error_of([&] { k.sum().backward(); });
    std::cout << "backward after k += 1 -> " << err << "\n";
    L.check(
        has(err, "modified by an inplace operation") && has(err, "ExpBackward0"),
        "backward then fails: exp's saved output was overwritten (the same error as in section 3)");

    // On a leaf, += is the error of section 2; and `x = x + 1` silently moves the name off the
    // leaf.
    gl::Tensor leaf = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    err = error_of([&] { leaf += 1; });
    std::cout << "leaf += 1 -> " << err << "\n";
    L.check(has(err, "a leaf Variable that requires grad"),
            "leaf += 1 on a leaf that requires grad is refused");
    gl::Tensor original = leaf;
    leaf = leaf + 1;  // legal, but `leaf` is no longer the leaf
    (leaf * leaf).sum().backward();
    L.check(!leaf.is_leaf() && !leaf.grad().defined() && original.grad().defined(),
            "after leaf = leaf + 1 the name holds a non-leaf: its .grad stays empty, the gradient "
            "is on the original");
    L.check(gl::allclose(original.grad(), (original.detach() + 1) * 2.0, 1e-15, 0),
            "the original leaf got d/dx sum((x + 1)²) = 2(x + 1), as the math says");

    // -----------------------------------------------------------------------------------------
    L.section("5. x[0] = 2: indexed assignment on a tensor that requires grad");
    L.say(
        "PyTorch's x[0] = 2 is index_put_ (rows by an int64 list, or a bool mask); writing "
        "through");
    L.say("a view, x.select(0, 0).fill_(2), is the other spelling. Both are in-place writes.");
    const gl::Tensor row0 = gl::tensor({int64_t{0}});  // the index list [0]
    gl::Tensor q = gl::tensor({1.0, 2.0, 3.0}, f64.requires_grad(true));
    err = error_of([&] { q.index_put_(row0, 2.0); });  // x[0] = 2
    std::cout << "leaf: q.index_put_([0], 2) -> " << err << "\n";
    L.check(
        has(err, "index_put_: a leaf Variable that requires grad is being used in an in-place") &&
            has(err, "hint: wrap parameter updates in NoGradGuard"),
        "on a leaf that requires grad x[0] = 2 is refused: the message names index_put_ and "
        "gives the NoGradGuard hint");
    err = error_of([&] { q.select(0, 0).fill_(2.0); });  // x[0].fill_(2)
    std::cout << "leaf: q.select(0, 0).fill_(2) -> " << err << "\n";
    L.check(has(err, "fill_: a view of a leaf Variable that requires grad") &&
                has(err, "hint: wrap the write in NoGradGuard, or clone() before writing"),
            "through a view of the leaf it is refused too, naming fill_, with its hint");
    L.check(q.version() == 0 && gl::equal(q.detach(), gl::tensor({1.0, 2.0, 3.0}, f64)),
            "both refusals left the leaf unchanged (version 0, values [1, 2, 3])");

    // On a non-leaf copy the write is recorded: the overwritten element gets gradient 0.
    gl::Tensor xq = gl::tensor({1.0, 2.0, 3.0}, f64.requires_grad(true));
    gl::Tensor yq = xq * 1;    // y = x * 1
    yq.index_put_(row0, 2.0);  // y[0] = 2
    std::cout << "non-leaf: y = x * 1; y[0] = 2 -> y = " << yq << "\n";
    (yq * yq)
        .sum()
        .backward();  // d/dx sum(y^2) = 2y where y came from x, 0 where it was overwritten
    std::cout << "x.grad = " << xq.grad() << "\n";
    L.check(gl::equal(yq.detach(), gl::tensor({2.0, 2.0, 3.0}, f64)) &&
                yq.grad_fn()->name() == "WhereBackward0",
            "on the non-leaf y = x * 1, y[0] = 2 works and is recorded (y = [2, 2, 3])");
    L.check(gl::equal(xq.grad(), gl::tensor({0.0, 4.0, 6.0}, f64)),
            "x.grad = [0, 4, 6]: 0 where y was overwritten (2 does not depend on x), 2y elsewhere");

    // Writing through a view of a non-leaf: as in PyTorch, the base's history is rebased through
    // a CopySlices node, and the gradient is 0 where the view overwrote it.
    gl::Tensor x_view = gl::tensor({1.0, 2.0, 3.0}, f64.requires_grad(true));
    gl::Tensor y_view = x_view * 1;
    y_view.select(0, 0).fill_(2.0);  // y[0] = 2 through a view
    std::cout << "non-leaf view: y = x * 1; y.select(0, 0).fill_(2) -> y = " << y_view << "\n";
    (y_view * y_view).sum().backward();
    std::cout << "x.grad = " << x_view.grad() << "\n";
    L.check(y_view.grad_fn()->name() == "CopySlices" && gl::equal(y_view.detach(), gl::tensor({2.0, 2.0, 3.0}, f64)),
            "through a view of the non-leaf y the write works too; y's node is CopySlices, as in PyTorch");
    L.check(gl::equal(x_view.grad(), gl::tensor({0.0, 4.0, 6.0}, f64)),
            "and the gradient is the same [0, 4, 6]: 0 where the view overwrote y");
    // The workaround: out of place, y = x.masked_fill(mask, 2)  (or torch.where(mask, 2, x)).
    gl::Tensor xm = gl::tensor({1.0, 2.0, 3.0}, f64.requires_grad(true));
    gl::Tensor xw = gl::tensor({1.0, 2.0, 3.0}, f64.requires_grad(true));
    const gl::Tensor first = gl::tensor({true, false, false});
    gl::Tensor ym = (xm * 1).masked_fill(first, 2.0);  // y = (x * 1).masked_fill(mask, 2)
    gl::Tensor yw = gl::where(first, 2.0, xw * 1);     // y = torch.where(mask, 2., x * 1)
    (ym * ym).sum().backward();
    (yw * yw).sum().backward();
    std::cout << "out of place: masked_fill -> " << ym << ", x.grad = " << xm.grad()
              << "\n              where       -> " << yw << ", x.grad = " << xw.grad() << "\n";
    L.check(gl::equal(ym.detach(), gl::tensor({2.0, 2.0, 3.0}, f64)) &&
                gl::equal(yw.detach(), ym.detach()),
            "the workaround masked_fill(mask, 2) / where(mask, 2, y) gives the same y = [2, 2, 3]");
    L.check(
        gl::equal(xm.grad(), gl::tensor({0.0, 4.0, 6.0}, f64)) &&
            gl::equal(xw.grad(), gl::tensor({0.0, 4.0, 6.0}, f64)),
        "and the same gradient [0, 4, 6] as y[0] = 2 on the copy: 0 at the overwritten element");

    // -----------------------------------------------------------------------------------------
    L.section("6. The memory cost of a forgotten detach");
    L.say("total = total + loss keeps every step's graph reachable from total, and with it the");
    L.say(
        "tensors each node saved for backward. total + loss.detach() (or loss.item()) keeps a "
        "number.");
    gl::Tensor w6 = gl::full({1024}, 0.01, f64.requires_grad(true));
    // Bytes that stay allocated after `steps` steps of a loop that sums the loss for a report.
    auto kept_after = [&](int steps, bool detach) {
      const std::size_t before = gl::memory::allocated();
      gl::Tensor total = gl::tensor(0.0, f64);
      for (int i = 0; i < steps; ++i) {
        gl::Tensor batch = gl::full({1024}, 1.0 + i, f64);  // a fresh [1024] float64 batch: 8 KiB
        gl::Tensor loss = (w6 * batch).tanh().pow(2).mean();
        total = total + (detach ? loss.detach() : loss);
      }
      const std::size_t after = gl::memory::allocated();
      return static_cast<double>(after) - static_cast<double>(before);
    };
    const double kept10 = kept_after(10, false), kept20 = kept_after(20, false);
    const bool detach = !L.bug("running_sum_no_detach");  // BUG: still total + loss
    const double flat10 = kept_after(10, detach), flat20 = kept_after(20, detach);
    const double per_step = (kept20 - kept10) / 10, per_step_detached = (flat20 - flat10) / 10;
    std::cout << "without detach: kept after 10 steps " << kept10 << " B, after 20 steps " << kept20
              << " B (" << per_step << " B per step)\n"
              << "with detach:    kept after 10 steps " << flat10 << " B, after 20 steps " << flat20
              << " B (" << per_step_detached << " B per step)\n";
    L.check(per_step > 8192,
            "without detach the memory kept grows with the steps: more than 8 KiB (one batch) per "
            "step");
    L.check(std::abs(flat20 - flat10) < 256 && flat20 < 256,
            "with detach it stays flat: under 256 bytes kept, after 10 or 20 steps alike");
  });
}
