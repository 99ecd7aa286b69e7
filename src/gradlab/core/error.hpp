#pragma once
// Errors and call sites. Every message has one shape:
//   "<op>: <what is wrong>; expected <X>, got <Y>; hint: <what to do>"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

// C++17 clients (xeus-cling, `g++ -std=c++17`) include these headers too: std::source_location
// when the standard library has it, else the compiler builtins it is built on (GCC and clang both
// have them). NOTE: Site's layout is the same either way (SiteLocation below), so a C++17 TU and
// the C++20 library agree on it.
#if __cplusplus >= 202002L && defined(__has_include)
#if __has_include(<source_location>)
#include <source_location>
#endif
#endif
#if defined(__cpp_lib_source_location) && __cpp_lib_source_location >= 201907L
#define GRADLAB_HAVE_SOURCE_LOCATION 1
#else
#define GRADLAB_HAVE_SOURCE_LOCATION 0
#endif
// GCC 12 has no __builtin_COLUMN (clang does): column 0 there.
#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define GRADLAB_BUILTIN_COLUMN() __builtin_COLUMN()
#endif
#endif
#ifndef GRADLAB_BUILTIN_COLUMN
#define GRADLAB_BUILTIN_COLUMN() 0
#endif
// `if (rare) GRADLAB_UNLIKELY stmt;` is [[unlikely]] in C++20 and nothing in C++17 (clang warns
// about the attribute there: -Wc++20-attribute-extensions).
#if __cplusplus >= 202002L
#define GRADLAB_LIKELY [[likely]]
#define GRADLAB_UNLIKELY [[unlikely]]
#else
#define GRADLAB_LIKELY
#define GRADLAB_UNLIKELY
#endif

namespace gradlab {

/// The parts of a std::source_location that a Site keeps, with the same accessors.
struct SiteLocation {
  const char* file = "";
  const char* function = "";
  std::uint_least32_t line_ = 0;
  std::uint_least32_t column_ = 0;
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }
  constexpr const char* file_name() const noexcept { return file; }
  constexpr const char* function_name() const noexcept { return function; }
};

/// Where in the user's code something happened (a tensor made, an in-place write).
/// Public ops take `Site site = {}` as their last parameter: the default argument is evaluated
/// at the caller, so the location is the user's line, not gradlab's.
struct Site {
  SiteLocation loc;
#if GRADLAB_HAVE_SOURCE_LOCATION
  constexpr Site(std::source_location l = std::source_location::current()) noexcept  // NOLINT
      : loc{l.file_name(), l.function_name(), l.line(), l.column()} {}
  static constexpr Site current(std::source_location l = std::source_location::current()) noexcept {
    return Site(l);
  }
#else
  // The builtins are evaluated at the caller when they are default arguments, as
  // std::source_location::current() is.
  constexpr Site(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                 std::uint_least32_t line = __builtin_LINE(),
                 std::uint_least32_t column = GRADLAB_BUILTIN_COLUMN()) noexcept  // NOLINT
      : loc{file, function, line, column} {}
  static constexpr Site current(const char* file = __builtin_FILE(),
                                const char* function = __builtin_FUNCTION(),
                                std::uint_least32_t line = __builtin_LINE(),
                                std::uint_least32_t column = GRADLAB_BUILTIN_COLUMN()) noexcept {
    return Site(file, function, line, column);
  }
#endif
  constexpr explicit Site(const SiteLocation& l) noexcept : loc(l) {}
  /// A site that names no place (line 0).
  static Site unknown() noexcept;
  bool known() const noexcept { return loc.line() != 0; }
  /// A place inside gradlab itself: its sources (".../src/gradlab/...") or its installed headers
  /// (".../include/gradlab/..."), not the user's code.
  bool in_library() const noexcept;
  /// "file.cpp:12 (in main)", or "<unknown site>".
  std::string str() const;
};

/// A source path as sites print it: from the last path component named src/, lessons/, checks/,
/// bench/ or notebooks/ on ("/home/me/gradlab/src/gradlab/nn/layers.cpp" ->
/// "src/gradlab/nn/layers.cpp"); the path unchanged when it has none. Only whole components
/// count: a checkout in "/work/i11-lessons/" keeps "src/..." for its library files.
std::string short_source_path(std::string_view file);

/// The user's call of a module (module holders open one: `fc(x)`). The ops inside a module's
/// forward carry gradlab's own line (layers.cpp); anomaly mode adds this one, the caller's line.
/// Calls made from gradlab's own sources (src/gradlab/) do not replace the user's.
class ModuleCallScope {
 public:
  explicit ModuleCallScope(const Site& site) noexcept;
  ~ModuleCallScope();
  ModuleCallScope(const ModuleCallScope&) = delete;
  ModuleCallScope& operator=(const ModuleCallScope&) = delete;
  /// The innermost user call of a module on this thread; Site::unknown() outside any.
  static Site current() noexcept;

 private:
  Site previous_ = Site::unknown();
  bool set_ = false;
};

/// Base of every exception gradlab throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Sizes that do not fit the op (broadcasting, matmul, reshape, index out of range...).
class ShapeError : public Error {
 public:
  using Error::Error;
};
/// A dtype the op cannot take, or a bad mix of dtypes.
class DTypeError : public Error {
 public:
  using Error::Error;
};
/// A device that is not available, or tensors on different devices in one op.
class DeviceError : public Error {
 public:
  using Error::Error;
};
/// Misuse of autograd: backward on a non-scalar, a freed graph, an in-place write on a leaf...
class AutogradError : public Error {
 public:
  using Error::Error;
};
/// A device allocation that does not fit (names the size asked, what gradlab holds, what is free).
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};
/// Reading or writing files.
class IOError : public Error {
 public:
  using Error::Error;
};
/// A bad argument value that is not about shape, dtype or device (negative eps, empty list...).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// Builds the standard message "<op>: <what>; expected <X>, got <Y>; hint: <H>".
/// Empty parts are left out.
std::string error_message(std::string_view op, std::string_view what, std::string_view expected = {},
                          std::string_view got = {}, std::string_view hint = {});

}  // namespace gradlab

/// Throws `Kind(error_message(...))` unless `cond` holds.
#define GRADLAB_CHECK(cond, Kind, ...)                               \
  do {                                                               \
    if (!(cond)) throw Kind(::gradlab::error_message(__VA_ARGS__));  \
  } while (0)
