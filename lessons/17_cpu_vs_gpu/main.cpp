// Lesson 17: CPU vs GPU.
//
// One op, softmax over the rows of x [N, C], three ways: a CPU reference written by hand (plain
// loops), gradlab on a CPU tensor, and gradlab on a CUDA tensor (x.cuda() -> softmax -> .cpu()),
// each with its gradient. First they must agree, in float64, to rounding; only then are they
// timed: the CPU with a steady clock, the GPU with CUDA events (cuda::Timer), both after a
// warm-up, and the GPU once more with the copies to and from it.
//
// Without a GPU the CPU part runs and is checked, the GPU part says why it was skipped, and the
// same CUDA code path is run on gradlab's host emulator: CPU loops, not a GPU, so nothing is timed.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <gradlab/core/cuda.hpp>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
using lesson::fmt;
using lesson::max_abs_diff;
using lesson::relation;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// ---- the reference: softmax by hand ----------------------------------------------------------
// y_ij = exp(x_ij - m_i) / Σ_k exp(x_ik - m_i),  m_i = max_k x_ik   (m keeps exp from overflowing)
// dx_ij = y_ij (g_ij - Σ_k g_ik y_ik)                                (g: the upstream gradient)
std::vector<double> softmax_rows(const std::vector<double>& x, int64_t n, int64_t c) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    const double* xi = &x[i * c];
    const double m = *std::max_element(xi, xi + c);
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += (y[i * c + j] = std::exp(xi[j] - m));
    for (int64_t j = 0; j < c; ++j) y[i * c + j] /= s;
  }
  return y;
}

std::vector<double> softmax_rows_backward(const std::vector<double>& y,
                                          const std::vector<double>& g, int64_t n, int64_t c) {
  std::vector<double> dx(y.size());
  for (int64_t i = 0; i < n; ++i) {
    double dot = 0;
    for (int64_t j = 0; j < c; ++j) dot += g[i * c + j] * y[i * c + j];
    for (int64_t j = 0; j < c; ++j) dx[i * c + j] = y[i * c + j] * (g[i * c + j] - dot);
  }
  return dx;
}

// ---- the CUDA path ---------------------------------------------------------------------------
// softmax and its gradient on a CUDA tensor; results copied back to the CPU for comparison.
struct CudaRun {
  bool y_on_cuda = false, grad_on_cuda = false;
  gl::Tensor y, grad;  // on the CPU
};

CudaRun softmax_on_cuda(const gl::Tensor& x, const gl::Tensor& g) {
  gl::Tensor xc = x.detach().cuda().requires_grad_(true);  // a leaf that lives on the device
  gl::Tensor yc = gl::softmax(xc, 1);
  (yc * g.cuda()).sum().backward();  // L = Σ g ⊙ y, so dL/dy = g
  return {yc.is_cuda(), xc.grad().defined() && xc.grad().is_cuda(), yc.detach().cpu(),
          xc.grad().cpu()};
}

void check_cuda_run(lesson::Lesson& L, const CudaRun& r, const gl::Tensor& y_cpu,
                    const gl::Tensor& grad_cpu, const std::string& where) {
  const double ey = max_abs_diff(r.y, y_cpu), eg = max_abs_diff(r.grad, grad_cpu);
  // float64 rounding noise (~1e-16) moves with the order of the adds and the exp implementation:
  // below 1e-14 it prints as "< 1e-14", a real bug is of order 1.
  std::cout << "max |y(" << where << ") - y(cpu)|           " << relation(ey, 1e-14) << "\n"
            << "max |x.grad(" << where << ") - x.grad(cpu)| " << relation(eg, 1e-14) << "\n";
  L.check(r.y_on_cuda, "softmax of a CUDA tensor is a CUDA tensor: the kernels ran on " + where);
  L.check(r.grad_on_cuda, "x.grad of a CUDA leaf is on the device too: backward ran there");
  L.check(ey < 1e-12, "forward: " + where + " agrees with the CPU to float64 rounding (< 1e-12)");
  L.check(eg < 1e-12, "gradient: " + where + " agrees with the CPU to float64 rounding (< 1e-12)");
}

// ---- timing ----------------------------------------------------------------------------------
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median of `runs` host-clock timings (ms) of f(), after one warm-up call.
double host_ms(int runs, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

// Median of `runs` CUDA-event timings (ms) of f(), after a warm-up. The events are queued on the
// GPU's stream, so they measure the device's time from start() to stop().
double device_ms(int runs, const std::function<void()>& f) {
  f();
  f();
  gl::cuda::synchronize();
  gl::cuda::Timer timer;
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    timer.start();
    f();
    timer.stop();
    t.push_back(timer.elapsed_ms());
  }
  return median(t);
}

}  // namespace

int main() {
  lesson::Lesson L("17", "CPU vs GPU");
  return L.run([&] {
    const bool gpu = gl::cuda::is_available();
    std::cout << "CUDA: "
              << (gpu ? "available, " + gl::cuda::device_name()
                      : "not available: " + gl::cuda::unavailable_reason())
              << "\n";

    // -----------------------------------------------------------------------------------------
    L.section("1. The reference: softmax by hand on the CPU, and gradlab on the CPU");
    const int64_t N = 64, C = 10;
    gl::Generator gen(17);
    const gl::Tensor X = gl::randn({N, C}, f64, &gen) * 3.0;
    const gl::Tensor G = gl::randn({N, C}, f64, &gen);  // an upstream gradient dL/dy
    const std::vector<double> xv = X.to_vector<double>(), gv = G.to_vector<double>();
    const std::vector<double> y_hand = softmax_rows(xv, N, C);
    const std::vector<double> dx_hand = softmax_rows_backward(y_hand, gv, N, C);

    gl::Tensor x = X.clone().requires_grad_(true);
    gl::Tensor y = gl::softmax(x, 1);
    (y * G).sum().backward();
    const gl::Tensor y_ref = gl::from_vector(y_hand, {N, C}, f64);
    const gl::Tensor dx_ref = gl::from_vector(dx_hand, {N, C}, f64);
    std::cout << "x[0]          = " << X.select(0, 0) << "\n"
              << "softmax(x)[0] = " << y.detach().select(0, 0) << "\n";
    const double row_sum_err = max_abs_diff(y.detach().sum({1}), gl::ones({N}, f64));
    const double ey = max_abs_diff(y.detach(), y_ref), eg = max_abs_diff(x.grad(), dx_ref);
    std::cout << "max |row sum - 1|                  " << relation(row_sum_err, 1e-14) << "\n"
              << "max |softmax(x) - hand loops|      " << relation(ey, 1e-14) << "\n"
              << "max |x.grad - y ⊙ (g - Σ g ⊙ y)|   " << relation(eg, 1e-14) << "\n";
    L.check(row_sum_err < 1e-14, "every row of softmax(x) sums to 1");
    L.check(ey < 1e-14, "gradlab's CPU softmax equals the hand-written loops (< 1e-14, float64)");
    L.check(eg < 1e-14,
            "its gradient from backward() equals the formula y ⊙ (g - Σ g ⊙ y) (< 1e-14)");
    const gl::Tensor y_cpu = y.detach(), grad_cpu = x.grad();

    // -----------------------------------------------------------------------------------------
    L.section("2. The same op on the GPU: x.cuda() -> softmax -> .cpu(), and its gradient");
    if (!gpu) {
      L.say("SKIPPED: no GPU here (" + gl::cuda::unavailable_reason() + ").");
      L.say("On a machine with one this section runs softmax and its backward on the device and");
      L.say("checks both against section 1 to 1e-12 (float64).");
    } else {
      check_cuda_run(L, softmax_on_cuda(X, G), y_cpu, grad_cpu, "the GPU");
    }

    // -----------------------------------------------------------------------------------------
    const int64_t TN = 16384, TC = 1000;
    L.section("3. Speed: softmax of a float32 [" + std::to_string(TN) + ", " + std::to_string(TC) +
              "] tensor (" + fmt("%.0f", TN * TC * 4.0 / 1e6) + " MB)");
    gl::Tensor xs = gl::randn({TN, TC}, {}, &gen) * 3.0;
    const gl::Tensor gs = gl::randn({TN, TC}, {}, &gen);
    const gl::Tensor ys = gl::softmax(xs, 1);
    // float32 against a float64 run of the same op: float32's rounding, nothing more.
    const double e32 = max_abs_diff(ys.to(gl::kFloat64), gl::softmax(xs.to(gl::kFloat64), 1));
    // float32 rounding (~1e-7) depends on the exp kernel: printed against the 1e-6 the check allows.
    std::cout << "max |softmax float32 - softmax float64| " << relation(e32, 1e-6) << "\n";
    L.check(e32 < 1e-6, "the float32 CPU result is within 1e-6 of float64: safe to time");

    xs.requires_grad_(true);
    auto fwd_bwd = [](gl::Tensor t, gl::Tensor g) {
      return [t, g]() mutable {
        t.zero_grad();
        gl::softmax(t, 1).backward(g);
      };
    };
    // NOTE: one 16M-element softmax takes tens of ms on a CPU; 5 runs each is enough.
    const double cpu_f = host_ms(5, [&] {
      gl::NoGradGuard no_grad;  // forward only: no graph
      gl::softmax(xs, 1);
    });
    const double cpu_fb = host_ms(5, fwd_bwd(xs, gs));
    // Bytes a single pass must move: read x, write y (4 bytes each).
    const double mb = TN * TC * 8.0 / 1e6;
    auto row = [&](const char* what, double f, double fb) {
      std::cout << "  " << what << fmt("%11.3f ms", f) << fmt("   %8.1f GB/s", mb / f)
                << (fb > 0 ? fmt("      %11.3f ms", fb) : std::string("")) << "\n";
    };
    {
      char h[160];
      std::snprintf(h, sizeof h, "  %-31s%14s%16s%20s\n", "", "forward", "one-pass rate",
                    "forward+backward");
      std::cout << h;
    }
    row("CPU, host clock               ", cpu_f, cpu_fb);
    if (!gpu) {
      L.say("GPU timings SKIPPED: no GPU here (see above).");
    } else {
      gl::Tensor xg = xs.detach().cuda().requires_grad_(true);
      const gl::Tensor gg = gs.cuda();
      const gl::Tensor yg = gl::softmax(xg.detach(), 1).cpu();
      const double e = max_abs_diff(yg, ys.detach());
      std::cout << "max |softmax on the GPU - on the CPU| (float32) = " << fmt("%.2e", e) << "\n";
      L.check(e < 1e-6, "the GPU's float32 result matches the CPU's (< 1e-6) before it is timed");
      const double gpu_f = device_ms(20, [&] {
        gl::NoGradGuard no_grad;
        gl::softmax(xg, 1);
      });
      const double gpu_fb = device_ms(20, fwd_bwd(xg, gg));
      // With the copies: host -> device, softmax, device -> host, on the host clock (.cpu()
      // waits for the result, so the clock sees all of it).
      const double trip = host_ms(5, [&] {
        gl::NoGradGuard no_grad;
        gl::softmax(xs.detach().cuda(), 1).cpu();
      });
      row("GPU, CUDA events              ", gpu_f, gpu_fb);
      row("GPU with copies, host clock   ", trip, 0);
      std::cout << "speed-up of the GPU over the CPU: forward " << fmt("%.1fx", cpu_f / gpu_f)
                << ", forward+backward " << fmt("%.1fx", cpu_fb / gpu_fb)
                << "; counting the copies: " << fmt("%.1fx", cpu_f / trip) << "\n";
      L.check(trip > 2 * gpu_f,
              "copying x to the GPU and y back costs more than the softmax itself (> 2x): keep "
              "data on the device between ops");
    }

    // -----------------------------------------------------------------------------------------
    if (!gpu) {
      L.section("4. No GPU: the CUDA code path on the host emulator (NOT a GPU, nothing timed)");
      L.say("The host emulator runs each of gradlab's CUDA kernels as a plain loop on the CPU,");
      L.say("thread index by thread index. It checks what does not need a GPU: dispatch to the");
      L.say("CUDA kernels, their index math, the autograd plumbing. It says nothing about speed.");
      gl::cuda::emulator::enable();
      // The same function as section 2; every emulated CUDA tensor is gone when it returns.
      check_cuda_run(L, softmax_on_cuda(X, G), y_cpu, grad_cpu, "the host emulator");
      gl::cuda::emulator::disable();
    }
  });
}
