// The LibTorch port path: put <prefix>/include/gradlab/compat on the include path (or link
// gradlab::torch_compat) and `#include <torch/torch.h>` gives `namespace torch = gradlab;` plus
// LibTorch's macros, which cannot live in a namespace.
//   torch::nn, torch::optim, torch::data, torch::kFloat32, torch::Tensor ... are gradlab's.
// docs/libtorch_parity.md lists what is offered and what is still absent.
#pragma once

#include <gradlab/gradlab.hpp>

#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace torch = gradlab;

namespace gradlab {
/// torch::optional / torch::nullopt (LibTorch 1.13: c10::optional), e.g. the return type of a
/// torch::data dataset's size().
using std::nullopt;
using std::optional;
}  // namespace gradlab

namespace gradlab::compat_detail {

/// The message parts streamed into one string ("" for none), as LibTorch's c10::str.
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  if constexpr (sizeof...(Args) > 0) (os << ... << args);  // none: `(os);` would warn
  return os.str();
}

/// Throws gradlab::Error for a failed TORCH_CHECK: the user's message, or LibTorch's default.
[[noreturn]] inline void check_failed(const char* cond, const char* file, int line,
                                      const std::string& msg) {
  std::string what = msg.empty() ? "Expected " + std::string(cond) + " to be true, but got false."
                                 : msg;
  what += " (TORCH_CHECK(" + std::string(cond) + ") failed at " + file + ":" +
          std::to_string(line) + ")";
  throw ::gradlab::Error(what);
}

/// Throws gradlab::Error for a failed internal assert (AT_ASSERT, TORCH_INTERNAL_ASSERT).
[[noreturn]] inline void assert_failed(const char* cond, const char* file, int line,
                                       const std::string& msg) {
  std::string what = std::string(cond) + " INTERNAL ASSERT FAILED at " + file + ":" +
                     std::to_string(line);
  if (!msg.empty()) what += ": " + msg;
  throw ::gradlab::Error(what);
}

/// Writes a TORCH_WARN line to std::cerr, as LibTorch's default warning handler does.
inline void warn(const char* file, int line, const std::string& msg) {
  std::cerr << "Warning: " << msg << " (" << file << ":" << line << ")\n";
}

}  // namespace gradlab::compat_detail

namespace gradlab {
/// torch::str("a", 1, 2.0): the parts streamed into one string (c10::str).
using compat_detail::str;
}  // namespace gradlab

#ifndef TORCH_MODULE
/// LibTorch's holder macro: TORCH_MODULE(Net) declares Net holding a std::shared_ptr<NetImpl>.
#define TORCH_MODULE(Name) GRADLAB_MODULE(Name)
#endif

// NOTE: the message parts go through str(), which takes zero or more arguments, so
// `TORCH_CHECK(cond)` alone is valid (C++20 allows an empty `...`; no GNU `##__VA_ARGS__`).
/// Throws gradlab::Error with the streamed message parts when `cond` is false.
#define TORCH_CHECK(cond, ...)                                                          \
  do {                                                                                  \
    if (!(cond))                                                                        \
      ::gradlab::compat_detail::check_failed(#cond, __FILE__, __LINE__,                 \
                                             ::gradlab::compat_detail::str(__VA_ARGS__)); \
  } while (false)

/// Throws gradlab::Error naming the condition, file and line when `cond` is false.
#define TORCH_INTERNAL_ASSERT(cond, ...)                                                 \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::gradlab::compat_detail::assert_failed(#cond, __FILE__, __LINE__,                 \
                                              ::gradlab::compat_detail::str(__VA_ARGS__)); \
  } while (false)

/// LibTorch's older spelling of TORCH_INTERNAL_ASSERT.
#define AT_ASSERT(...) TORCH_INTERNAL_ASSERT(__VA_ARGS__)

/// Writes "Warning: <message parts> (file:line)" to std::cerr.
#define TORCH_WARN(...) \
  ::gradlab::compat_detail::warn(__FILE__, __LINE__, ::gradlab::compat_detail::str(__VA_ARGS__))
