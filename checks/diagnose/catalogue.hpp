#pragma once
// The catalogue's machinery: a planted-bug row (a setup with the bug, the finding doctor must
// give, the words it must and must not use), a healthy setup, and the matcher that judges a
// report against a row. catalogue_test.cpp holds the rows; adding a bug is one table entry.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "diagnose/fixtures.hpp"

namespace diagnose_catalogue {

using namespace diagnose_fixtures;

/// Everything doctor takes: the model, the loss, the optimizer, the data and the options (and
/// whatever the data points at, e.g. a loader).
struct Scenario {
  dg::Model model;
  dg::Loss loss;
  std::shared_ptr<gl::optim::Optimizer> optimizer;
  dg::DoctorData data{};
  dg::DoctorOptions options{};
  std::shared_ptr<gl::data::DataLoader> loader{};  // owns data.loader when set
};

/// What a row's report must hold: a finding of `check` in `stage` with `verdict`, whose evidence
/// or hint holds every one of `words`; no hint of the report (any finding that is not ok) may
/// hold one of `not_words`.
struct Expect {
  dg::Stage stage = dg::Stage::Data;
  std::string check;
  dg::Verdict verdict = dg::Verdict::Fail;
  std::vector<std::string> words{};
  std::vector<std::string> not_words{};
};

/// One planted bug.
struct Bug {
  std::string name;
  std::function<Scenario()> build;
  Expect expect;
};

/// One healthy setup: doctor must raise no warn and no fail.
struct Healthy {
  std::string name;
  std::function<Scenario()> build;
};

/// Hints a data or model bug must never get (knock-on blame of the LR or the model's capacity):
/// the LR plays no part before the first step.
inline const std::vector<std::string>& knock_on_blame() {
  static const std::vector<std::string> words{"LR", "raise it", "capacity", "label noise"};
  return words;
}

/// The matcher's answer.
struct Match {
  bool found = false;
  const dg::Finding* finding = nullptr;  ///< the finding of the expected check, when it ran
  std::string why;                       ///< why not found (empty when found)
};

inline bool contains(const std::string& s, const std::string& w) {
  return s.find(w) != std::string::npos;
}

/// Judges a report against a row. keep_going says how doctor ran: without it a failing row must
/// stop at its stage; with it every later finding that is not ok must be deferred to an earlier
/// failure (Finding::deferred_to), never carry its own hint.
inline Match match(const dg::Report& r, const Expect& e, bool keep_going) {
  Match m;
  auto miss = [&](std::string why) {
    m.found = false;
    m.why = std::move(why);
    return m;
  };
  for (const dg::Finding& f : r.findings())
    if (f.check == e.check && f.stage == e.stage) {
      m.finding = &f;
      break;
    }
  if (!m.finding) return miss(dg::to_string(e.stage) + "/" + e.check + " did not run");
  const dg::Finding& f = *m.finding;
  if (f.verdict != e.verdict)
    return miss(dg::to_string(e.stage) + "/" + e.check + " is " + dg::to_string(f.verdict) +
                ", expected " + dg::to_string(e.verdict));
  for (const std::string& w : e.words)
    if (!contains(f.evidence, w) && !contains(f.hint, w))
      return miss("the finding does not say '" + w + "'");
  for (dg::Stage s : {dg::Stage::Data, dg::Stage::Model, dg::Stage::Training})
    if (s < e.stage && r.has_failure(s))
      return miss("an earlier stage failed first: " + dg::to_string(s));
  // The row's own banned words hold for every hint; the knock-on words for every hint but the
  // expected finding's (conflicting duplicates may rightly call themselves label noise).
  const bool knock_on = e.stage != dg::Stage::Training && e.verdict == dg::Verdict::Fail;
  for (const dg::Finding& g : r.findings()) {
    if (g.ok()) continue;
    std::vector<std::string> banned = e.not_words;
    if (knock_on && &g != m.finding) banned.insert(banned.end(), knock_on_blame().begin(), knock_on_blame().end());
    for (const std::string& w : banned)
      if (contains(g.hint, w))
        return miss(dg::to_string(g.stage) + "/" + g.check + "'s hint says '" + w + "': " + g.hint);
  }
  if (e.verdict == dg::Verdict::Fail) {
    if (!keep_going && (!r.stopped_at || *r.stopped_at != e.stage))
      return miss("doctor did not stop at the " + dg::to_string(e.stage) + " stage");
    if (keep_going)
      for (const dg::Finding& g : r.findings())
        if (g.stage > e.stage && !g.ok() && g.deferred_to.empty())
          return miss("keep_going: " + dg::to_string(g.stage) + "/" + g.check +
                      " is not deferred to the earlier failure: " + g.hint);
  }
  m.found = true;
  return m;
}

/// The findings of a healthy run that are false alarms (verdict warn or fail).
inline std::vector<const dg::Finding*> false_alarms(const dg::Report& r) {
  std::vector<const dg::Finding*> out;
  for (const dg::Finding& f : r.findings())
    if (f.verdict == dg::Verdict::Warn || f.verdict == dg::Verdict::Fail) out.push_back(&f);
  return out;
}

/// doctor on a setup, with keep_going as asked.
inline dg::Report run_doctor(Scenario& s, bool keep_going) {
  dg::DoctorOptions o = s.options;
  o.keep_going = keep_going;
  dg::DoctorData d = s.data;
  if (s.loader) d.loader = s.loader.get();
  return dg::doctor(s.model, s.loss, *s.optimizer, d, o);
}

// gtest prints a failing row's parameter by its name (found by ADL, so in this namespace).
inline void PrintTo(const Bug& b, std::ostream* os) { *os << b.name; }
inline void PrintTo(const Healthy& h, std::ostream* os) { *os << h.name; }

}  // namespace diagnose_catalogue
