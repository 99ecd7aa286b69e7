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
// Break-it switches: a lesson may declare planted bugs, each a deliberate mistake (often a gradlab
// bug planted through testing::BackwardOverride) and the claim it must make fail:
//
//   int main(int argc, char** argv) {
//     lesson::Lesson L("03", "verify backprop", argc, argv,
//                      {{"sigmoid_grad", "sigmoid's backward returns s instead of s(1 - s)",
//                        "gradcheck rejects"}});              // a piece of the claim's text
//     return L.run([&] {
//       std::optional<BackwardOverride<...>> m;
//       if (L.bug("sigmoid_grad")) m.emplace(...);            // on with --bug sigmoid_grad
//       ...
//
//   lesson_03 --bugs              lists them (name, what it plants, the claim it breaks), runs nothing
//   lesson_03 --bug sigmoid_grad  runs the lesson with that bug on: the named claim must FAIL
//                                 (tools/check_lesson_bugs.py runs every flag and checks that)
//
// Header-only on purpose: lessons are single files and should stay readable on their own.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// A break-it switch: `--bug name` plants `what`; the claim whose text contains `breaks` must fail.
struct PlantedBug {
  std::string name;
  std::string what;
  std::string breaks;
};

/// One lesson: numbered claims, each printed with its result, and one verdict at the end.
class Lesson {
 public:
  Lesson(std::string number, std::string title)
      : number_(std::move(number)), title_(std::move(title)) {
    std::cout << "=== lesson " << number_ << ": " << title_ << " ===\n";
  }
  /// With the command line and the lesson's planted bugs: `--bugs` lists them (run() then runs
  /// nothing), `--bug NAME` (repeatable) switches one on. An unknown flag or name exits with 2.
  Lesson(std::string number, std::string title, int argc, char** argv, std::vector<PlantedBug> bugs = {})
      : number_(std::move(number)), title_(std::move(title)), bugs_(std::move(bugs)) {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--bugs") {
        list_only_ = true;
      } else if (a == "--bug" && i + 1 < argc) {
        const std::string name = argv[++i];
        if (!declared(name)) usage("no planted bug '" + name + "'");
        on_.push_back(name);
      } else {
        usage("unknown argument '" + std::string(a) + "'");
      }
    }
    if (list_only_) {
      // One bug per line: name <TAB> what it plants <TAB> the claim it breaks.
      for (const PlantedBug& b : bugs_) std::cout << b.name << "\t" << b.what << "\t" << b.breaks << "\n";
      return;
    }
    std::cout << "=== lesson " << number_ << ": " << title_ << " ===\n";
    for (const std::string& name : on_)
      for (const PlantedBug& b : bugs_)
        if (b.name == name)
          std::cout << "planted bug on: " << b.name << ": " << b.what << " (the claim \"" << b.breaks
                    << "...\" must FAIL)\n";
  }

  /// Whether planted bug `name` is switched on (--bug name). A name the lesson did not declare
  /// is a mistake in the lesson: it throws.
  bool bug(std::string_view name) const {
    if (!declared(name)) throw std::logic_error("lesson " + number_ + ": bug('" + std::string(name) + "') is not declared");
    for (const std::string& n : on_)
      if (n == name) return true;
    return false;
  }
  /// Whether any planted bug is on (a lesson may skip slow sections that no bug touches).
  bool any_bug() const { return !on_.empty(); }
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
  /// With --bugs it runs nothing and returns 0.
  template <class F>
  int run(F&& body) {
    if (list_only_) return 0;
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
  bool declared(std::string_view name) const {
    for (const PlantedBug& b : bugs_)
      if (b.name == name) return true;
    return false;
  }
  [[noreturn]] void usage(const std::string& problem) const {
    std::cerr << "lesson " << number_ << ": " << problem << "\nusage: lesson [--bugs] [--bug NAME]...";
    if (bugs_.empty()) std::cerr << "\n(this lesson has no planted bugs)";
    for (const PlantedBug& b : bugs_) std::cerr << "\n  --bug " << b.name << ": " << b.what;
    std::cerr << "\n";
    std::exit(2);
  }

  std::string number_;
  std::string title_;
  std::vector<PlantedBug> bugs_;
  std::vector<std::string> on_;
  bool list_only_ = false;
  int claims_ = 0;
  int failed_ = 0;
  bool finished_ = false;
};

}  // namespace lesson
