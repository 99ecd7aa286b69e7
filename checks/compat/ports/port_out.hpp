// The output format of the port corpus (checks/compat/ports): one result per line,
//   <key> <value> <value> ...
// values printed with 9 significant digits. port_compare.cpp reads two such outputs, one from the
// gradlab build and one recorded from the LibTorch 1.13 build (expected/<program>.txt), and
// compares them:
//   * keys, words and integers must be equal;
//   * fractional numbers within |a - b| <= 1e-4 * max(1, |a|, |b|) (float32 results of the same
//     program differ in their last bits between BLAS kernels and libraries);
//   * a key starting with '~' marks a result that may drift further (a loss after many float32
//     steps, a convergence figure, a step count): its numbers, integers included, within
//     2e-2 * max(1, |a|, |b|).
// Only LibTorch API is used here, so the header compiles against both libraries unchanged.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <iostream>
#include <string>
#include <vector>

namespace port {

inline std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

/// `key v0 v1 ...` for the tensor's values in row-major order (at most `limit` of them).
inline void out(const std::string& key, const torch::Tensor& t, int64_t limit = 64) {
  torch::Tensor flat = t.detach().to(torch::kFloat64).contiguous().flatten();
  std::string line = key;
  const int64_t n = std::min<int64_t>(flat.numel(), limit);
  const double* p = flat.data_ptr<double>();
  // NOTE: appended piece by piece: g++ 12 warns (-Wrestrict, falsely) on " " + std::string.
  for (int64_t i = 0; i < n; ++i) (line += ' ') += num(p[i]);
  std::cout << line << "\n";
}

/// prefix + n, e.g. key("loss_", 3) -> "loss_3" (appended: see the NOTE above).
inline std::string key(const char* prefix, int64_t n) {
  std::string k(prefix);
  k += std::to_string(n);
  return k;
}

inline void out(const std::string& key, double v) { std::cout << key << " " << num(v) << "\n"; }

inline void out(const std::string& key, std::initializer_list<double> vs) {
  std::string line = key;
  for (double v : vs) (line += ' ') += num(v);
  std::cout << line << "\n";
}

inline void out_int(const std::string& key, int64_t v) { std::cout << key << " " << v << "\n"; }

inline void out_shape(const std::string& key, const torch::Tensor& t) {
  std::string line = key;
  for (int64_t d = 0; d < t.dim(); ++d) (line += ' ') += std::to_string(t.size(d));
  std::cout << line << "\n";
}

/// Deterministic "random-looking" values in [-scale, scale]: sin of a scrambled index. Both
/// libraries have different random generators, so programs whose values are compared set their
/// parameters and draw their data from this instead of torch::randn.
inline torch::Tensor wave(torch::IntArrayRef sizes, double scale, double phase = 0.0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  torch::Tensor i = torch::arange(n, torch::dtype(torch::kFloat64));
  return (torch::sin(i * 12.9898 + phase) * scale).reshape(sizes).to(torch::kFloat32);
}

/// Sets every parameter of `module` from wave(), scaled by 1/sqrt(fan-in) as the default inits do.
template <class M>
void init_parameters(M& module, double phase = 0.0) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto& p : module->parameters()) {
    const double fan_in = p.dim() > 1 ? static_cast<double>(p.numel() / p.size(0)) : 4.0;
    p.copy_(wave(p.sizes(), 1.0 / std::sqrt(fan_in), phase + 0.37 * k++));
  }
}

}  // namespace port
