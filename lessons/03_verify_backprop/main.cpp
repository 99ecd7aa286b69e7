// Lesson 03: verify backprop.
//
// Three ways to get a gradient — by hand, by backward(), by central differences — and how to make
// them agree: first on f(x, y) = x² + y², then on a two-layer network whose backward pass is
// written by hand (plain loops) and trained side by side with the autograd version on the same
// data and seed. Finally gradlab::testing::gradcheck, which does the comparison for you and says
// which entry is wrong when one is.
//
// Everything is float64: central differences need it (see section 1).

#include <algorithm>
#include <cmath>
#include <gradlab/gradlab.hpp>
#include <gradlab/ops/internal/elementwise.hpp>
#include <gradlab/testing/gradcheck.hpp>
#include <gradlab/testing/mutants.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
using lesson::fmt;
using lesson::max_abs_diff;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// Below this, a float64 difference between two ways of computing the same value is rounding
// noise and prints as "< 1e-14": it changes with the BLAS kernel and thread count (0 with one,
// 5.6e-17 with another; at most 5.6e-16 seen over Prescott, Sandybridge, Haswell, Zen, SkylakeX at
// 1 and 2 threads), and the claims below ask for 1e-14 to 1e-12.
constexpr double kNoise = 1e-14;

// ---- a two-layer MLP, by hand --------------------------------------------------------------
// pred = tanh(X W1 + b1) W2 + b2       X [N, D], W1 [D, H], b1 [H], W2 [H, 1], b2 [1]
// loss = mean((pred - y)²)
struct Params {
  std::vector<double> W1, b1, W2, b2;  // row-major
};

struct HandMLP {
  int64_t N, D, H;
  // One forward + backward with plain loops. Returns the loss; fills the gradients.
  double step(const std::vector<double>& X, const std::vector<double>& y, const Params& p,
              Params& g, bool forget_tanh_derivative = false) const {
    std::vector<double> a(static_cast<size_t>(N * H)), pred(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t h = 0; h < H; ++h) {
        double s = p.b1[h];
        for (int64_t d = 0; d < D; ++d) s += X[n * D + d] * p.W1[d * H + h];
        a[n * H + h] = std::tanh(s);
      }
      double s = p.b2[0];
      for (int64_t h = 0; h < H; ++h) s += a[n * H + h] * p.W2[h];
      pred[n] = s;
    }
    double loss = 0;
    for (int64_t n = 0; n < N; ++n) loss += (pred[n] - y[n]) * (pred[n] - y[n]);
    loss /= static_cast<double>(N);
    // Backward, one chain-rule step at a time.
    g.W1.assign(p.W1.size(), 0.0), g.b1.assign(p.b1.size(), 0.0);
    g.W2.assign(p.W2.size(), 0.0), g.b2.assign(p.b2.size(), 0.0);
    for (int64_t n = 0; n < N; ++n) {
      const double dpred = 2.0 * (pred[n] - y[n]) / static_cast<double>(N);  // d loss / d pred
      g.b2[0] += dpred;
      for (int64_t h = 0; h < H; ++h) {
        g.W2[h] += a[n * H + h] * dpred;    // d pred / d W2 = a
        const double da = p.W2[h] * dpred;  // d pred / d a = W2
        const double ds = forget_tanh_derivative
                              ? da
                              : da * (1.0 - a[n * H + h] * a[n * H + h]);  // tanh' = 1 - a²
        g.b1[h] += ds;
        for (int64_t d = 0; d < D; ++d) g.W1[d * H + h] += X[n * D + d] * ds;  // d s / d W1 = X
      }
    }
    return loss;
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Break-it switches: each plants a gradlab bug (one op's backward formula replaced through
  // testing::BackwardOverride, for the whole run) and names the claim that must catch it.
  lesson::Lesson L(
      "03", "verify backprop", argc, argv,
      {{"mul_one_operand",
        "Mul's backward returns da = dc * b but drops db (x * x gives x, not 2x)",
        "backward() gives exactly the hand-derived"},
       {"tanh_grad", "Tanh's backward uses 1 - y instead of 1 - y² (a wrong derivative)",
        "gradcheck agrees with autograd on the network's loss"},
       {"where_leaks", "Where's backward sends dy to the kept branch everywhere, ignoring the mask",
        "(c) dloss/dY is exactly 0 at every masked-out target"}});
  namespace od = gl::ops_detail;
  using gl::autograd::GradList;
  std::optional<gl::testing::BackwardOverride<od::Mul>> mul_bug;
  std::optional<gl::testing::BackwardOverride<od::Tanh>> tanh_bug;
  std::optional<gl::testing::BackwardOverride<od::Where>> where_bug;
  if (L.bug("mul_one_operand"))
    mul_bug.emplace([](od::Mul& op, const GradList& g) {  // BUG: db forgotten
      return GradList{op.needs_input_grad(0) ? g[0] * op.b_.unpack() : gl::Tensor(), gl::Tensor()};
    });
  if (L.bug("tanh_grad"))
    tanh_bug.emplace([](od::Tanh& op, const GradList& g) {  // BUG: 1 - y, not 1 - y²
      return GradList{g[0] * (1 - op.y_.unpack())};
    });
  if (L.bug("where_leaks"))
    where_bug.emplace([](od::Where& op, const GradList& g) {  // BUG: the mask is not applied
      return GradList{gl::Tensor(), op.needs_input_grad(1) ? g[0] : gl::Tensor(),
                      op.needs_input_grad(2) ? gl::zeros_like(g[0]) : gl::Tensor()};
    });
  return L.run([&] {
    // -----------------------------------------------------------------------------------------
    L.section("1. f(x, y) = x² + y²: by hand, by backward(), by central differences");
    const double x0 = 3.0, y0 = -4.0;
    // f evaluated by gradlab's own ops (float64 scalars): the differences below test gradlab's
    // forward against gradlab's backward, not C++ arithmetic against itself.
    auto f = [](double x, double y) {
      const gl::Tensor tx = gl::tensor(x, f64), ty = gl::tensor(y, f64);
      return (tx * tx + ty * ty).item<double>();
    };
    // By hand: df/dx = 2x, df/dy = 2y.
    const double hand_dx = 2 * x0, hand_dy = 2 * y0;
    // By backward():  x = torch.tensor(3., requires_grad=True); (x**2 + y**2).backward()
    gl::Tensor x = gl::tensor(x0, f64.requires_grad(true)),
               y = gl::tensor(y0, f64.requires_grad(true));
    gl::Tensor out = x * x + y * y;
    out.backward();
    // By central differences: (f(x + h) - f(x - h)) / 2h.
    const double h = 1e-6;
    const double num_dx = (f(x0 + h, y0) - f(x0 - h, y0)) / (2 * h);
    const double num_dy = (f(x0, y0 + h) - f(x0, y0 - h)) / (2 * h);
    std::cout << "f(3, -4) = " << out.item<double>() << "\n"
              << "by hand:      df/dx = 2x = " << hand_dx << "   df/dy = 2y = " << hand_dy << "\n"
              << "by backward:  x.grad = " << x.grad().item<double>()
              << "   y.grad = " << y.grad().item<double>() << "\n"
              << "by central differences (h = 1e-6): " << fmt("%.10f", num_dx) << "   "
              << fmt("%.10f", num_dy) << "\n";
    L.check(x.grad().item<double>() == hand_dx && y.grad().item<double>() == hand_dy,
            "backward() gives exactly the hand-derived 2x = 6 and 2y = -8");
    const double auto_dx = x.grad().item<double>(), auto_dy = y.grad().item<double>();
    L.check(std::abs(num_dx - auto_dx) < 1e-8 && std::abs(num_dy - auto_dy) < 1e-8,
            "central differences of gradlab's forward (h = 1e-6) agree with backward() to 1e-8");

    std::cout << "\nerror of the difference quotients for df/dx at x = 3, as h shrinks:\n"
              << "      h     forward (f(x+h)-f(x))/h    central (f(x+h)-f(x-h))/2h\n";
    std::vector<double> fwd_err, ctr_err;
    for (double hh : {1e-1, 1e-3, 1e-5, 1e-7, 1e-9, 1e-11, 1e-13}) {
      const double fe = std::abs((f(x0 + hh, y0) - f(x0, y0)) / hh - auto_dx);
      const double ce = std::abs((f(x0 + hh, y0) - f(x0 - hh, y0)) / (2 * hh) - auto_dx);
      fwd_err.push_back(fe);
      ctr_err.push_back(ce);
      std::cout << "  " << fmt("%6.0e", hh) << "   " << fmt("%22.3e", fe) << "   "
                << fmt("%26.3e", ce) << "\n";
    }
    // Forward difference of x²: (2xh + h²)/h = 2x + h, so its error is h (truncation).
    L.check(std::abs(fwd_err[0] - 1e-1) < 1e-9 && std::abs(fwd_err[1] - 1e-3) < 1e-9,
            "the forward difference is off by exactly h for x² (truncation error O(h))");
    L.check(ctr_err[0] < 1e-12 && ctr_err[1] < 1e-10,
            "the central difference of x² has no truncation error (the h² terms cancel); its error "
            "is rounding");
    L.check(
        ctr_err[6] > 1e-4 && ctr_err[6] > 1000 * ctr_err[2],
        "at h = 1e-13 rounding dominates: f(x±h) differ in their last bits only (error > 1e-4)");
    // The same in float32: eps = 1e-6 is below float32's resolution at 9 (about 1e-6).
    // x ± h and the squares are computed by gradlab in float32 (the default dtype): a gradlab
    // that silently computed in float64 would give 6 and fail this.
    auto f32 = [](double step) {
      const gl::Tensor t = gl::tensor(3.0) + step;
      return (t * t).item<double>();
    };
    const double hf = 1e-6;
    const double ff = (f32(hf) - f32(-hf)) / (2 * hf);
    std::cout << "float32, h = 1e-6: central difference = " << ff << " (true 6)\n";
    L.check(std::abs(ff - 6.0f) > 0.01f,
            "in float32 the same central difference is off by more than 1e-2: gradient checks use "
            "float64");

    // -----------------------------------------------------------------------------------------
    L.section("2. A two-layer network: hand-written backprop vs autograd, trained side by side");
    const int64_t N = 32, D = 3, H = 8, steps = 200;
    const double lr = 0.1;
    gl::Generator gen(2024);
    gl::Tensor X = gl::randn({N, D}, f64, &gen);
    // Target: a smooth function of the inputs plus a little noise.
    gl::Tensor Y = (gl::sin(X.select(1, 0)) + X.select(1, 1) * X.select(1, 2) * 0.5 +
                    gl::randn({N}, f64, &gen) * 0.05)
                       .reshape({N, 1});
    // Same initial weights for both (Glorot-style scale).
    gl::Tensor W1 = (gl::randn({D, H}, f64, &gen) * (1.0 / std::sqrt(static_cast<double>(D))))
                        .requires_grad_(true);
    gl::Tensor b1 = gl::zeros({H}, f64).requires_grad_(true);
    gl::Tensor W2 = (gl::randn({H, 1}, f64, &gen) * (1.0 / std::sqrt(static_cast<double>(H))))
                        .requires_grad_(true);
    gl::Tensor b2 = gl::zeros({1}, f64).requires_grad_(true);
    Params p{W1.to_vector<double>(), b1.to_vector<double>(), W2.to_vector<double>(),
             b2.to_vector<double>()};
    const std::vector<double> Xv = X.to_vector<double>(), Yv = Y.to_vector<double>();
    HandMLP hand{N, D, H};

    // First step: compare the gradients themselves.
    Params g;
    const double hand_loss0 = hand.step(Xv, Yv, p, g);
    gl::Tensor loss0 = (gl::tanh(X.matmul(W1) + b1).matmul(W2) + b2 - Y).pow(2).mean();
    loss0.backward();
    const double gerr = lesson::worst_of({max_abs_diff(g.W1, W1.grad().to_vector<double>()),
                                  max_abs_diff(g.b1, b1.grad().to_vector<double>()),
                                  max_abs_diff(g.W2, W2.grad().to_vector<double>()),
                                  max_abs_diff(g.b2, b2.grad().to_vector<double>())});
    std::cout << "step 0: loss by hand " << fmt("%.15f", hand_loss0) << ", by autograd "
              << fmt("%.15f", loss0.item<double>())
              << "\n        largest |hand gradient - autograd gradient| over W1, b1, W2, b2 "
              << lesson::relation(gerr, kNoise, "%.2e") << "\n";
    L.check(
        gerr < 1e-14,
        "at step 0 every hand-written gradient equals autograd's to float64 rounding (< 1e-14)");
    for (gl::Tensor* t : {&W1, &b1, &W2, &b2}) t->zero_grad();

    // Train both with plain SGD.
    double max_loss_diff = 0, first_loss = 0, last_loss = 0;
    std::cout << "\n  step     loss (hand)            loss (autograd)        |diff|\n";
    for (int64_t s = 0; s < steps; ++s) {
      const double lh = hand.step(Xv, Yv, p, g);
      for (size_t i = 0; i < p.W1.size(); ++i) p.W1[i] -= lr * g.W1[i];
      for (size_t i = 0; i < p.b1.size(); ++i) p.b1[i] -= lr * g.b1[i];
      for (size_t i = 0; i < p.W2.size(); ++i) p.W2[i] -= lr * g.W2[i];
      for (size_t i = 0; i < p.b2.size(); ++i) p.b2[i] -= lr * g.b2[i];

      gl::Tensor loss = (gl::tanh(X.matmul(W1) + b1).matmul(W2) + b2 - Y).pow(2).mean();
      loss.backward();
      {
        gl::NoGradGuard no_grad;  // parameter updates are not part of the graph
        for (gl::Tensor* t : {&W1, &b1, &W2, &b2}) {
          t->sub_(t->grad() * lr);
          t->zero_grad();
        }
      }
      const double la = loss.item<double>();
      max_loss_diff = lesson::worst_of({max_loss_diff, std::abs(lh - la)});  // a NaN stays
      if (s == 0) first_loss = la;
      last_loss = la;
      if (s % 40 == 0 || s == steps - 1)
        std::cout << "  " << fmt("%4.0f", static_cast<double>(s)) << "   " << fmt("%.15f", lh)
                  << "   " << fmt("%.15f", la) << "   " << lesson::noise(std::abs(lh - la), kNoise)
                  << "\n";
    }
    const double werr = lesson::worst_of(
        {max_abs_diff(p.W1, W1.to_vector<double>()), max_abs_diff(p.b1, b1.to_vector<double>()),
         max_abs_diff(p.W2, W2.to_vector<double>()), max_abs_diff(p.b2, b2.to_vector<double>())});
    std::cout << "largest |loss difference| over " << steps
              << " steps " << lesson::relation(max_loss_diff, kNoise, "%.2e")
              << "; largest |weight difference| at the end " << lesson::relation(werr, kNoise, "%.2e")
              << "\n";
    L.check(max_loss_diff < 1e-13,
            "the two runs have the same loss at every one of the 200 steps (to 1e-13)");
    L.check(werr < 1e-12,
            "and the same final weights (to 1e-12): only float64 rounding tells them apart");
    L.check(last_loss < 0.5 * first_loss, "training worked: the loss fell by more than half (" +
                                              fmt("%.4f", first_loss) + " -> " +
                                              fmt("%.4f", last_loss) + ")");

    // -----------------------------------------------------------------------------------------
    L.section("3. gradcheck: the comparison as a tool, and what a bug looks like");
    using gl::testing::GradcheckOptions;
    using gl::testing::gradcheck;
    using gl::TensorList;
    // The autograd network's loss as a function of its parameters.
    auto mlp_loss = [X, Y](const TensorList& in) {
      return TensorList{
          (gl::tanh(X.matmul(in[0]) + in[1]).matmul(in[2]) + in[3] - Y).pow(2).mean()};
    };
    gl::Tensor w1 = W1.detach().clone().requires_grad_(true),
               c1 = b1.detach().clone().requires_grad_(true);
    gl::Tensor w2 = W2.detach().clone().requires_grad_(true),
               c2 = b2.detach().clone().requires_grad_(true);
    auto ok = gradcheck(gl::testing::TensorFn(mlp_loss), {w1, c1, w2, c2},
                        GradcheckOptions().name("mlp loss").raise_exception(false));
    std::cout << ok.text();
    L.check(ok.ok && ok.comparisons > 0,
            "gradcheck agrees with autograd on the network's loss (every Jacobian entry)");

    // The hand-written backward, wrapped as a custom autograd function, with a classic bug:
    // the tanh derivative (1 - a²) forgotten in the hidden layer.
    struct BuggyHand : gl::autograd::Function<BuggyHand> {
      static gl::Tensor forward(gl::autograd::AutogradContext* ctx, gl::Tensor X, gl::Tensor Y,
                                gl::Tensor W1, gl::Tensor b1, gl::Tensor W2, gl::Tensor b2) {
        const int64_t n = X.size(0), d = X.size(1), hdim = W1.size(1);
        HandMLP m{n, d, hdim};
        Params q{W1.to_vector<double>(), b1.to_vector<double>(), W2.to_vector<double>(),
                 b2.to_vector<double>()},
            gg;
        const double loss = m.step(X.to_vector<double>(), Y.to_vector<double>(), q, gg,
                                   /*forget_tanh_derivative=*/true);
        ctx->saved_data["gW1"] = gl::from_vector(gg.W1, W1.sizes(), f64);
        ctx->saved_data["gb1"] = gl::from_vector(gg.b1, b1.sizes(), f64);
        ctx->saved_data["gW2"] = gl::from_vector(gg.W2, W2.sizes(), f64);
        ctx->saved_data["gb2"] = gl::from_vector(gg.b2, b2.sizes(), f64);
        return gl::tensor(loss, f64);
      }
      static TensorList backward(gl::autograd::AutogradContext* ctx, TensorList go) {
        auto s = [&](const char* k) { return ctx->saved_data[k].toTensor() * go[0]; };
        return {gl::Tensor(), gl::Tensor(), s("gW1"), s("gb1"), s("gW2"), s("gb2")};
      }
    };
    auto buggy = [X, Y](const TensorList& in) {
      return TensorList{BuggyHand::apply(X, Y, in[0], in[1], in[2], in[3])};
    };
    auto bad = gradcheck(
        gl::testing::TensorFn(buggy), {w1, c1, w2, c2},
        GradcheckOptions().name("hand MLP without tanh'").raise_exception(false).top_k(3));
    std::cout << "\n" << bad.text();
    L.check(!bad.ok, "gradcheck rejects the hand backward that forgot tanh' = 1 - a²");
    L.check(!bad.failures.empty() && bad.failures.front().input <= 1 &&
                !bad.failures.front().element.empty(),
            "its worst entry is in W1 or b1 (inputs 0, 1), named down to the element");
    bool b1_fails = false, w2_ok = true;
    for (const auto& fl : bad.failures) {
      b1_fails |= fl.input == 1;
      w2_ok &= fl.input != 2 && fl.input != 3;
    }
    L.check(b1_fails && w2_ok,
            "W1 and b1 (below the tanh) fail; W2 and b2 (above it) pass: the bug is in between");
    L.check(bad.taylor.ran && bad.taylor.order < 1.5,
            "its Taylor remainder shrinks at order " + fmt("%.2f", bad.taylor.order) +
                " (1 means a wrong gradient; a right one gives 2)");

    // -----------------------------------------------------------------------------------------
    L.section("4. A custom masked loss: matmul, elementwise ops and where, checked three ways");
    L.say(
        "loss(W) = sum(where(mask, (X W - Y)², 0)) / count: a masked MSE, e.g. missing targets.\n"
        "By hand: dloss/dW = 2 Xᵀ ((X W - Y) ⊙ mask) / count; masked-out entries give nothing.");
    const int64_t M = 8, Din = 3, K = 2;
    gl::Generator mgen(7);
    const gl::Tensor Xm = gl::randn({M, Din}, f64, &mgen);
    gl::Tensor Ym = gl::randn({M, K}, f64, &mgen);
    const gl::Tensor mask = gl::rand({M, K}, f64, &mgen) > 0.35;  // bool: which targets count
    const gl::Tensor Wm0 = gl::randn({Din, K}, f64, &mgen);
    auto masked_loss = [&mask](const gl::Tensor& Xi, const gl::Tensor& Wi, const gl::Tensor& Yi) {
      return gl::where(mask, (Xi.matmul(Wi) - Yi).pow(2), 0.0).sum() / mask.sum().to(gl::kFloat64);
    };
    // Autograd's gradient with respect to W (and to Y, to see the masked-out entries).
    auto autograd_grads = [&](const gl::Tensor& Yi) {
      gl::Tensor Wi = Wm0.detach().clone().requires_grad_(true);
      gl::Tensor Yg = Yi.detach().clone().requires_grad_(true);
      masked_loss(Xm, Wi, Yg).backward();
      return std::pair{Wi.grad(), Yg.grad()};
    };
    // The hand gradient, with plain loops over plain vectors (no gradlab op involved).
    const std::vector<double> xv = Xm.to_vector<double>(), wv = Wm0.to_vector<double>();
    std::vector<bool> keep;
    for (double v : mask.to(gl::kFloat64).to_vector<double>()) keep.push_back(v != 0.0);
    auto hand_grad = [&](const std::vector<double>& yv, bool forget_mask) {
      double count = 0;
      for (bool k : keep) count += k ? 1 : 0;
      std::vector<double> r(static_cast<size_t>(M * K)), gw(static_cast<size_t>(Din * K), 0.0);
      for (int64_t n = 0; n < M; ++n)
        for (int64_t k = 0; k < K; ++k) {
          double s = -yv[n * K + k];
          for (int64_t d = 0; d < Din; ++d) s += xv[n * Din + d] * wv[d * K + k];
          r[n * K + k] = (forget_mask || keep[n * K + k]) ? s : 0.0;  // (X W - Y) ⊙ mask
        }
      for (int64_t d = 0; d < Din; ++d)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t n = 0; n < M; ++n)
            gw[d * K + k] += 2.0 * xv[n * Din + d] * r[n * K + k] / count;  // 2 Xᵀ R / count
      return gw;
    };
    int64_t kept = 0, off = -1;  // off: the first masked-out entry of Y
    for (size_t i = 0; i < keep.size(); ++i) {
      kept += keep[i] ? 1 : 0;
      if (!keep[i] && off < 0) off = static_cast<int64_t>(i);
    }
    std::cout << "X [8, 3], W [3, 2], Y [8, 2]; the mask keeps " << kept << " of " << M * K
              << " targets\n";

    // (a) gradcheck, float64, on W and X together.
    auto mres = gradcheck(
        gl::testing::TensorFn(
            [&](const TensorList& in) { return TensorList{masked_loss(in[0], in[1], Ym)}; }),
        {Xm.detach().clone().requires_grad_(true), Wm0.detach().clone().requires_grad_(true)},
        GradcheckOptions().name("masked mse").raise_exception(false));
    std::cout << mres.text();
    L.check(mres.ok && mres.comparisons > 0,
            "(a) gradcheck in float64 passes for the masked loss (with respect to X and W)");

    // (b) the hand gradient against autograd's.
    const std::vector<double> yv = Ym.to_vector<double>();
    const auto [gW, gY] = autograd_grads(Ym);
    const double herr = max_abs_diff(hand_grad(yv, false), gW.to_vector<double>());
    std::cout << "largest |hand 2 Xᵀ((XW - Y) ⊙ mask)/count - autograd| "
              << lesson::relation(herr, kNoise, "%.2e") << "\n";
    L.check(herr < 1e-12, "(b) the hand-written gradient equals autograd's to 1e-12");

    // (c) masked-out targets do not reach the gradient at all.
    std::vector<double> gyv = gY.to_vector<double>();
    bool y_zero = true, y_live = true;
    for (size_t i = 0; i < keep.size(); ++i) {
      if (!keep[i]) y_zero &= gyv[i] == 0.0;
      if (keep[i]) y_live &= gyv[i] != 0.0;
    }
    L.check(off >= 0 && y_zero && y_live,
            "(c) dloss/dY is exactly 0 at every masked-out target (and non-zero at the kept ones)");
    std::vector<double> y2 = yv;
    y2[static_cast<size_t>(off)] += 100.0;
    const gl::Tensor Y2 = gl::from_vector(y2, Ym.sizes(), f64);
    const auto gW2 = autograd_grads(Y2).first;
    std::cout << "Y[" << off / K << ", " << off % K << "] is masked out; moving it by 100 changes "
              << "dloss/dW by "
              << fmt("%.1e", max_abs_diff(gW.to_vector<double>(), gW2.to_vector<double>())) << "\n";
    L.check(gl::equal(gW, gW2), "    changing a masked-out target leaves dloss/dW bit-identical");
    L.check(gl::equal(masked_loss(Xm, Wm0, Ym),
                      (Xm.matmul(Wm0) - Ym).pow(2).masked_fill(gl::logical_not(mask), 0.0).sum() /
                          mask.sum().to(gl::kFloat64)),
            "    masked_fill(logical_not(mask), 0) gives the same loss as where(mask, ..., 0)");

    // (d) a planted bug: the hand gradient without the mask.
    const std::vector<double> nomask = hand_grad(yv, true);
    const double berr = max_abs_diff(nomask, gW.to_vector<double>());
    const double bshift = max_abs_diff(nomask, hand_grad(y2, true));
    std::cout << "planted bug, hand gradient 2 Xᵀ(XW - Y)/count (mask forgotten): off by "
              << fmt("%.2e", berr) << "; moving the masked-out target moves it by "
              << fmt("%.2e", bshift) << "\n";
    L.check(berr > 1e-3,
            "(d) comparing with autograd catches the hand gradient that forgot the mask");
    L.check(bshift > 1.0,
            "    and so does the masked-out-target test: that gradient moves with it");
  });
}
