#pragma once
// The small harness every lesson uses: print what the lesson shows, check every claim it makes,
// end with exactly one verdict line and a non-zero exit code when a claim fails.
//
//   int main() {
//     lesson::Lesson L("02", "tensors and autograd");
//     return L.run([&] {
//       L.section("requires_grad");
//       L.check(y.requires_grad(), "y = x * 2 requires grad because x does");
//     });                                     // prints "lesson 02: OK" or
//   }                                         // "lesson 02: FAILED (k of n claims)"
//
// Header-only on purpose: lessons are single files and should stay readable on their own.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace lesson {

/// Where a lesson may write files (graph dumps, ...): $GRADLAB_LESSON_OUTPUT_DIR when set (ctest
/// sets it to a folder of the build tree), else <system temp>/gradlab-lessons. Never the repo.
inline std::filesystem::path output_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("GRADLAB_LESSON_OUTPUT_DIR"); env && *env) {
    dir = env;
  } else {
    dir = std::filesystem::temp_directory_path() / "gradlab-lessons";
  }
  std::filesystem::create_directories(dir);
  return dir;
}

/// One lesson: numbered claims, each printed with its result, and one verdict at the end.
class Lesson {
 public:
  Lesson(std::string number, std::string title)
      : number_(std::move(number)), title_(std::move(title)) {
    std::cout << "=== lesson " << number_ << ": " << title_ << " ===\n";
  }
  Lesson(const Lesson&) = delete;
  Lesson& operator=(const Lesson&) = delete;

  /// A heading for the next group of lines.
  void section(std::string_view title) { std::cout << "\n--- " << title << " ---\n"; }

  /// Prints an explanatory line (not a claim: nothing to check).
  void say(std::string_view text) { std::cout << text << "\n"; }

  /// Checks one claim; prints "  [ok]   claim" or "  [FAIL] claim". Returns cond.
  bool check(bool cond, std::string_view claim) {
    ++claims_;
    if (!cond) ++failed_;
    std::cout << (cond ? "  [ok]   " : "  [FAIL] ") << claim << "\n";
    return cond;
  }

  /// Checks |got - want| <= tol and prints both numbers with the claim.
  bool check_close(double got, double want, std::string_view claim, double tol = 1e-12) {
    const bool ok = std::abs(got - want) <= tol;  // NOTE: false for NaN, as it should be
    std::ostringstream os;
    os.precision(10);
    os << claim << "  (got " << got << ", expected " << want << ")";
    return check(ok, os.str());
  }

  /// Checks that `f()` throws an exception whose message contains `needle`; prints the first
  /// line of the message so the reader sees the real error text.
  template <class F>
  bool check_throws(F&& f, std::string_view needle, std::string_view claim) {
    std::string what;
    bool threw = false;
    try {
      std::forward<F>(f)();
    } catch (const std::exception& e) {
      threw = true;
      what = e.what();
    }
    const bool ok = threw && what.find(needle) != std::string::npos;
    if (threw) {
      const std::string first = what.substr(0, what.find('\n'));
      std::cout << "         error: " << first << (first.size() < what.size() ? " ..." : "")
                << "\n";
    } else {
      std::cout << "         (no exception was thrown)\n";
    }
    return check(ok, claim);
  }

  /// Prints the verdict line and returns the exit code (0 when every claim held).
  int finish() {
    if (finished_) return failed_ == 0 && claims_ > 0 ? 0 : 1;
    finished_ = true;
    std::cout << "\n";
    if (claims_ == 0) {
      std::cout << "lesson " << number_ << ": FAILED (no claims were checked)\n";
      return 1;
    }
    if (failed_ == 0) {
      std::cout << "lesson " << number_ << ": OK\n";
      return 0;
    }
    std::cout << "lesson " << number_ << ": FAILED (" << failed_ << " of " << claims_
              << " claims)\n";
    return 1;
  }

  /// Runs the lesson body; an exception that escapes it is a failed claim. Returns finish().
  template <class F>
  int run(F&& body) {
    try {
      std::forward<F>(body)();
    } catch (const std::exception& e) {
      std::cout << "\nunexpected exception: " << e.what() << "\n";
      check(false, "the lesson ran to the end without an unexpected exception");
    }
    std::cout.flush();
    return finish();
  }

  int claims() const { return claims_; }
  int failed() const { return failed_; }

 private:
  std::string number_;
  std::string title_;
  int claims_ = 0;
  int failed_ = 0;
  bool finished_ = false;
};

}  // namespace lesson
