// gradcheck's report: the text for people and the JSON for tools (through nlohmann-json).

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradlab/testing/gradcheck/checker.hpp"

namespace gradlab::testing {

namespace {

using gradcheck_detail::fmt;
using gradcheck_detail::num;
using gradcheck_detail::sci;

std::string tolerances(const GradcheckOptions& o) {
  return "(eps=" + fmt("%.0e", o.eps_) + " atol=" + fmt("%.0e", o.atol_) +
         " rtol=" + fmt("%.0e", o.rtol_) + ")";
}

// "input 0 [1, 2] -> output 0 [3]" (or "(uᵀJv)" for a fast product, "(uᵀJ)" for a vjp entry).
std::string where_line(const GradcheckFailure& f) {
  std::string s = "input " + std::to_string(f.input) + " ";
  s += f.check == "fast" ? std::string("(uᵀJv)") : shape_str(f.element);
  if (f.check == "jacobian")
    s += " -> output " + std::to_string(f.output) + " " + shape_str(f.output_element);
  if (f.check == "vjp") s += " (uᵀJ)";
  return s;
}

std::string entry_line(const GradcheckFailure& f) {
  return where_line(f) + ": analytic " + num(f.analytic) + ", numeric " + num(f.numeric) +
         ", |diff| " + sci(f.abs_err) + ", rel " + sci(f.rel_err) + ", tol " + sci(f.tolerance);
}

std::string inconclusive_line(const GradcheckFailure& f) {
  return where_line(f) + ": analytic " + num(f.analytic) + ", numeric " + num(f.numeric_eps) +
         " at eps but " + num(f.numeric_half) + " at eps/2: they differ by " +
         sci(f.numeric_spread) + " > tol " + sci(f.tolerance);
}

std::string headline_for_check(const std::string& name) {
  if (name == "linearity") return "backward is not linear in the upstream gradient";
  if (name == "nondeterminism") return "backward is not deterministic";
  if (name == "undefined_grad") return "an undefined output gradient is not treated as zeros";
  if (name == "inputs_unchanged") return "fn modifies its inputs";
  if (name == "grad_dtype") return "a gradient has the wrong dtype";
  if (name == "taylor") return "the Taylor remainder shrinks at the wrong order";
  if (name == "exception") return "an exception was thrown";
  return name;
}

}  // namespace

// ---- report ----------------------------------------------------------------------------------

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Passed:
      return "passed";
    case Verdict::Failed:
      return "failed";
    case Verdict::Inconclusive:
      return "inconclusive";
  }
  return "?";
}

std::string GradcheckReport::first_failure() const {
  if (!failures.empty()) return failures.front().check;
  for (const auto& c : checks)
    if (!c.passed) return c.name;
  if (!ok && inconclusive()) return "inconclusive";  // fail_on_inconclusive
  return "";
}

std::vector<GradcheckFailure> GradcheckReport::top(int64_t k) const {
  if (k < 0) k = options.top_k_;
  std::vector<GradcheckFailure> r(
      failures.begin(),
      failures.begin() + std::min<int64_t>(k, static_cast<int64_t>(failures.size())));
  return r;
}

std::string GradcheckReport::text() const {
  std::ostringstream os;
  auto input_desc = [&](int64_t i) {
    return "input " + std::to_string(i) + " of " + std::to_string(num_inputs) + ", shape " +
           shape_str(input_shapes[i]) + ", " + to_string(input_dtypes[i]);
  };
  auto summary = [&] {
    for (size_t k = 0; k < checked_inputs.size(); ++k)
      os << (k ? "; " : "") << input_desc(checked_inputs[k]);
    os << "; " << mode << " " << jacobian_rows << " x " << jacobian_cols << ", " << comparisons
       << " comparisons";
  };
  if (verdict == Verdict::Inconclusive) {
    const int64_t entries = static_cast<int64_t>(inconclusive_entries.size());
    os << "gradcheck inconclusive for " << name << ": "
       << (entries > 0
               ? "the numeric estimate is unstable here (" + std::to_string(entries) + " of " +
                     std::to_string(comparisons) + " comparisons; no failure found)"
               : std::string("the Taylor fit is unusable here (no failure found)"))
       << (ok ? "" : "; counted as a failure (fail_on_inconclusive)") << "\n  ";
    summary();
    os << ", max |diff| " << sci(max_abs_err) << " where conclusive\n";
  }
  if (verdict == Verdict::Passed) {
    os << "gradcheck passed for " << name << ": ";
    for (size_t k = 0; k < checked_inputs.size(); ++k)
      os << (k ? "; " : "") << input_desc(checked_inputs[k]);
    os << "; " << mode << " " << jacobian_rows << " x " << jacobian_cols << ", " << comparisons
       << " comparisons, max |diff| " << sci(max_abs_err);
    if (num_refined > 0) os << " (" << num_refined << " refined at eps/2)";
    if (taylor.ran)
      os << ", Taylor order "
         << (std::isnan(taylor.order) ? std::string("n/a (at rounding level)")
                                      : fmt("%.2f", taylor.order));
    os << "\n";
  } else if (verdict == Verdict::Inconclusive) {
    // headline above
  } else if (!failures.empty()) {
    const GradcheckFailure& w = failures.front();
    os << "gradcheck failed for " << name << ": " << input_desc(w.input) << "\n";
    if (w.check == "fast") {
      os << "  uᵀJv along a random direction: analytic = " << num(w.analytic)
         << ", numeric = " << num(w.numeric) << "\n";
    } else {
      os << "  element " << shape_str(w.element) << ": analytic = " << num(w.analytic)
         << ", numeric = " << num(w.numeric) << "\n";
    }
    os << "  |diff| = " << sci(w.abs_err) << " > atol + rtol*|numeric| = " << sci(w.tolerance)
       << "   " << tolerances(options) << "\n";
    if (w.check == "jacobian")
      os << "  Jacobian entry d output " << w.output << " " << shape_str(w.output_element)
         << " / d input " << w.input << " " << shape_str(w.element) << "; " << num_failures
         << " of " << comparisons << " comparisons fail (" << mode << " " << jacobian_rows << " x "
         << jacobian_cols << ")\n";
    else if (w.check == "vjp")
      os << "  element of uᵀJ for a random upstream gradient u; " << num_failures << " of "
         << comparisons << " comparisons fail (" << mode << ")\n";
    else
      os << "  fast mode: rerun with fast_mode(false) on a smaller input to name the element\n";
    if (failures.size() > 1) {
      const auto t = top();
      os << "  worst " << t.size() << " of " << num_failures << ":\n";
      for (const auto& f : t) os << "    " << entry_line(f) << "\n";
    }
  } else {
    std::string first;
    for (const auto& c : checks)
      if (!c.passed) {
        first = c.name;
        break;
      }
    os << "gradcheck failed for " << name << ": " << headline_for_check(first) << "\n";
  }
  if (!inconclusive_entries.empty()) {
    const auto n = std::min<size_t>(inconclusive_entries.size(),
                                    static_cast<size_t>(std::max<int64_t>(options.top_k_, 1)));
    os << "  inconclusive: the numeric estimate is unstable here at " << inconclusive_entries.size()
       << " comparison" << (inconclusive_entries.size() == 1 ? "" : "s")
       << " (not counted as failures)"
       << (n < inconclusive_entries.size() ? "; worst " + std::to_string(n) : std::string())
       << ":\n";
    for (size_t k = 0; k < n; ++k)
      os << "    " << inconclusive_line(inconclusive_entries[k]) << "\n";
    os << "  hint: fn varies faster than eps=" << fmt("%.0e", options.eps_)
       << " resolves at this point; check it at a better conditioned point\n";
  }
  for (const auto& c : checks)
    if (!c.passed || c.inconclusive) os << "  " << c.name << ": " << c.detail << "\n";
  if (!ok && taylor.ran && taylor.passed && !std::isnan(taylor.order))
    os << "  Taylor remainder order " << fmt("%.2f", taylor.order) << " (2 expected)\n";
  for (const auto& k : kinks)
    os << "  non-differentiable point at input " << k.input << " " << shape_str(k.element) << " = "
       << fmt("%.1f", k.value) << "   (left slope " << num(k.left) << ", right slope "
       << num(k.right) << "; not counted as a failure)\n";
  for (const auto& w : warnings) os << "  warning: " << w << "\n";
  if (!options.reproduce_.empty()) os << "  reproduce: " << options.reproduce_ << "\n";
  return os.str();
}

std::string GradcheckReport::json() const {
  // Field names and order are the report's JSON format (checks/testing/gradcheck_test.cpp reads
  // it); NaN and Inf become null (JSON has neither), as nlohmann writes them.
  using Json = nlohmann::ordered_json;
  auto entries = [](const std::vector<GradcheckFailure>& t) {
    Json out = Json::array();
    for (const auto& f : t) {
      Json e = {{"check", f.check}, {"input", f.input}, {"element", f.element}};
      if (f.output >= 0) {
        e["output"] = f.output;
        e["output_element"] = f.output_element;
      }
      e["analytic"] = f.analytic;
      e["numeric"] = f.numeric;
      e["abs_err"] = f.abs_err;
      e["rel_err"] = f.rel_err;
      e["tolerance"] = f.tolerance;
      if (f.refined) {
        e["numeric_eps"] = f.numeric_eps;
        e["numeric_half"] = f.numeric_half;
        e["numeric_spread"] = f.numeric_spread;
      }
      out.push_back(std::move(e));
    }
    return out;
  };
  Json j;
  j["ok"] = ok;
  j["verdict"] = to_string(verdict);
  j["name"] = name;
  j["mode"] = mode;
  j["options"] = {{"eps", options.eps_},
                  {"atol", options.atol_},
                  {"rtol", options.rtol_},
                  {"nondet_tol", options.nondet_tol_},
                  {"fast_mode", options.fast_mode_},
                  {"seed", options.seed_}};
  j["num_inputs"] = num_inputs;
  j["inputs"] = Json::array();
  for (int64_t i : checked_inputs)
    j["inputs"].push_back(
        {{"index", i}, {"shape", input_shapes[i]}, {"dtype", to_string(input_dtypes[i])}});
  j["jacobian"] = {{"rows", jacobian_rows}, {"cols", jacobian_cols}};
  j["comparisons"] = comparisons;
  j["num_failures"] = num_failures;
  j["num_inconclusive"] = num_inconclusive;
  j["num_refined"] = num_refined;
  j["max_abs_err"] = max_abs_err;
  const auto keep = static_cast<size_t>(std::max<int64_t>(options.top_k_, 1));
  j["failures"] = entries(top(static_cast<int64_t>(keep)));
  j["inconclusive"] = entries(std::vector<GradcheckFailure>(
      inconclusive_entries.begin(),
      inconclusive_entries.begin() +
          static_cast<int64_t>(std::min(keep, inconclusive_entries.size()))));
  j["kinks"] = Json::array();
  for (const auto& k : kinks)
    j["kinks"].push_back({{"input", k.input},
                          {"element", k.element},
                          {"value", k.value},
                          {"left", k.left},
                          {"right", k.right}});
  j["checks"] = Json::array();
  for (const auto& c : checks)
    j["checks"].push_back({{"name", c.name},
                           {"passed", c.passed},
                           {"inconclusive", c.inconclusive},
                           {"detail", c.detail}});
  j["taylor"] = {{"ran", taylor.ran},
                 {"passed", taylor.passed},
                 {"inconclusive", taylor.inconclusive},
                 {"order", taylor.order},
                 {"noise", taylor.noise},
                 {"h", taylor.h},
                 {"remainder", taylor.remainder}};
  j["warnings"] = warnings;
  j["reproduce"] = options.reproduce_;
  // NOTE: replace, not throw, on invalid UTF-8 in a name or detail (a user's fn name).
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

GradcheckError::GradcheckError(GradcheckReport report)
    : AutogradError(report.text()), report_(std::move(report)) {}

}  // namespace gradlab::testing
