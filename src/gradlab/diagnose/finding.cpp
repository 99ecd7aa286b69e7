#include "gradlab/diagnose/finding.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "gradlab/core/error.hpp"

namespace gradlab::diagnose {

std::string to_string(Stage stage) {
  switch (stage) {
    case Stage::Data: return "data";
    case Stage::Model: return "model";
    case Stage::Training: return "training";
  }
  return "?";
}

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::NotRun: return "not_run";
    case Verdict::Ok: return "ok";
    case Verdict::Warn: return "warn";
    case Verdict::Fail: return "fail";
  }
  return "?";
}

double Finding::metric(const std::string& name) const {
  auto it = metrics.find(name);
  if (it != metrics.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : metrics) have += (have.empty() ? "" : ", ") + k;
  throw ValueError(error_message("Finding::metric", "check '" + check + "' has no metric '" + name + "'",
                                 "one of: " + (have.empty() ? std::string("(none)") : have), "'" + name + "'"));
}

std::string Finding::str() const {
  std::ostringstream os;
  // NOTE: built by appends: GCC 12 warns falsely (-Wrestrict) on "[" + std::string.
  std::string tag = "[";
  tag += to_string(verdict);
  tag += "]";
  os << tag << std::string(7 - tag.size(), ' ') << to_string(stage) << "/" << check << ": ";
  // Continuation lines of the evidence line up under its first character.
  const std::string pad(7, ' ');
  for (char c : evidence) {
    os << c;
    if (c == '\n') os << pad << "  ";
  }
  if (!hint.empty()) os << "\n" << pad << "hint: " << hint;
  return os.str();
}

void Report::add(Finding finding) {
  if (std::find(stages_run.begin(), stages_run.end(), finding.stage) == stages_run.end())
    stages_run.push_back(finding.stage);
  findings_.push_back(std::move(finding));
}

void Report::add(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) add(f);
}

std::vector<Finding> Report::findings(Stage stage) const {
  std::vector<Finding> out;
  for (const Finding& f : findings_)
    if (f.stage == stage) out.push_back(f);
  return out;
}

const Finding* Report::find(std::string_view check) const {
  for (const Finding& f : findings_)
    if (f.check == check) return &f;
  return nullptr;
}

Verdict Report::verdict(Stage stage) const {
  if (std::find(stages_run.begin(), stages_run.end(), stage) == stages_run.end()) return Verdict::NotRun;
  Verdict v = Verdict::Ok;
  for (const Finding& f : findings_)
    if (f.stage == stage) v = std::max(v, f.verdict);
  return v;
}

Verdict Report::verdict() const {
  Verdict v = Verdict::Ok;
  for (const Finding& f : findings_) v = std::max(v, f.verdict);
  return v;
}

std::vector<Finding> Report::failures() const {
  std::vector<Finding> out;
  for (const Finding& f : findings_)
    if (f.failed()) out.push_back(f);
  return out;
}

void Report::defer_to(size_t from, const Finding& cause) {
  const std::string name = to_string(cause.stage) + "/" + cause.check;
  for (size_t i = from; i < findings_.size(); ++i) {
    Finding& f = findings_[i];
    if (f.ok()) continue;
    f.hint = "fix " + name + " first: this " + to_string(f.stage) +
             " finding may follow from it (run doctor again after that fix)";
    f.deferred_to = name;
  }
}

std::string Report::text() const {
  std::ostringstream os;
  for (Stage s : {Stage::Data, Stage::Model, Stage::Training}) {
    const bool ran = std::find(stages_run.begin(), stages_run.end(), s) != stages_run.end();
    if (!ran) {
      if (stopped_at) os << "== " << to_string(s) << ": not run (stopped at the " << to_string(*stopped_at) << " stage)\n";
      continue;
    }
    const auto fs = findings(s);
    int warns = 0, fails = 0;
    for (const Finding& f : fs) {
      if (f.verdict == Verdict::Fail) ++fails;
      if (f.verdict == Verdict::Warn) ++warns;
    }
    os << "== " << to_string(s) << ": " << to_string(verdict(s)) << " (" << fs.size() << " checks, " << fails
       << " failed, " << warns << " warned)\n";
    for (const Finding& f : fs) os << "  " << f.str() << "\n";
  }
  os << verdict_line() << "\n";
  return os.str();
}

std::string Report::verdict_line() const {
  const size_t nfail = failures().size();
  const std::string failures_str = std::to_string(nfail) + (nfail == 1 ? " failure" : " failures");
  if (stopped_at) return "doctor: stopped at the " + to_string(*stopped_at) + " stage (" + failures_str + "): fix it first, then run again";
  if (has_failure()) return "doctor: " + failures_str;
  return std::string("doctor: no failure") + (verdict() == Verdict::Warn ? " (see the warnings)" : "");
}

int64_t Histogram::total() const {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

Histogram make_histogram(const std::vector<double>& values, int bins) {
  GRADLAB_CHECK(bins >= 1, ValueError, "diagnose::make_histogram", "needs at least one bin", "bins >= 1", std::to_string(bins));
  Histogram h;
  h.counts.assign(static_cast<size_t>(bins), 0);
  bool any = false;
  double lo = 0, hi = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
  if (any && lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  h.lo = lo;
  h.hi = hi;
  // bin of v: floor((v - lo) / (hi - lo) * bins), with v = hi in the last bin
  for (double v : values) {
    if (!std::isfinite(v)) {
      ++h.nonfinite;
      continue;
    }
    const double at = (v - lo) / (hi - lo) * bins;
    h.counts[static_cast<size_t>(std::clamp(static_cast<int64_t>(at), int64_t{0}, int64_t{bins - 1}))]++;
  }
  return h;
}

std::string Report::json(int indent) const {
  nlohmann::ordered_json j;
  j["schema"] = "gradlab.diagnose.report/" + std::to_string(kJsonSchemaVersion);
  j["verdict"] = to_string(verdict());
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (Stage s : {Stage::Data, Stage::Model, Stage::Training}) stages[to_string(s)] = to_string(verdict(s));
  j["stages"] = stages;
  j["stages_run"] = nlohmann::json::array();
  for (Stage s : stages_run) j["stages_run"].push_back(to_string(s));
  j["stopped_at"] = stopped_at ? nlohmann::ordered_json(to_string(*stopped_at)) : nlohmann::ordered_json(nullptr);
  j["findings"] = nlohmann::json::array();
  for (const Finding& f : findings_) {
    nlohmann::ordered_json o;
    o["stage"] = to_string(f.stage);
    o["check"] = f.check;
    o["verdict"] = to_string(f.verdict);
    o["evidence"] = f.evidence;
    o["hint"] = f.hint;
    o["deferred_to"] = f.deferred_to.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.deferred_to);
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    // NOTE: JSON has no NaN or Inf: a non-finite metric is written as null.
    for (const auto& [k, v] : f.metrics) m[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
    o["metrics"] = m;
    j["findings"].push_back(o);
  }
  return j.dump(indent);
}

std::ostream& operator<<(std::ostream& os, const Report& report) { return os << report.text(); }
std::ostream& operator<<(std::ostream& os, const Finding& finding) { return os << finding.str(); }

}  // namespace gradlab::diagnose
