// Report::html: one self-contained page, HTML5 and inline SVG drawn here (no script, no font,
// no image, nothing fetched), with the findings in stage order and the charts doctor kept:
//   LR range test    loss vs LR, log-x, markers at the best LR, the divergence, the optimizer's LR
//   activations      one histogram per layer (bars = counts per bin of the layer's output)
//   gradient norms   ||grad|| per parameter over the steps, one line each
// A value axis turns logarithmic when its positive values span more than two decades.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/diagnose/internal.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/html_escape.hpp"

namespace gradlab::diagnose {

namespace {

using detail::num;
using detail::plural;

constexpr Stage kStages[] = {Stage::Data, Stage::Model, Stage::Training};
// Line colours of the series, in order (cycled past the eighth).
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

// Text and attribute values (io::html_escape): evidence holding markup shows as text.
std::string esc(std::string_view s) { return io::html_escape(s); }

// SVG coordinates with one decimal: a tenth of a pixel is finer than anything drawn.
std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// One axis: value v in [lo, hi] (log10 v when log) maps linearly onto pixels [from, to].
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double from = 0, to = 1;

  double map(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return from + t * (to - from);
  }
  bool in_range(double v) const { return std::isfinite(v) && (!log || v > 0); }

  // log: the powers of ten inside [lo, hi] (every k-th when there are more than 8);
  // linear: multiples of a round step (1, 2 or 5 x 10^k) giving about five ticks.
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      const int a = static_cast<int>(std::ceil(std::log10(lo) - 1e-9)), b = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
      const int every = std::max(1, (b - a + 8) / 8);
      for (int k = a; k <= b; k += every) t.push_back(std::pow(10.0, k));
      if (t.size() < 2) t = {lo, hi};
      return t;
    }
    const double raw = (hi - lo) / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / mag, step = mag * (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10);
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step)
      t.push_back(std::abs(v) < 1e-12 * step ? 0.0 : v);
    return t;
  }
};

// How fit_axis picks the scale: never log, log when the values span decades, always log.
enum class Scale { Linear, Auto, Log };

// The range of the values an axis shows: log when asked, or (Auto) when the positive finite
// values span more than two decades; then only those are shown, padded by the factor
// (max / min)^pad, and a single value v gets [v / 2, 2 v]. Else linear over the finite values,
// padded by `pad` of the span on both sides; a single value v gets [v - 0.5, v + 0.5], no value
// at all [0, 1].
Axis fit_axis(const std::vector<double>& values, Scale scale, double pad, double from, double to) {
  double lo = INFINITY, hi = -INFINITY, plo = INFINITY, phi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (v > 0) {
      plo = std::min(plo, v);
      phi = std::max(phi, v);
    }
  }
  Axis a;
  a.from = from;
  a.to = to;
  if (phi > 0 && (scale == Scale::Log || (scale == Scale::Auto && phi / plo > 100))) {
    a.log = true;
    const double f = plo == phi ? 2.0 : std::pow(phi / plo, pad);
    a.lo = plo / f;
    a.hi = phi * f;
    return a;
  }
  if (!(lo <= hi)) return a;  // no finite value
  if (lo == hi) {
    a.lo = lo - 0.5;
    a.hi = hi + 0.5;
    return a;
  }
  a.lo = lo - pad * (hi - lo);
  a.hi = hi + pad * (hi - lo);
  return a;
}

// A plot area inside an SVG of w x h pixels, with margins for tick labels and axis titles.
struct Frame {
  double w, h;
  double left = 62, right = 14, top = 12, bottom = 40;
  double x0() const { return left; }
  double x1() const { return w - right; }
  double y0() const { return h - bottom; }  // the bottom edge (pixel y grows downward)
  double y1() const { return top; }
};

// <svg ...> of frame f; `extra` holds more attributes (already escaped).
std::string svg_open(const Frame& f, const std::string& cls, const std::string& label, const std::string& extra = {}) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + cls + "\"" + extra + " width=\"" + px(f.w) + "\" height=\"" + px(f.h) +
         "\" viewBox=\"0 0 " + px(f.w) + " " + px(f.h) + "\" role=\"img\" aria-label=\"" + esc(label) + "\">\n";
}

// Axis lines, grid lines and tick labels of both axes, plus the axis titles.
std::string axes(const Frame& f, const Axis& x, const Axis& y, const std::string& xtitle, const std::string& ytitle) {
  std::string s = "<g class=\"axes\">\n";
  for (double t : x.ticks()) {
    const std::string X = px(x.map(t));
    s += "<line class=\"grid\" x1=\"" + X + "\" y1=\"" + px(f.y0()) + "\" x2=\"" + X + "\" y2=\"" + px(f.y1()) + "\"/>";
    s += "<text class=\"tick\" x=\"" + X + "\" y=\"" + px(f.y0() + 14) + "\" text-anchor=\"middle\">" + esc(num(t)) + "</text>\n";
  }
  for (double t : y.ticks()) {
    const std::string Y = px(y.map(t));
    s += "<line class=\"grid\" x1=\"" + px(f.x0()) + "\" y1=\"" + Y + "\" x2=\"" + px(f.x1()) + "\" y2=\"" + Y + "\"/>";
    s += "<text class=\"tick\" x=\"" + px(f.x0() - 5) + "\" y=\"" + px(y.map(t) + 4) + "\" text-anchor=\"end\">" +
         esc(num(t)) + "</text>\n";
  }
  s += "<path class=\"axis\" d=\"M" + px(f.x0()) + " " + px(f.y1()) + " V" + px(f.y0()) + " H" + px(f.x1()) + "\"/>\n";
  s += "<text class=\"title\" x=\"" + px((f.x0() + f.x1()) / 2) + "\" y=\"" + px(f.h - 6) + "\" text-anchor=\"middle\">" +
       esc(xtitle + (x.log ? " (log)" : "")) + "</text>\n";
  s += "<text class=\"title\" transform=\"translate(14 " + px((f.y0() + f.y1()) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       esc(ytitle + (y.log ? " (log)" : "")) + "</text>\n";
  return s + "</g>\n";
}

// "M x y L x y ..." through the points both axes can show; a point they cannot (NaN, or <= 0 on a
// log axis) breaks the line, and the next one starts a new piece with M.
std::string polyline(const Axis& x, const Axis& y, const std::vector<double>& xs, const std::vector<double>& ys) {
  std::string d;
  bool pen_down = false;
  for (size_t i = 0; i < xs.size() && i < ys.size(); ++i) {
    if (!x.in_range(xs[i]) || !y.in_range(ys[i])) {
      pen_down = false;
      continue;
    }
    d += (d.empty() ? "" : " ") + std::string(pen_down ? "L" : "M") + px(x.map(xs[i])) + " " + px(y.map(ys[i]));
    pen_down = true;
  }
  return d;
}

std::string figure_open(const std::string& kind, const std::string& caption) {
  return "<figure class=\"chart\" id=\"chart-" + kind + "\" data-chart=\"" + kind + "\">\n<figcaption>" + esc(caption) +
         "</figcaption>\n";
}

// ---- the three charts ----------------------------------------------------------------------------

// Loss after one step at each LR of the sweep, log-x; vertical markers at the best LR, the
// divergence (when the sweep blew up) and the optimizer's own LR.
std::string lr_range_chart(const ReportCharts::LRCurve& c) {
  const Frame f{680, 300};
  std::vector<double> xs = c.lrs;
  if (c.optimizer_lr > 0) xs.push_back(c.optimizer_lr);  // the axis reaches the user's LR too
  const Axis x = fit_axis(xs, Scale::Log, 0.02, f.x0(), f.x1());
  const Axis y = fit_axis(c.losses, Scale::Auto, 0.05, f.y0(), f.y1());
  std::string s = figure_open("lr_range", "LR range test: the smoothed loss after one step at each of " +
                                              plural(static_cast<int64_t>(c.lrs.size()), "LR") + " (" +
                                              (c.diverged_lr > 0 ? "diverged at lr " + num(c.diverged_lr, 3) : "no divergence") +
                                              ")");
  s += svg_open(f, "plot", "loss against learning rate");
  s += axes(f, x, y, "learning rate", "smoothed loss");
  s += "<path class=\"curve\" stroke=\"" + std::string(kPalette[0]) + "\" d=\"" + polyline(x, y, c.lrs, c.losses) + "\"/>\n";
  struct Marker {
    const char* key;
    double lr;
    std::string label;
  };
  const Marker markers[] = {{"best_lr", c.best_lr, "best " + num(c.best_lr, 3)},
                            {"diverged_lr", c.diverged_lr, "diverged " + num(c.diverged_lr, 3)},
                            {"optimizer_lr", c.optimizer_lr, "your lr " + num(c.optimizer_lr, 3)}};
  int row = 0;
  for (const Marker& m : markers) {
    if (!(m.lr > 0) || !x.in_range(m.lr)) continue;
    const double at = x.map(m.lr);
    const bool right_half = at > (f.x0() + f.x1()) / 2;  // then the label goes left of its line
    s += "<g class=\"marker\" data-marker=\"" + std::string(m.key) + "\"><line x1=\"" + px(at) + "\" y1=\"" + px(f.y0()) +
         "\" x2=\"" + px(at) + "\" y2=\"" + px(f.y1()) + "\"/><text x=\"" + px(right_half ? at - 4 : at + 4) + "\" y=\"" +
         px(f.y1() + 12 + 14 * row++) + "\" text-anchor=\"" + (right_half ? "end" : "start") + "\">" + esc(m.label) +
         "</text></g>\n";
  }
  return s + "</svg>\n</figure>\n";
}

// One small histogram per layer: a bar per bin (every bin gets a rect, empty ones 0 high).
std::string activations_chart(const std::vector<ReportCharts::Layer>& layers) {
  std::string s = figure_open("activations", "Activations: each layer's output on one batch, counted in bins between its "
                                             "smallest and largest value");
  s += "<div class=\"histograms\">\n";
  for (const ReportCharts::Layer& l : layers) {
    const Histogram& h = l.histogram;
    const Frame f{330, 200, 52, 10, 26, 40};
    const Axis x = fit_axis({h.lo, h.hi}, Scale::Linear, 0.0, f.x0(), f.x1());
    std::vector<double> counts(h.counts.begin(), h.counts.end());
    Axis y = fit_axis(counts, Scale::Auto, 0.0, f.y0(), f.y1());
    if (y.log) {
      y.lo = 0.5;  // a bin of one count still shows
    } else {
      y.lo = 0;  // bars grow from zero
    }
    std::string shape = "[";
    for (size_t d = 0; d < l.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(l.shape[d]);
    shape += "]";
    const std::string title = "'" + l.name + "' (" + l.type + ") " + shape;
    s += svg_open(f, "histogram", "histogram of the output of " + title, " data-layer=\"" + esc(l.name) + "\"");
    // A functional activation's name holds its call site and can be longer than the chart is
    // wide: the label is cut with an ellipsis, and the whole name shows on hover (<title>).
    const std::string full = title + (h.nonfinite ? ", " + plural(h.nonfinite, "non-finite value") + " not shown" : "");
    constexpr size_t kMaxLabel = 46;
    const std::string shown = full.size() > kMaxLabel ? full.substr(0, kMaxLabel - 1) + "\u2026" : full;
    s += "<text class=\"label\" x=\"" + px(f.x0()) + "\" y=\"14\"><title>" + esc(full) + "</title>" + esc(shown) +
         "</text>\n";
    s += axes(f, x, y, "output value", "count");
    const double w = (h.hi - h.lo) / std::max<size_t>(1, h.counts.size());
    for (size_t i = 0; i < h.counts.size(); ++i) {
      const double xa = x.map(h.lo + w * i), xb = x.map(h.lo + w * (i + 1));
      const double top = h.counts[i] > 0 ? y.map(static_cast<double>(h.counts[i])) : f.y0();
      s += "<rect class=\"bar\" data-count=\"" + std::to_string(h.counts[i]) + "\" x=\"" + px(xa) + "\" y=\"" + px(top) +
           "\" width=\"" + px(std::max(0.0, xb - xa - 0.5)) + "\" height=\"" + px(f.y0() - top) + "\"/>\n";
    }
    s += "</svg>\n";
  }
  return s + "</div>\n</figure>\n";
}

// ||grad|| per parameter over the steps: a line and a dot per step for each parameter.
std::string grad_norms_chart(const std::vector<ReportCharts::Series>& series) {
  const Frame f{680, 300};
  std::vector<double> steps, all;
  size_t n = 0;
  for (const auto& p : series) {
    n = std::max(n, p.values.size());
    all.insert(all.end(), p.values.begin(), p.values.end());
  }
  for (size_t i = 0; i < n; ++i) steps.push_back(static_cast<double>(i));
  const Axis x = fit_axis(steps, Scale::Linear, 0.03, f.x0(), f.x1());
  const Axis y = fit_axis(all, Scale::Auto, 0.05, f.y0(), f.y1());
  std::string s = figure_open("grad_norms", "Gradient norms: ||grad|| of each of the " +
                                                plural(static_cast<int64_t>(series.size()), "parameter") + " over " +
                                                plural(static_cast<int64_t>(n), "step"));
  s += svg_open(f, "plot", "gradient norm per parameter against step");
  s += axes(f, x, y, "step", "||grad||");
  for (size_t k = 0; k < series.size(); ++k) {
    const std::string color = kPalette[k % std::size(kPalette)];
    s += "<g class=\"series\" data-name=\"" + esc(series[k].name) + "\" stroke=\"" + color + "\" fill=\"" + color + "\">";
    s += "<path d=\"" + polyline(x, y, steps, series[k].values) + "\"/>";
    for (size_t i = 0; i < series[k].values.size(); ++i)
      if (y.in_range(series[k].values[i]))
        s += "<circle cx=\"" + px(x.map(steps[i])) + "\" cy=\"" + px(y.map(series[k].values[i])) + "\" r=\"2.5\"/>";
    s += "</g>\n";
  }
  s += "</svg>\n<ul class=\"legend\">";
  for (size_t k = 0; k < series.size(); ++k)
    s += "<li><span class=\"swatch\" style=\"background:" + std::string(kPalette[k % std::size(kPalette)]) + "\"></span>" +
         esc(series[k].name) + "</li>";
  return s + "</ul>\n</figure>\n";
}

// ---- the page ------------------------------------------------------------------------------------

constexpr const char* kStyle = R"(
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 980px; padding: 0 16px 40px; color: #222; }
h1 { font-size: 22px; margin: 20px 0 6px; }
.verdict { font-weight: 600; padding: 8px 12px; border-left: 5px solid #999; background: #f4f4f4; }
.verdict[data-verdict="ok"] { border-color: #2e7d32; } .verdict[data-verdict="warn"] { border-color: #ef8f00; }
.verdict[data-verdict="fail"] { border-color: #c62828; }
.badge { display: inline-block; min-width: 46px; text-align: center; border-radius: 4px; padding: 0 6px;
         font: 600 12px/20px monospace; color: #fff; background: #888; vertical-align: middle; }
.v-ok { background: #2e7d32; } .v-warn { background: #ef8f00; } .v-fail { background: #c62828; } .v-not_run { background: #888; }
.stage { border-top: 2px solid #ddd; margin-top: 22px; }
.stage[data-verdict="not_run"] h2, .stage[data-verdict="not_run"] .stage-summary { color: #888; }
.finding { margin: 10px 0; padding: 6px 10px; border: 1px solid #e3e3e3; border-radius: 6px; }
.finding h3 { font-size: 15px; margin: 2px 0; }
.evidence { white-space: pre-wrap; margin: 4px 0; font-size: 13px; background: #fafafa; padding: 4px 6px; }
.hint { margin: 4px 0; } .deferred { margin: 4px 0; color: #6a1b9a; }
.chart { margin: 16px 0; } .chart figcaption { font-weight: 600; margin-bottom: 4px; }
.histograms { display: flex; flex-wrap: wrap; gap: 8px; }
svg { background: #fff; border: 1px solid #eee; }
svg .grid { stroke: #eee; } svg .axis { stroke: #444; fill: none; } svg text { font: 11px sans-serif; fill: #333; }
svg .title { font-size: 12px; } svg .label { font-size: 12px; font-weight: 600; }
svg .curve, svg .series path { fill: none; stroke-width: 2; }
svg .marker line { stroke: #555; stroke-dasharray: 4 3; } svg .marker[data-marker="diverged_lr"] line { stroke: #c62828; }
svg .marker[data-marker="optimizer_lr"] line { stroke: #ef8f00; stroke-dasharray: none; }
svg .bar { fill: #1f77b4; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 14px; font-size: 13px; }
.swatch { display: inline-block; width: 14px; height: 4px; margin-right: 5px; vertical-align: middle; }
)";

std::string badge(Verdict v) { return "<span class=\"badge v-" + to_string(v) + "\">" + to_string(v) + "</span>"; }

std::string finding_html(const Finding& f, size_t index) {
  std::string s = "<article class=\"finding\" id=\"finding-" + std::to_string(index) + "\" data-check=\"" + esc(f.check) +
                  "\" data-verdict=\"" + to_string(f.verdict) + "\">\n<h3>" + badge(f.verdict) + " <code>" +
                  esc(to_string(f.stage) + "/" + f.check) + "</code></h3>\n";
  s += "<pre class=\"evidence\">" + esc(f.evidence) + "</pre>\n";
  if (!f.hint.empty()) s += "<p class=\"hint\"><b>hint:</b> " + esc(f.hint) + "</p>\n";
  if (!f.deferred_to.empty()) s += "<p class=\"deferred\">may follow from <code>" + esc(f.deferred_to) + "</code></p>\n";
  return s + "</article>\n";
}

}  // namespace

std::string Report::html_string() const {
  const std::string v = to_string(verdict());
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>gradlab doctor: " +
                  esc(v) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header>\n<h1>gradlab doctor report</h1>\n";
  s += "<p id=\"verdict\" class=\"verdict\" data-verdict=\"" + v + "\">" + esc(verdict_line()) + "</p>\n<ol class=\"toc\">";
  for (Stage st : kStages)
    s += "<li><a href=\"#stage-" + to_string(st) + "\">" + to_string(st) + "</a> " + badge(verdict(st)) + "</li>";
  s += "</ol>\n</header>\n<main>\n";
  for (Stage st : kStages) {
    const Verdict sv = verdict(st);
    s += "<section class=\"stage\" id=\"stage-" + to_string(st) + "\" data-stage=\"" + to_string(st) + "\" data-verdict=\"" +
         to_string(sv) + "\">\n<h2>" + to_string(st) + " " + badge(sv) + "</h2>\n";
    if (sv == Verdict::NotRun) {
      s += "<p class=\"stage-summary\">not run" + (stopped_at ? " (stopped at the " + to_string(*stopped_at) + " stage)" : "") +
           "</p>\n</section>\n";
      continue;
    }
    int64_t checks = 0, fails = 0, warns = 0;
    for (const Finding& f : findings_) {
      if (f.stage != st) continue;
      ++checks;
      fails += f.failed();
      warns += f.verdict == Verdict::Warn;
    }
    s += "<p class=\"stage-summary\">" + plural(checks, "check") + ", " + std::to_string(fails) + " failed, " +
         std::to_string(warns) + " warned</p>\n";
    for (size_t i = 0; i < findings_.size(); ++i)
      if (findings_[i].stage == st) s += finding_html(findings_[i], i);
    if (st == Stage::Model && !charts.activations.empty()) s += activations_chart(charts.activations);
    if (st == Stage::Training && !charts.lr_range.lrs.empty()) s += lr_range_chart(charts.lr_range);
    if (st == Stage::Training && !charts.grad_norms.empty()) s += grad_norms_chart(charts.grad_norms);
    s += "</section>\n";
  }
  s += "</main>\n<footer><p>Written by gradlab::diagnose::Report::html: the findings of report.text() and report.json(), "
       "with the curves behind them.</p></footer>\n</body>\n</html>\n";
  return s;
}

void Report::html(const std::string& path) const {
  const std::string page = html_string();
  try {
    io::write_file_atomic(path, [&](io::FileWriter& w) { w.write(page.data(), page.size()); });
  } catch (const Error& e) {
    throw IOError(error_message("Report::html", "cannot write the report to '" + path + "' (" + e.what() + ")", {}, {},
                  "check that the directory exists and is writable; a file already there is left as it was"));
  }
}

}  // namespace gradlab::diagnose
