#pragma once
// Findings and the report every diagnose check returns. A finding is one check's answer:
//   stage (data, model, training) · check name · verdict (ok / warn / fail) · evidence · hint
// plus named numbers (metrics) for tools and tests. A Report collects findings and prints them
// as text for people or JSON for tools (report.json()).

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradlab::diagnose {

/// The three stages, in the order doctor runs them.
enum class Stage { Data, Model, Training };
/// ok: nothing wrong seen; warn: worth a look, training may still work; fail: a bug.
enum class Verdict { Ok, Warn, Fail };

/// "data", "model", "training".
std::string to_string(Stage stage);
/// "ok", "warn", "fail".
std::string to_string(Verdict verdict);

/// One check's answer.
struct Finding {
  Stage stage = Stage::Data;
  /// A stable name, e.g. "label_range", "overfit_one_batch".
  std::string check;
  Verdict verdict = Verdict::Ok;
  /// What was measured: "label 10 at index 3 is out of range [0, 10)".
  std::string evidence;
  /// What to do about it (empty for ok findings).
  std::string hint;
  /// The numbers behind the evidence, by name (e.g. "imbalance_ratio" -> 1.1).
  std::map<std::string, double> metrics;

  bool ok() const { return verdict == Verdict::Ok; }
  bool failed() const { return verdict == Verdict::Fail; }
  /// The metric `name`; throws ValueError naming the metrics it has when it is missing.
  double metric(const std::string& name) const;
  /// "[fail] data/label_range: <evidence>\n       hint: <hint>".
  std::string str() const;
};

/// Findings in the order they were added, and which stages ran.
class Report {
 public:
  void add(Finding finding);
  void add(const std::vector<Finding>& findings);
  const std::vector<Finding>& findings() const { return findings_; }
  /// The findings of one stage.
  std::vector<Finding> findings(Stage stage) const;
  /// The first finding of check `check` (nullptr when that check did not run).
  const Finding* find(std::string_view check) const;
  /// The worst verdict of a stage (Ok when it has no finding).
  Verdict verdict(Stage stage) const;
  /// The worst verdict of all.
  Verdict verdict() const;
  bool has_failure() const { return verdict() == Verdict::Fail; }
  bool has_failure(Stage stage) const { return verdict(stage) == Verdict::Fail; }
  /// Every failed finding, in order.
  std::vector<Finding> failures() const;

  /// Stages that ran (doctor fills this in; a report built by hand lists the stages it holds).
  std::vector<Stage> stages_run;
  /// The stage doctor stopped at because it failed; empty when every stage passed.
  std::optional<Stage> stopped_at;

  /// Text for people: one block per stage, one line per finding, then the verdict line
  /// ("doctor: stopped at the data stage (2 failures): fix these first, then run again").
  std::string text() const;
  /// JSON for tools: {"verdict", "stages_run", "stopped_at", "findings": [{"stage", "check",
  /// "verdict", "evidence", "hint", "metrics": {...}}]}.
  std::string json(int indent = 2) const;

 private:
  std::vector<Finding> findings_;
};

/// report.text().
std::ostream& operator<<(std::ostream& os, const Report& report);
std::ostream& operator<<(std::ostream& os, const Finding& finding);

}  // namespace gradlab::diagnose
