// Lesson 02: tensors and autograd.
//
// requires_grad and how it spreads through ops, detach(), NoGradGuard, backward() and the chain
// rule (worked by hand here and compared with the engine), leaf vs non-leaf .grad, retain_grad(),
// gradients that accumulate across backward calls until zero_grad() (and why: two half-batches
// give the full batch's gradient), and broadcasting/indexing, whose gradients come back in the
// operand's shape.
//
// Every step shows the PyTorch line it mirrors in a comment. float64 is used where the lesson
// compares with hand-computed numbers, so the comparisons can be tight (1e-12).

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/lesson.hpp"

namespace gl = gradlab;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);
const gl::TensorOptions f64_grad = gl::dtype(gl::kFloat64).requires_grad(true);

bool is(const gl::Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  if (!t.defined() || t.numel() != static_cast<int64_t>(want.size())) return false;
  const std::vector<double> got = t.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol)) return false;
  return true;
}

}  // namespace

int main() {
  lesson::Lesson L("02", "tensors and autograd");
  return L.run([&] {
    // ---------------------------------------------------------------------------------------
    L.section("1. requires_grad, and how it propagates");
    // x = torch.tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)
    // w = torch.tensor([0.5, -1., 2.], dtype=torch.float64)
    gl::Tensor x = gl::tensor({1.0, 2.0, 3.0}, f64_grad);
    gl::Tensor w = gl::tensor({0.5, -1.0, 2.0}, f64);
    gl::Tensor y = x * w;  // y = x * w
    gl::Tensor z = w * 3;  // z = w * 3
    std::cout << "x = " << x << "\nw = " << w << "\ny = x * w = " << y << "\nz = w * 3 = " << z
              << "\n";
    L.check(x.requires_grad() && x.is_leaf() && x.grad_fn() == nullptr,
            "x is a leaf that requires grad (made by the user, no grad_fn)");
    L.check(!w.requires_grad(), "w does not require grad: requires_grad is false by default");
    L.check(
        y.requires_grad() && !y.is_leaf() && y.grad_fn() && y.grad_fn()->name() == "MulBackward0",
        "y = x * w requires grad because one input does; it is a non-leaf made by MulBackward0");
    L.check(!z.requires_grad() && z.grad_fn() == nullptr && z.is_leaf(),
            "z = w * 3 does not require grad: no input did, so nothing was recorded");
    // w.requires_grad_()
    w.requires_grad_();
    L.check(w.requires_grad() && (w * 3).requires_grad(),
            "w.requires_grad_() switches a leaf on; ops on it are recorded from then on");
    gl::Tensor labels = gl::tensor({0, 2, 1});  // int64, like class labels
    L.check_throws([&] { labels.requires_grad_(); },
                   "only floating point tensors can require gradients",
                   "an int64 tensor cannot require grad (labels and indices never get a gradient)");
    L.check_throws([&] { y.requires_grad_(false); },
                   "only change requires_grad flags of leaf variables",
                   "requires_grad_(false) on the non-leaf y is an error: use detach() instead");

    // ---------------------------------------------------------------------------------------
    L.section("2. detach(): same data, no graph");
    // d = y.detach()
    gl::Tensor d = y.detach();
    std::cout << "d = y.detach() = " << d << "\n";
    L.check(!d.requires_grad() && d.is_leaf() && d.grad_fn() == nullptr,
            "d = y.detach() does not require grad and has no grad_fn");
    L.check(d.is_same_storage(y) && gl::equal(d, y),
            "d shares y's storage (no copy): same values, same memory");
    L.check(!(d * 2).requires_grad(),
            "ops on d record nothing: d is a constant as far as autograd knows");

    // ---------------------------------------------------------------------------------------
    L.section("3. NoGradGuard: turn recording off for a scope");
    gl::Tensor inside;
    bool mode_inside = true;
    {
      // with torch.no_grad():
      //     inside = x * 2
      gl::NoGradGuard no_grad;
      mode_inside = gl::GradMode::is_enabled();
      inside = x * 2;
    }
    gl::Tensor outside = x * 2;
    std::cout << "inside NoGradGuard: x * 2 = " << inside
              << "\nafter it:           x * 2 = " << outside << "\n";
    L.check(!mode_inside && gl::GradMode::is_enabled(),
            "grad mode is off inside the guard and back on after its scope ends");
    L.check(!inside.requires_grad() && inside.grad_fn() == nullptr,
            "x * 2 inside NoGradGuard has no grad_fn, although x requires grad");
    L.check(outside.requires_grad() && outside.grad_fn() != nullptr,
            "the same x * 2 after the guard is recorded again");

    // ---------------------------------------------------------------------------------------
    L.section("4. backward and the chain rule, by hand");
    // A tiny neuron with a squared output:
    //   u = w * x + b        h = tanh(u)        loss = h^2
    // x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True), w = -1.5, b = 0.25
    const double xv = 0.5, wv = -1.5, bv = 0.25;
    gl::Tensor sx = gl::tensor(xv, f64_grad);
    gl::Tensor sw = gl::tensor(wv, f64_grad);
    gl::Tensor sb = gl::tensor(bv, f64_grad);
    gl::Tensor u = sw * sx + sb;
    gl::Tensor h = gl::tanh(u);
    gl::Tensor loss = h * h;
    loss.backward();  // loss.backward()

    // The same numbers with plain doubles: the chain rule multiplies local derivatives from the
    // loss back to each input.
    const double u_ = wv * xv + bv;  // -0.5
    const double h_ = std::tanh(u_);
    const double dloss_dh = 2 * h_;            // d(h^2)/dh
    const double dh_du = 1 - h_ * h_;          // d tanh(u)/du
    const double dloss_du = dloss_dh * dh_du;  // chain: dloss/du = dloss/dh * dh/du
    const double dloss_dw = dloss_du * xv;     // du/dw = x
    const double dloss_dx = dloss_du * wv;     // du/dx = w
    const double dloss_db = dloss_du * 1.0;    // du/db = 1
    std::cout.precision(12);
    std::cout << "forward:  u = " << u_ << "   h = tanh(u) = " << h_
              << "   loss = h^2 = " << h_ * h_ << "\n"
              << "local:    dloss/dh = 2h = " << dloss_dh << "   dh/du = 1 - h^2 = " << dh_du
              << "\n"
              << "chain:    dloss/du = " << dloss_du << "\n"
              << "by hand:  dloss/dw = dloss/du * x = " << dloss_dw << "\n"
              << "          dloss/dx = dloss/du * w = " << dloss_dx << "\n"
              << "          dloss/db = dloss/du * 1 = " << dloss_db << "\n"
              << "engine:   w.grad = " << sw.grad().item<double>()
              << "   x.grad = " << sx.grad().item<double>()
              << "   b.grad = " << sb.grad().item<double>() << "\n";
    std::cout.precision(6);
    L.check_close(loss.item<double>(), h_ * h_,
                  "the engine's forward value equals tanh(w x + b)^2");
    L.check_close(sw.grad().item<double>(), dloss_dw, "w.grad equals the hand-computed dloss/dw");
    L.check_close(sx.grad().item<double>(), dloss_dx, "x.grad equals the hand-computed dloss/dx");
    L.check_close(sb.grad().item<double>(), dloss_db, "b.grad equals the hand-computed dloss/db");

    // Fan-out: when x is used twice, the chain rule adds the contributions of both paths.
    // f = x * x + 3 * x       df/dx = x + x + 3 = 2x + 3
    gl::Tensor fx = gl::tensor({1.0, -2.0, 0.5}, f64_grad);
    gl::Tensor f = (fx * fx + 3 * fx).sum();
    f.backward();
    std::cout << "f = sum(x*x + 3x), x = " << fx << "\nx.grad = " << fx.grad()
              << "   (2x + 3 = [5, -1, 4])\n";
    L.check(is(fx.grad(), {5.0, -1.0, 4.0}),
            "x used three times: the engine adds the gradient of every path, 2x + 3");

    // ---------------------------------------------------------------------------------------
    L.section("5. leaf vs non-leaf .grad, and retain_grad()");
    gl::Tensor px = gl::tensor(xv, f64_grad);
    gl::Tensor pw = gl::tensor(wv, f64_grad);
    gl::Tensor pb = gl::tensor(bv, f64_grad);
    gl::Tensor pu = pw * px + pb;
    gl::Tensor ph = gl::tanh(pu);
    ph.retain_grad();  // h.retain_grad(): keep .grad on this non-leaf
    gl::Tensor ploss = ph * ph;
    ploss.backward();
    std::cout << "after backward: u.grad is "
              << (pu.grad().defined() ? pu.grad().str() : "undefined (None)")
              << ", h.grad = " << ph.grad() << ", x.grad = " << px.grad() << "\n";
    L.check(px.grad().defined() && px.is_leaf(), "the leaf x gets .grad after backward");
    L.check(!pu.grad().defined() && !pu.is_leaf(),
            "the non-leaf u has no .grad: intermediates' gradients are passed on, not stored");
    L.check(
        ph.retains_grad() && ph.grad().defined() &&
            std::abs(ph.grad().item<double>() - dloss_dh) <= 1e-12,
        "after h.retain_grad(), h.grad is kept and equals dloss/dh = 2h from the hand computation");

    // ---------------------------------------------------------------------------------------
    L.section("6. gradients accumulate until zero_grad()");
    gl::Tensor a = gl::tensor({1.0, 2.0}, f64_grad);
    auto step = [&] { (a * a).sum().backward(); };  // d sum(a^2)/da = 2a = [2, 4]
    step();
    std::cout << "after 1 backward: a.grad = " << a.grad() << "\n";
    L.check(is(a.grad(), {2.0, 4.0}), "one backward of sum(a^2) gives a.grad = 2a = [2, 4]");
    step();
    std::cout << "after 2 backward: a.grad = " << a.grad() << "\n";
    L.check(is(a.grad(), {4.0, 8.0}),
            "a second forward + backward adds to it: [4, 8], not [2, 4] (the engine does +=)");
    a.zero_grad();  // a.grad = None  (what optimizer.zero_grad() does by default)
    L.check(!a.grad().defined(),
            "a.zero_grad() sets .grad back to none (set_to_none=true, the default)");
    step();
    L.check(is(a.grad(), {2.0, 4.0}), "after zero_grad the next backward gives a fresh [2, 4]");
    a.zero_grad(/*set_to_none=*/false);  // a.grad.zero_()
    L.check(is(a.grad(), {0.0, 0.0}), "zero_grad(false) keeps the tensor and fills it with zeros");

    // ---------------------------------------------------------------------------------------
    L.section("7. why .grad adds up: two half-batches make one batch");
    L.say("backward() does .grad += on purpose: the gradient of a sum of losses is the sum of");
    L.say("their gradients, so a batch too big for memory can be split and backwarded in parts.");
    // loss over the full batch = mean over 4 samples of (w x - y)^2;   d/dw = mean 2 (w x - y) x
    const double gw = 0.5;
    const std::vector<double> bxs = {1.0, 2.0, -1.0, 0.5}, bys = {2.0, 3.0, -1.0, 2.0};
    double want_full = 0, want_first = 0;
    for (size_t i = 0; i < bxs.size(); ++i) {
      const double gi = 2 * (gw * bxs[i] - bys[i]) * bxs[i] / 4;
      want_full += gi;
      if (i < 2) want_first += gi;
    }
    gl::Tensor bX = gl::tensor({1.0, 2.0, -1.0, 0.5}, f64);
    gl::Tensor bY = gl::tensor({2.0, 3.0, -1.0, 2.0}, f64);
    gl::Tensor gwt = gl::tensor(gw, f64_grad);
    ((gwt * bX - bY).pow(2)).mean().backward();  // one backward over the whole batch
    const double full = gwt.grad().item<double>();
    gwt.zero_grad();
    // for each half: loss = ((w * X[h] - Y[h]) ** 2).sum() / 4; loss.backward()
    auto half = [&](int64_t start) {
      ((gwt * bX.narrow(0, start, 2) - bY.narrow(0, start, 2)).pow(2))
          .sum()
          .div(gl::tensor(4.0, f64))
          .backward();
    };
    half(0);
    const double after_first = gwt.grad().item<double>();
    half(2);
    const double after_second = gwt.grad().item<double>();
    std::cout << "full batch: w.grad = " << full << "   half 1: w.grad = " << after_first
              << "   + half 2: w.grad = " << after_second << "\n";
    L.check_close(full, want_full, "one backward over the 4 samples gives mean 2(wx - y)x");
    L.check_close(after_first, want_first,
                  "after the first half-batch .grad holds only that half's share");
    L.check_close(after_second, full,
                  "the second half's backward adds its share: two halves equal the full batch");
    gl::Tensor held = gwt.grad();  // a handle to the same .grad tensor
    held.zero_();                  // w.grad.zero_()
    L.check(gwt.grad().is_same_storage(held) && gwt.grad().item<double>() == 0.0,
            "w.grad().zero_() resets it in place (what zero_grad(false) does): 0, same tensor");
    half(0);
    L.check_close(gwt.grad().item<double>(), want_first,
                  "so the next backward starts from 0 again, not from the old sum");

    // ---------------------------------------------------------------------------------------
    L.section("8. broadcasting and indexing: the gradient has the operand's shape");
    L.say("x [3,1] + b [4] broadcasts to [3,4]: every x[i] is used by 4 outputs, every b[j] by 3;");
    L.say("backward sums the broadcast dims away, so x.grad is [3,1] and b.grad is [4].");
    gl::Tensor bcx = gl::tensor({1.0, 2.0, 3.0}, f64).reshape({3, 1});  // [3, 1]
    bcx.requires_grad_();
    gl::Tensor bcb = gl::tensor({10.0, 20.0, 30.0, 40.0}, f64_grad);  // [4]
    gl::Tensor bcs = bcx + bcb;                                       // [3, 4]
    bcs.sum().backward();
    std::cout << "x + b has shape " << gl::shape_str(bcs.sizes()) << "\nx.grad = " << bcx.grad()
              << "\nb.grad = " << bcb.grad() << "\n";
    L.check(bcs.sizes() == gl::Shape{3, 4} && is(bcs.select(0, 2), {13.0, 23.0, 33.0, 43.0}),
            "x [3,1] + b [4] has shape [3,4] (row 2 is 3 + b)");
    L.check(
        bcx.grad().sizes() == gl::Shape{3, 1} && is(bcx.grad(), {4.0, 4.0, 4.0}),
        "x.grad has x's shape [3,1], each entry 4: the sum over the 4 columns it was copied to");
    L.check(bcb.grad().sizes() == gl::Shape{4} && is(bcb.grad(), {3.0, 3.0, 3.0, 3.0}),
            "b.grad has b's shape [4], each entry 3: the sum over the 3 rows it was copied to");
    // r = m[1]  (select: row 1, a view)
    gl::Tensor m = gl::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, f64_grad);
    gl::Tensor r = m[1];
    (r * gl::tensor({2.0, 3.0}, f64)).sum().backward();
    std::cout << "r = m[1] = " << r << "\nm.grad = " << m.grad() << "\n";
    L.check(r.sizes() == gl::Shape{2} && is(r, {3.0, 4.0}) && r.grad_fn() != nullptr,
            "m[1] selects row 1 (shape [2]) and is recorded");
    L.check(m.grad().sizes() == gl::Shape{3, 2} && is(m.grad(), {0.0, 0.0, 2.0, 3.0, 0.0, 0.0}),
            "the gradient of sum(m[1] * [2, 3]) lands in row 1 only; the other rows get 0");

    // ---------------------------------------------------------------------------------------
    L.section("9. what backward() insists on");
    gl::Tensor v = gl::tensor({1.0, 2.0, 3.0}, f64_grad);
    gl::Tensor v3 = v * v;  // not a scalar
    L.check_throws([&] { v3.backward(); }, "grad can be implicitly created only for scalar outputs",
                   "backward() on a non-scalar needs an explicit gradient");
    // v3.backward(torch.tensor([1., 0.1, 0.01]))  ->  v.grad = gradient * dv3/dv = g * 2v
    v3.backward(gl::tensor({1.0, 0.1, 0.01}, f64), /*retain_graph=*/true);
    std::cout << "v3.backward(g=[1, 0.1, 0.01]) -> v.grad = " << v.grad() << "\n";
    L.check(is(v.grad(), {2.0, 0.4, 0.06}),
            "with a gradient g it computes the vector-Jacobian product g * 2v = [2, 0.4, 0.06]");
    v3.backward(gl::tensor({1.0, 1.0, 1.0}, f64));  // allowed: the first call kept the graph
    L.check(is(v.grad(), {4.0, 4.4, 6.06}),
            "retain_graph=true kept the graph: a second backward ran and accumulated (+ 2v)");
    L.check_throws(
        [&] {
          v3.backward(gl::tensor({1.0, 1.0, 1.0}, f64));
        },
        "retain_graph=true",
        "a third backward through the now-freed graph fails and tells you about retain_graph");
    gl::Tensor c = gl::tensor({1.0, 2.0}, f64).sum();
    L.check_throws(
        [&] { c.backward(); }, "does not require grad",
        "backward() on a tensor that does not require grad is an error, not a silent no-op");
  });
}
