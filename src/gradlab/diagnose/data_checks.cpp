// Data checks. They read the tensors as plain numbers (values()): the splits they look at are
// small next to training, and plain loops keep each statistic readable.

#include "gradlab/diagnose/data_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "gradlab/core/error.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/diagnose/internal.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::diagnose {
using detail::make;
using detail::num;
using detail::plural;
using detail::values;

namespace detail {

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  Generator gen(seed);
  return randperm(n, &gen).to_vector<int64_t>();
}

Tensor rows(const Tensor& x, const std::vector<int64_t>& perm, int64_t start, int64_t n) {
  const int64_t total = static_cast<int64_t>(perm.size());
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = perm[static_cast<size_t>((start + i) % total)];
  return index_select(x, 0, from_vector(idx, {n}));
}

std::string row_key(const std::vector<double>& v, int64_t row, int64_t d) {
  // The row as a byte string of doubles (+0.0 turns -0 into 0: equal values, equal keys).
  std::string k(static_cast<size_t>(d) * sizeof(double), '\0');
  for (int64_t j = 0; j < d; ++j) {
    const double x = v[static_cast<size_t>(row * d + j)] + 0.0;
    std::memcpy(&k[static_cast<size_t>(j) * sizeof(double)], &x, sizeof(double));
  }
  return k;
}

std::unique_ptr<data::DataLoader> replica(const data::DataLoader& loader) {
  data::DataLoaderOptions options = loader.options();
  options.seed(loader.seed());  // the same order and per-sample streams; nothing drawn from default_generator
  auto copy = std::make_unique<data::DataLoader>(loader.dataset(), options);
  copy->load_state(loader.state());
  return copy;
}

}  // namespace detail

namespace {

constexpr Stage kData = Stage::Data;

void check_rows(const char* op, const Tensor& x, const char* what) {
  GRADLAB_CHECK(x.defined(), ValueError, op, std::string(what) + " is undefined", "a tensor [N, ...]", "an undefined tensor");
  GRADLAB_CHECK(x.dim() >= 1 && x.size(0) > 0, ShapeError, op, std::string(what) + " must have at least one row",
                "[N, ...] with N >= 1", shape_str(x.sizes()));
}

bool integral(const Tensor& t) { return !t.is_floating_point() && t.dtype() != kBool; }

// The first non-finite element of t: (flat index, value), or -1.
std::pair<int64_t, double> first_nonfinite(const std::vector<double>& v, int64_t& count) {
  int64_t first = -1;
  double val = 0;
  count = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isfinite(v[i])) continue;
    if (first < 0) {
      first = static_cast<int64_t>(i);
      val = v[i];
    }
    ++count;
  }
  return {first, val};
}

}  // namespace

Finding check_finite(const Tensor& inputs, const Tensor& targets) {
  check_rows("diagnose::check_finite", inputs, "inputs");
  std::string bad;
  Finding f = make(kData, "finite", Verdict::Ok, "");
  int64_t total = 0;
  auto scan = [&](const Tensor& t, const char* name) {
    if (!t.defined() || !t.is_floating_point()) return;
    int64_t count = 0;
    auto [first, val] = first_nonfinite(values(t), count);
    f.metrics[std::string("nonfinite_") + name] = static_cast<double>(count);
    total += count;
    if (first < 0) return;
    if (!bad.empty()) bad += "; ";
    bad += std::to_string(count) + " of " + std::to_string(t.numel()) + " " + name + (count == 1 ? " is" : " are") + " not finite, the first " +
           name + detail::index_str(first, t.sizes()) + " = " + num(val) + " (row " +
           std::to_string(first / std::max<int64_t>(1, t.numel() / t.size(0))) + ")";
  };
  scan(inputs, "inputs");
  scan(targets, "targets");
  if (total == 0) {
    f.evidence = "every input" + std::string(targets.defined() ? " and target" : "") + " is finite (" +
                 std::to_string(inputs.numel()) + " input values)";
    return f;
  }
  f.verdict = Verdict::Fail;
  f.evidence = bad;
  f.hint = "a NaN in the data becomes a NaN loss on the first batch that holds it: find where the values come from "
           "(a division by a zero std, a log of 0, a missing value in a file), and drop or repair those rows";
  return f;
}

Finding check_label_range(const Tensor& targets, int64_t num_classes) {
  check_rows("diagnose::check_label_range", targets, "targets");
  GRADLAB_CHECK(num_classes > 0, ValueError, "diagnose::check_label_range", "num_classes must be positive", ">= 1",
                std::to_string(num_classes));
  Finding f = make(kData, "label_range", Verdict::Ok, "");
  if (!integral(targets)) {
    f.verdict = Verdict::Fail;
    f.evidence = "targets are " + to_string(targets.dtype()) + ", not class indices";
    f.hint = "class-index losses take int64 labels: targets.to(kInt64) (one-hot labels: argmax(1))";
    return f;
  }
  const std::vector<int64_t> y = targets.contiguous().to_vector<int64_t>();
  const auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  f.metrics["min"] = static_cast<double>(*lo);
  f.metrics["max"] = static_cast<double>(*hi);
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] < 0 || y[i] >= num_classes) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
  f.metrics["out_of_range"] = static_cast<double>(bad);
  const std::string span = "labels span [" + std::to_string(*lo) + ", " + std::to_string(*hi) + "]";
  if (bad == 0) {
    f.evidence = span + ", inside [0, " + std::to_string(num_classes) + ")";
    return f;
  }
  f.verdict = Verdict::Fail;
  f.evidence = std::to_string(bad) + " of " + plural(static_cast<int64_t>(y.size()), "label") +
               (bad == 1 ? " is" : " are") + " outside [0, " +
               std::to_string(num_classes) + "), the first: label " + std::to_string(y[static_cast<size_t>(first)]) +
               " at index " + std::to_string(first) + "; " + span;
  if (*lo == 1 && *hi == num_classes)
    f.hint = "the labels look shifted by one (1.." + std::to_string(num_classes) + " instead of 0.." +
             std::to_string(num_classes - 1) + "): subtract 1 where they are read";
  else
    f.hint = "labels must be 0 .. num_classes - 1: check where they are read (an off-by-one, a wrong column), or "
             "whether the model needs more outputs";
  return f;
}

Finding check_label_balance(const Tensor& targets, int64_t num_classes, double max_ratio) {
  check_rows("diagnose::check_label_balance", targets, "targets");
  GRADLAB_CHECK(num_classes > 0, ValueError, "diagnose::check_label_balance", "num_classes must be positive", ">= 1",
                std::to_string(num_classes));
  Finding f = make(kData, "label_balance", Verdict::Ok, "");
  if (!integral(targets)) {
    f.evidence = "targets are not class indices: no histogram";
    return f;
  }
  std::vector<int64_t> count(static_cast<size_t>(num_classes), 0);
  for (int64_t v : targets.contiguous().to_vector<int64_t>())
    if (v >= 0 && v < num_classes) ++count[static_cast<size_t>(v)];
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  std::vector<int64_t> missing;
  std::string hist;
  for (int64_t c = 0; c < num_classes; ++c) {
    const int64_t n = count[static_cast<size_t>(c)];
    f.metrics["count_" + std::to_string(c)] = static_cast<double>(n);
    if (n == 0) missing.push_back(c);
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    hist += (c ? " " : "") + std::to_string(n);
  }
  const double ratio = lo > 0 ? static_cast<double>(hi) / static_cast<double>(lo) : std::numeric_limits<double>::infinity();
  f.metrics["imbalance_ratio"] = ratio;
  f.metrics["missing_classes"] = static_cast<double>(missing.size());
  f.evidence = "counts per class 0.." + std::to_string(num_classes - 1) + ": " + hist + "; imbalance ratio max/min " +
               num(ratio);
  if (!missing.empty()) {
    std::string m;
    for (int64_t c : missing) m += (m.empty() ? "" : ", ") + std::to_string(c);
    f.verdict = Verdict::Warn;
    f.evidence += "; never seen: class " + m;
    f.hint = "a class with no sample cannot be learned: check the labels (shifted? a filter that dropped it?) or "
             "the split";
  } else if (ratio > max_ratio) {
    f.verdict = Verdict::Warn;
    f.hint = "strong imbalance: the model can score well by predicting the big classes; weight the loss, resample, "
             "or report per-class accuracy";
  }
  return f;
}

Finding check_constant_features(const Tensor& inputs, double warn_fraction) {
  check_rows("diagnose::check_constant_features", inputs, "inputs");
  GRADLAB_CHECK(warn_fraction >= 0 && warn_fraction <= 1, ValueError, "diagnose::check_constant_features",
                "warn_fraction must be a fraction of the features", "0 <= warn_fraction <= 1",
                std::to_string(warn_fraction), "0 warns on any constant feature");
  const int64_t n = inputs.size(0), d = inputs.numel() / n;
  const std::vector<double> v = values(inputs);
  std::vector<int64_t> constant;
  for (int64_t j = 0; j < d; ++j) {
    const double first = v[static_cast<size_t>(j)];
    bool same = true;
    for (int64_t i = 1; i < n && same; ++i) same = v[static_cast<size_t>(i * d + j)] == first;
    if (same) constant.push_back(j);
  }
  Finding f = make(kData, "constant_features", Verdict::Ok, "");
  f.metrics["constant"] = static_cast<double>(constant.size());
  f.metrics["features"] = static_cast<double>(d);
  if (constant.empty()) {
    f.evidence = "all " + std::to_string(d) + " features vary over the " + std::to_string(n) + " rows";
    return f;
  }
  std::string list;
  for (size_t k = 0; k < constant.size() && k < 8; ++k) list += (k ? ", " : "") + std::to_string(constant[k]);
  if (constant.size() > 8) list += ", ...";
  f.evidence = std::to_string(constant.size()) + " of " + std::to_string(d) + " features (flat index within a sample) never " +
               (constant.size() == 1 ? "varies: " : "vary: ") + list;
  f.metrics["constant_fraction"] = static_cast<double>(constant.size()) / static_cast<double>(d);
  if (static_cast<int64_t>(constant.size()) == d) {
    f.verdict = Verdict::Fail;
    f.evidence += " (every feature: the inputs cannot tell the samples apart)";
    f.hint = "every row is the same input: a fill with a constant, a wrong column, a broadcast that replaced the data";
  } else if (static_cast<double>(constant.size()) > warn_fraction * static_cast<double>(d)) {
    f.verdict = Verdict::Warn;
    f.hint = "constant features carry no information (harmless, e.g. always-blank image borders); a division by "
             "their zero std gives NaN: add an eps or replace std 0 by 1";
  } else {  // a few: information (e.g. blank image corners), not a warning
    f.evidence += " (information: at most " + num(100 * warn_fraction, 3) +
                  "% of the features; a per-feature standardization must not divide by their std 0)";
  }
  return f;
}

// ---- input statistics -------------------------------------------------------------------------

namespace {

// x [N, ...] viewed as [N] + sample_shape.
Tensor as_samples(const Tensor& x, const Shape& sample_shape) {
  if (sample_shape.empty()) return x;
  int64_t per = 1;
  for (int64_t s : sample_shape) per *= s;
  GRADLAB_CHECK(per * x.size(0) == x.numel(), ShapeError, "diagnose::check_input_stats",
                "sample_shape does not fit the inputs", std::to_string(x.numel() / x.size(0)) + " elements per sample",
                shape_str(sample_shape));
  Shape s{x.size(0)};
  s.insert(s.end(), sample_shape.begin(), sample_shape.end());
  return x.reshape(s);
}

// A reference [C] (per channel) or of the sample's shape, as a tensor of the sample's shape.
Tensor broadcast_reference(const Tensor& ref, const Shape& sample, int64_t channel_dim, const char* what) {
  const std::string op = "diagnose::check_input_stats";
  Tensor r = ref.detach().to(kFloat64);
  if (r.sizes() == sample) return r;
  int64_t per = 1;
  for (int64_t d : sample) per *= d;
  if (r.numel() == per && per > 1) return r.reshape(sample);  // e.g. a flat [64] mean image for {1, 8, 8}
  if (r.numel() == 1) return r.reshape({}).expand(sample).contiguous();
  GRADLAB_CHECK(r.dim() == 1 && static_cast<int64_t>(sample.size()) > channel_dim &&
                    r.size(0) == sample[static_cast<size_t>(channel_dim)],
                ShapeError, op, std::string("the reference ") + what + " fits neither a channel nor a sample",
                "[C] with C = " + (static_cast<int64_t>(sample.size()) > channel_dim
                                       ? std::to_string(sample[static_cast<size_t>(channel_dim)])
                                       : std::string("?")) +
                    " or the sample shape " + shape_str(sample),
                shape_str(r.sizes()), "for flattened images pass sample_shape, e.g. {1, 8, 8}");
  Shape view(sample.size(), 1);
  view[static_cast<size_t>(channel_dim)] = r.size(0);
  return r.reshape(view).expand(sample).contiguous();
}

// One layout hypothesis: how a correctly laid out sample would have been rearranged.
struct Layout {
  std::string name;
  std::function<Tensor(const Tensor&)> apply;  // on one sample-shaped tensor
};

}  // namespace

Finding check_input_stats(const Tensor& inputs, const InputStats& expected) {
  const std::string op = "diagnose::check_input_stats";
  check_rows(op.c_str(), inputs, "inputs");
  GRADLAB_CHECK(inputs.is_floating_point(), DTypeError, op, "inputs must be floating point", "float32 or float64",
                to_string(inputs.dtype()));
  const Tensor x = as_samples(inputs.detach().to(kFloat64), expected.sample_shape);
  const Shape sample(x.sizes().begin() + 1, x.sizes().end());
  const int64_t cdim = sample.size() >= 2 ? expected.channel_dim : -1;  // -1: one channel
  GRADLAB_CHECK(cdim < static_cast<int64_t>(sample.size()), ValueError, op, "channel_dim is outside the sample",
                "< " + std::to_string(sample.size()), std::to_string(cdim));
  const int64_t channels = cdim >= 0 ? sample[static_cast<size_t>(cdim)] : 1;

  Finding f = make(kData, "input_stats", Verdict::Ok, "");
  // Per-channel mean and std over the batch and every other dim.
  Dims over{0};
  for (int64_t d = 0; d < static_cast<int64_t>(sample.size()); ++d)
    if (d != cdim) over.push_back(d + 1);
  const std::vector<double> cm = values(mean(x, over)), cs = values(gradlab::std(x, over, 0));
  std::string stats;
  bool odd = false;
  for (int64_t c = 0; c < channels; ++c) {
    f.metrics["mean_" + std::to_string(c)] = cm[static_cast<size_t>(c)];
    f.metrics["std_" + std::to_string(c)] = cs[static_cast<size_t>(c)];
    if (c < 4) stats += (c ? "; " : "") + std::string("channel ") + std::to_string(c) + " mean " + num(cm[static_cast<size_t>(c)], 3) + " std " + num(cs[static_cast<size_t>(c)], 3);
    odd = odd || std::abs(cm[static_cast<size_t>(c)]) > 1 || cs[static_cast<size_t>(c)] < 0.2 || cs[static_cast<size_t>(c)] > 5;
  }
  if (channels > 4) stats += "; ...";

  if (!expected.mean.defined()) {
    f.evidence = stats;
    if (odd) {
      f.verdict = Verdict::Warn;
      f.hint = "the inputs do not look standardized (mean ~0, std ~1 per channel): normalize with the training "
               "split's statistics, x = (x - mean) / std";
    }
    return f;
  }

  // With reference statistics: which preparation explains the observed per-position means and
  // stds best? Prediction for (layout P, normalized): mean (P(M) - M) / S, std P(S) / S;
  // for (P, raw): mean P(M), std P(S) — compared in units of S (so both are in "normalized" units).
  GRADLAB_CHECK(expected.std.defined(), ValueError, op, "a reference mean needs a reference std", "both", "mean only");
  const Tensor M = broadcast_reference(expected.mean, sample, std::max<int64_t>(cdim, 0), "mean");
  Tensor S = broadcast_reference(expected.std, sample, std::max<int64_t>(cdim, 0), "std");
  S = where(S > 1e-12, S, 1.0);  // a constant position: compare in raw units there
  const Tensor om = mean(x, {0}), os = gradlab::std(x, {0}, 0);

  std::vector<Layout> layouts{{"as expected", [](const Tensor& t) { return t; }}};
  const int64_t r = static_cast<int64_t>(sample.size());
  const bool square = r >= 2 && sample[static_cast<size_t>(r - 1)] == sample[static_cast<size_t>(r - 2)] &&
                      r - 2 != cdim && r - 1 != cdim;
  if (square) layouts.push_back({"images transposed (H and W swapped)", [r](const Tensor& t) { return t.transpose(r - 2, r - 1).contiguous(); }});
  if (cdim >= 0 && channels > 1) {
    std::vector<int64_t> rev(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) rev[static_cast<size_t>(c)] = channels - 1 - c;
    const Tensor ri = from_vector(rev, {channels});
    layouts.push_back({"channels reversed (RGB <-> BGR)", [cdim, ri](const Tensor& t) { return index_select(t, cdim, ri); }});
    if (square)
      layouts.push_back({"channels reversed and images transposed", [cdim, ri, r](const Tensor& t) {
                           return index_select(t, cdim, ri).transpose(r - 2, r - 1).contiguous();
                         }});
  }
  struct Fit {
    std::string layout;
    bool normalized;
    double err;
  };
  // The median over positions of the mismatch between observed and predicted per-position mean
  // and std: robust to the few positions that almost never vary (their reference std is tiny or
  // replaced by 1, e.g. the digits' blank corners).
  auto mismatch = [&](const Tensor& want_m, const Tensor& want_s, double eps) {
    const Tensor z = (om - want_m) / (want_s + eps);
    const Tensor lr = log((os + eps) / (want_s + eps));
    std::vector<double> e = values(sqrt(0.5 * (z * z + lr * lr)));
    std::nth_element(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(e.size() / 2), e.end());
    return e[e.size() / 2];
  };
  auto median_of = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::vector<Fit> fits;
  // NOTE: each hypothesis predicts the observed per-position mean and std; the mismatch is
  // measured in the prediction's own units (z of the mean, log ratio of the std), so raw and
  // normalized hypotheses are comparable.
  const double eps = 1e-3 * mean(S).item<double>();
  for (const Layout& L : layouts) {
    const Tensor pm = L.apply(M), ps = L.apply(S);
    for (bool normalized : {true, false}) {
      const Tensor want_m = normalized ? (pm - M) / S : pm;
      const Tensor want_s = normalized ? ps / S : ps;
      fits.push_back({L.name, normalized, mismatch(want_m, want_s, eps)});
      if (&L != &layouts.front()) continue;
      // A constant scale and shift of the expected preparation (x 255, / 255, + 128: a reader that
      // returns bytes, a double normalization): observed = a * prepared + b, with a the median
      // ratio of the stds and b the median remaining offset of the means, over the positions that
      // vary. It only wins where it explains far more than the preparation itself (below).
      std::vector<double> ratio, offset;
      const std::vector<double> osv = values(os), wsv = values(want_s), omv = values(om), wmv = values(want_m);
      for (size_t i = 0; i < osv.size(); ++i)
        if (wsv[i] > 1e-6 && osv[i] > 1e-12) ratio.push_back(osv[i] / wsv[i]);
      if (ratio.empty()) continue;
      const double a = median_of(ratio);
      for (size_t i = 0; i < omv.size(); ++i) offset.push_back(omv[i] - a * wmv[i]);
      const double b = median_of(offset);
      const bool scaled = std::abs(std::log(a)) > 0.1, shifted = std::abs(b) > 0.1 * a;
      if (!scaled && !shifted) continue;
      std::string name = std::string(normalized ? "the normalized inputs" : "the raw inputs") +
                         (scaled ? " scaled by " + num(a, 3) : "") + (scaled && shifted ? " and" : "") +
                         (shifted ? " shifted by " + num(b, 3) : "");
      fits.push_back({name, normalized, mismatch(want_m * a + b, want_s * a, eps * a)});
    }
  }
  auto constant_fit = [](const Fit& fit) { return fit.layout.rfind("the ", 0) == 0; };
  auto describe = [&](const Fit& fit) {
    if (constant_fit(fit)) return fit.layout;
    std::string s = fit.layout;
    if (fit.normalized != expected.normalized)
      s = (fit.layout == "as expected" ? std::string() : fit.layout + ", and ") +
          (expected.normalized ? "normalization missing" : "normalized although the model takes raw inputs");
    return s;
  };
  const Fit* want = nullptr;
  for (const Fit& fit : fits)
    if (fit.layout == "as expected" && fit.normalized == expected.normalized) want = &fit;
  // The best plain hypothesis, unless a constant scale / shift (two fitted numbers) explains far
  // more: "normalization missing" with per-channel statistics is itself an affine map, and the
  // simpler name wins a tie.
  const Fit *best = nullptr, *best_constant = nullptr;
  for (const Fit& fit : fits) {
    const Fit*& slot = constant_fit(fit) ? best_constant : best;
    if (!slot || fit.err < slot->err) slot = &fit;
  }
  if (best_constant && best_constant->err < 0.5 * best->err) best = best_constant;
  f.metrics["error_expected"] = want->err;
  f.metrics["error_best"] = best->err;
  std::string table;
  for (const Fit& fit : fits) table += "\n" + describe(fit) + ": " + num(fit.err, 3);
  f.evidence = stats + "; mismatch with the reference per hypothesis (median over positions of the mean's z and the std's log ratio):" + table;
  // NOTE: the sampling noise of a mean over N rows is ~1/sqrt(N) reference stds.
  const double noise = 3.0 / std::sqrt(static_cast<double>(x.size(0)));
  if (best != want && want->err > std::max(0.1, noise) && best->err < 0.5 * want->err) {
    f.verdict = Verdict::Fail;
    f.evidence = "the inputs fit '" + describe(*best) + "' (mismatch " + num(best->err, 3) + ") better than the expected preparation (" +
                 num(want->err, 3) + ")\n" + f.evidence;
    if (constant_fit(*best)) {
      f.hint = "the inputs are the expected ones up to a constant factor or offset: a reader that returns "
               "0..255 bytes instead of 0..1 (or the reverse), a normalization applied twice or with another "
               "data set's constants; check each step of the preprocessing against the reference statistics";
    } else if (best->normalized != expected.normalized) {
      f.hint = expected.normalized ? "normalize the inputs with the reference statistics: x = (x - mean) / std"
                                   : "the model takes raw inputs: remove the normalization";
    }
    if (best->layout != "as expected" && !constant_fit(*best))
      f.hint += std::string(f.hint.empty() ? "" : "; ") +
                "the samples are laid out differently from the reference: check the reader's axis order "
                "(HWC vs CHW, a transpose, BGR vs RGB)";
  } else if (want->err > std::max(0.25, 2 * noise)) {
    f.verdict = Verdict::Warn;
    f.hint = "the inputs differ from the reference statistics, and no simple mix-up explains it: another data set, "
             "another preprocessing?";
  }
  return f;
}

// ---- leakage and loader order -------------------------------------------------------------------

Finding check_split_leakage(const Tensor& a, const Tensor& b, double max_fraction) {
  check_rows("diagnose::check_split_leakage", a, "a");
  check_rows("diagnose::check_split_leakage", b, "b");
  const int64_t da = a.numel() / a.size(0), db = b.numel() / b.size(0);
  GRADLAB_CHECK(da == db, ShapeError, "diagnose::check_split_leakage", "the splits' rows have different sizes",
                std::to_string(da) + " values per row", std::to_string(db));
  const auto key = detail::row_key;
  const std::vector<double> va = values(a), vb = values(b);
  std::unordered_map<std::string, int64_t> seen;
  for (int64_t i = 0; i < a.size(0); ++i) seen.emplace(key(va, i, da), i);
  int64_t dup = 0, first_b = -1, first_a = -1;
  for (int64_t j = 0; j < b.size(0); ++j) {
    auto it = seen.find(key(vb, j, db));
    if (it == seen.end()) continue;
    if (first_b < 0) {
      first_b = j;
      first_a = it->second;
    }
    ++dup;
  }
  const double fraction = static_cast<double>(dup) / static_cast<double>(b.size(0));
  Finding f = make(Stage::Data, "split_leakage", Verdict::Ok, "");
  f.metrics["duplicates"] = static_cast<double>(dup);
  f.metrics["fraction"] = fraction;
  if (dup == 0) {
    f.evidence = "none of the " + std::to_string(b.size(0)) + " held-out rows appears in the " +
                 std::to_string(a.size(0)) + " training rows";
    return f;
  }
  f.evidence = std::to_string(dup) + " of " + std::to_string(b.size(0)) + " held-out rows (" + num(100 * fraction, 3) +
               "%) also appear in the training rows, the first: held-out row " + std::to_string(first_b) +
               " == training row " + std::to_string(first_a);
  f.verdict = fraction > max_fraction ? Verdict::Fail : Verdict::Warn;
  f.hint = "rows shared by both splits make the held-out score optimistic: deduplicate before splitting (or split by "
           "source: writer, patient, session)";
  return f;
}

Finding check_duplicates(const Tensor& inputs, const Tensor& targets, double warn_fraction) {
  const char* op = "diagnose::check_duplicates";
  check_rows(op, inputs, "inputs");
  GRADLAB_CHECK(!targets.defined() || (targets.dim() >= 1 && targets.size(0) == inputs.size(0)), ShapeError, op,
                "targets must have one row per input row", std::to_string(inputs.size(0)) + " rows",
                shape_str(targets.sizes()));
  GRADLAB_CHECK(warn_fraction >= 0 && warn_fraction <= 1, ValueError, op, "warn_fraction must be in [0, 1]",
                "0 <= warn_fraction <= 1", num(warn_fraction));
  const int64_t n = inputs.size(0), d = inputs.numel() / n;
  const std::vector<double> v = values(inputs);
  std::vector<double> t;
  int64_t dt = 0;
  if (targets.defined()) {
    t = values(targets);
    dt = targets.numel() / n;
  }
  auto label = [&](int64_t row) {
    if (dt != 1) return std::string("its target");
    return "label " + num(t[static_cast<size_t>(row)]);
  };
  // First row of each distinct input, by the hash of its bytes (O(N d) expected; only the hashes
  // are kept, and a row is compared with the earlier rows of its bucket): a later equal row is a
  // duplicate, a conflicting one when its target differs from that first row's.
  std::unordered_map<size_t, std::vector<int64_t>> buckets;
  int64_t dup = 0, conflicting = 0;
  std::pair<int64_t, int64_t> dup_pair{-1, -1}, conflict_pair{-1, -1};
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = detail::row_key(v, i, d);
    std::vector<int64_t>& bucket = buckets[std::hash<std::string>{}(key)];
    int64_t j = -1;
    for (int64_t r : bucket)
      if (detail::row_key(v, r, d) == key) {
        j = r;
        break;
      }
    if (j < 0) {
      bucket.push_back(i);
      continue;
    }
    ++dup;
    if (dup_pair.first < 0) dup_pair = {j, i};
    if (dt > 0 && detail::row_key(t, i, dt) != detail::row_key(t, j, dt)) {
      ++conflicting;
      if (conflict_pair.first < 0) conflict_pair = {j, i};
    }
  }
  const double fraction = static_cast<double>(dup) / static_cast<double>(n);
  const double conflict_fraction = static_cast<double>(conflicting) / static_cast<double>(n);
  Finding f = make(kData, "duplicates", Verdict::Ok, "");
  f.metrics["duplicates"] = static_cast<double>(dup);
  f.metrics["fraction"] = fraction;
  f.metrics["conflicting"] = static_cast<double>(conflicting);
  if (dup == 0) {
    f.evidence = "every one of the " + std::to_string(n) + " training rows is distinct";
    return f;
  }
  const std::string rows = dup == 1 ? " row repeats" : " rows repeat";
  f.evidence = std::to_string(dup) + " of " + std::to_string(n) + rows + " an earlier row bit for bit (" +
               num(100 * fraction, 3) + "%), the first: row " + std::to_string(dup_pair.second) + " == row " +
               std::to_string(dup_pair.first);
  // The inputs collapsed to a handful of distinct rows (a constant fill, a broadcast, a wrong
  // column): their "conflicting" labels say nothing about the labels, the inputs are wrong.
  const int64_t distinct = n - dup;
  if (distinct * 100 <= n) {
    f.evidence += "\nthe " + std::to_string(n) + " rows hold only " + plural(distinct, "distinct input");
    f.verdict = Verdict::Fail;
    f.hint = "the inputs collapsed to a few rows, so the labels cannot be told apart by them: check how the inputs "
             "were read or built (a fill with a constant, a broadcast, a wrong column)";
    return f;
  }
  if (conflicting > 0) {
    f.evidence += "\n" + std::to_string(conflicting) + " of them " + (conflicting == 1 ? "has" : "have") +
                  " another target than the row they repeat (the same input, two answers), the first: row " +
                  std::to_string(conflict_pair.second) + " (" + label(conflict_pair.second) + ") == row " +
                  std::to_string(conflict_pair.first) + " (" + label(conflict_pair.first) + ")";
    f.verdict = conflict_fraction > warn_fraction ? Verdict::Fail : Verdict::Warn;
    f.hint = "conflicting duplicates are label noise the model cannot fit: fix or drop the wrong labels (check how "
             "they were joined to the inputs), then deduplicate";
    return f;
  }
  if (fraction > warn_fraction) {
    f.verdict = Verdict::Warn;
    f.hint = "repeated rows weigh some samples more and, when the data is split after, leak into the held-out split: "
             "deduplicate before splitting (a join or an append that ran twice?)";
  } else {
    f.evidence += " (a few: information, not a warning)";
  }
  return f;
}

Finding check_loader_order(const data::DataLoader& loader, int64_t num_classes, size_t max_batches) {
  GRADLAB_CHECK(num_classes > 0, ValueError, "diagnose::check_loader_order", "num_classes must be positive", ">= 1",
                std::to_string(num_classes));
  // A replica reads the batches: the user's loader keeps its epoch and position.
  const std::unique_ptr<data::DataLoader> reader = detail::replica(loader);
  std::vector<std::vector<int64_t>> batches;
  for (data::Batch& b : *reader) {
    if (b.target.defined() && integral(b.target)) batches.push_back(b.target.contiguous().to_vector<int64_t>());
    if (batches.size() >= max_batches) break;
  }
  Finding f = make(Stage::Data, "loader_order", Verdict::Ok, "");
  if (batches.size() < 2) {
    f.evidence = "fewer than 2 labelled batches: nothing to compare";
    return f;
  }
  // Expected distinct labels in a batch of B drawn from the label frequencies p_c:
  //   E[distinct] = Σ_c 1 - (1 - p_c)^B   (sampling with replacement; close enough here)
  std::map<int64_t, double> freq;
  double total = 0, observed = 0, expected = 0;
  for (const auto& b : batches)
    for (int64_t y : b) freq[y] += 1, total += 1;
  for (const auto& b : batches) {
    observed += static_cast<double>(std::set<int64_t>(b.begin(), b.end()).size());
    for (const auto& [c, n] : freq) expected += 1 - std::pow(1 - n / total, static_cast<double>(b.size()));
  }
  if (static_cast<int64_t>(freq.size()) < num_classes) {
    // The batches read cover only some classes (sorted data shows only the first ones): assume
    // the classes are balanced instead.
    expected = 0;
    for (const auto& b : batches)
      expected += static_cast<double>(num_classes) *
                  (1 - std::pow(1 - 1.0 / static_cast<double>(num_classes), static_cast<double>(b.size())));
  }
  observed /= static_cast<double>(batches.size());
  expected /= static_cast<double>(batches.size());
  f.metrics["distinct_per_batch"] = observed;
  f.metrics["expected_distinct_per_batch"] = expected;
  f.metrics["batches"] = static_cast<double>(batches.size());
  f.evidence = "the first " + plural(static_cast<int64_t>(batches.size()), "batch") +
               (batches.size() == 1 ? " holds " : " hold ") + num(observed, 3) +
               " distinct labels on average; shuffled batches would hold " + num(expected, 3);
  if (expected >= 1.5 && observed < 0.5 * expected) {
    f.verdict = Verdict::Fail;
    f.evidence += " (the batches come grouped by label)";
    f.hint = "the data is sorted by label and the loader does not shuffle: every step then pulls the model toward "
             "one class; DataLoaderOptions(...).shuffle(true)";
  }
  return f;
}

std::vector<Finding> check_data(const Tensor& inputs, const Tensor& targets, int64_t num_classes,
                                const InputStats& expected, const Tensor& holdout_inputs,
                                double constant_warn_fraction) {
  std::vector<Finding> out;
  out.push_back(check_finite(inputs, targets));
  if (num_classes > 0 && targets.defined()) {
    out.push_back(check_label_range(targets, num_classes));
    out.push_back(check_label_balance(targets, num_classes));
  }
  out.push_back(check_constant_features(inputs, constant_warn_fraction));
  out.push_back(check_duplicates(inputs, targets));
  out.push_back(check_input_stats(inputs, expected));
  if (holdout_inputs.defined()) out.push_back(check_split_leakage(inputs, holdout_inputs));
  return out;
}

}  // namespace gradlab::diagnose
