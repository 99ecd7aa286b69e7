#pragma once
// Findings and the report every diagnose check returns. A finding is one check's answer:
//   stage (data, model, training) · check name · verdict (ok / warn / fail) · evidence · hint
// plus named numbers (metrics) for tools and tests. A Report collects findings and prints them
// as text for people, JSON for tools (report.json()) or one HTML page with charts (report.html()).

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradlab/diagnose/charts.hpp"

namespace gradlab::diagnose {

/// The three stages, in the order doctor runs them.
enum class Stage { Data, Model, Training };
/// ok: nothing wrong seen; warn: worth a look, training may still work; fail: a bug. not_run: the
/// verdict of a stage that did not run (a finding itself is never not_run). Ordered: worse is
/// greater (NotRun < Ok < Warn < Fail).
enum class Verdict { NotRun, Ok, Warn, Fail };

/// "data", "model", "training".
std::string to_string(Stage stage);
/// "not_run", "ok", "warn", "fail".
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
  /// "data/finite" when this finding may follow from that earlier failure (Report::defer_to);
  /// empty otherwise.
  std::string deferred_to;

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
  /// The worst verdict of a stage: NotRun when the stage is not in stages_run, else Ok when it has
  /// no finding.
  Verdict verdict(Stage stage) const;
  /// The worst verdict of all (Ok for an empty report).
  Verdict verdict() const;
  bool has_failure() const { return verdict() == Verdict::Fail; }
  bool has_failure(Stage stage) const { return verdict(stage) == Verdict::Fail; }
  /// Every failed finding, in order.
  std::vector<Finding> failures() const;
  /// Rewords the findings from index `from` on that are not ok as possible consequences of
  /// `cause`, an earlier stage's failure: the hint becomes "fix <stage>/<check> first: ..." and the
  /// check's own hint is dropped (it would blame the LR or the model for what the cause did);
  /// "deferred_to" names the cause. doctor does this with keep_going.
  void defer_to(size_t from, const Finding& cause);

  /// Stages that ran (doctor fills this in; a report built by hand lists the stages it holds).
  std::vector<Stage> stages_run;
  /// The stage doctor stopped at because it failed; empty when every stage passed, and with
  /// DoctorOptions::keep_going (then every stage ran).
  std::optional<Stage> stopped_at;
  /// The LR sweep, activation histograms and gradient norms doctor saw (for html(); json()
  /// leaves them out).
  ReportCharts charts;

  /// The version of json()'s layout (its "schema" field: "gradlab.diagnose.report/<n>"); it
  /// changes when a field is renamed, removed or changes meaning.
  static constexpr int kJsonSchemaVersion = 1;

  /// Text for people: one block per stage, one line per finding, then the verdict line
  /// ("doctor: stopped at the data stage (2 failures): fix it first, then run again", or
  /// "doctor: no failure").
  std::string text() const;
  /// The last line of text(): "doctor: no failure", "doctor: stopped at the data stage (...)".
  std::string verdict_line() const;
  /// JSON for tools, schema "gradlab.diagnose.report/1" (README "Troubleshooting: diagnose"):
  /// {"schema", "verdict", "stages": {"data"|"model"|"training": "not_run"|"ok"|"warn"|"fail"},
  ///  "stages_run", "stopped_at" (null unless doctor stopped), "findings": [{"stage", "check",
  ///  "verdict", "evidence", "hint", "deferred_to" (null or "stage/check"),
  ///  "metrics": {name: number or null}}]}.
  std::string json(int indent = 2) const;
  /// One self-contained HTML5 page (no external resource, no script): the verdict line, the
  /// stages in order (data, model, training; a stage that did not run is shown as not run) with
  /// each finding's verdict, check, evidence, hint and deferred_to, and inline SVG charts of
  /// `charts` (LR sweep on a log axis with the best LR, the divergence and the optimizer's LR
  /// marked; one histogram per layer; gradient norms per parameter over the steps). All text is
  /// escaped. Elements a test can query: #verdict, section#stage-<stage>.stage[data-verdict],
  /// .finding[data-check][data-verdict], figure.chart[data-chart="lr_range"|"activations"|
  /// "grad_norms"].
  std::string html_string() const;
  /// Writes html_string() to `path` atomically (a temporary file in the same directory, then a
  /// rename over `path`): a failed write throws IOError naming `path` and leaves a previous file
  /// there as it was.
  void html(const std::string& path) const;

 private:
  std::vector<Finding> findings_;
};

/// report.text().
std::ostream& operator<<(std::ostream& os, const Report& report);
std::ostream& operator<<(std::ostream& os, const Finding& finding);

}  // namespace gradlab::diagnose
