// Report::html: a doctor run on the digits MLP gives every stage and a chart per kind with one
// element per layer / parameter / bin; text is escaped; stages that did not run are shown as not
// run; the file is replaced atomically and a failed write names the path and keeps the old file.
// (checks/diagnose/browser_check.py opens the page in a real browser.)

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;
using ::testing::Not;
namespace fs = std::filesystem;

namespace {

gl::Tensor prepared(const gl::Tensor& raw) { return (raw - raw_digits().mean) / raw_digits().std; }

// doctor on the healthy digits MLP (SGD, lr 0.1), run once for all the tests here.
const dg::Report& healthy() {
  static const dg::Report r = [] {
    nn::Sequential net = mlp();
    gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
    dg::DoctorOptions o;
    o.input_stats = digits_stats();
    return dg::doctor(net, nn::CrossEntropyLoss(), opt, {prepared(raw_digits().train.data()), digits().train.targets()}, o);
  }();
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A fresh, empty folder under the system's temporary directory.
fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("gradlab-html-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

dg::Report one_finding(const std::string& evidence, dg::Verdict v = dg::Verdict::Warn) {
  dg::Report r;
  r.add(gradlab::diagnose::Finding{dg::Stage::Data, "label_range", v, evidence, "a hint", {}, ""});
  return r;
}

}  // namespace

TEST(Histogram, FixedBinsBetweenMinAndMax) {
  const dg::Histogram h = dg::make_histogram({0, 1, 2, 3, 3, NAN, INFINITY}, 4);
  EXPECT_EQ(h.lo, 0);
  EXPECT_EQ(h.hi, 3);
  EXPECT_EQ(h.counts, (std::vector<int64_t>{1, 1, 1, 2})) << "the maximum falls in the last bin";
  EXPECT_EQ(h.nonfinite, 2);
  EXPECT_EQ(h.total(), 5);
  const dg::Histogram c = dg::make_histogram({2, 2, 2}, 3);
  EXPECT_EQ(c.lo, 1.5);
  EXPECT_EQ(c.hi, 2.5);
  EXPECT_EQ(c.counts, (std::vector<int64_t>{0, 3, 0})) << "equal values: the middle bin";
  EXPECT_THROW(dg::make_histogram({1.0}, 0), gl::ValueError);
}

TEST(Histogram, ActivationStatsHistogramEachLayersOutput) {
  const auto layers = dg::activation_stats(mlp(), xb());
  ASSERT_EQ(layers.size(), 3u);
  for (const dg::LayerStats& s : layers) {
    EXPECT_EQ(s.histogram.counts.size(), 24u) << s.name;
    EXPECT_EQ(s.histogram.total(), s.shape[0] * s.shape[1]) << s.name << ": every element in a bin";
    EXPECT_LT(s.histogram.lo, s.histogram.hi);
  }
  // ReLU: its minimum is 0 and its dead / negative half lands in the first bin
  EXPECT_EQ(layers[1].histogram.lo, 0.0);
  EXPECT_GT(layers[1].histogram.counts[0], layers[1].histogram.total() / 4);
}

TEST(ReportHtml, DoctorKeepsTheCurvesBehindItsFindings) {
  const dg::Report& r = healthy();
  ASSERT_FALSE(r.has_failure()) << r;
  const dg::ReportCharts& c = r.charts;
  ASSERT_FALSE(c.lr_range.lrs.empty());
  EXPECT_EQ(c.lr_range.lrs.size(), c.lr_range.losses.size());
  EXPECT_EQ(c.lr_range.best_lr, r.find("lr_range")->metric("best_lr"));
  EXPECT_EQ(c.lr_range.optimizer_lr, 0.1);
  ASSERT_EQ(c.activations.size(), 3u);  // Linear, ReLU, Linear
  EXPECT_EQ(c.activations[1].type, "ReLU");
  EXPECT_EQ(c.activations[2].shape, (std::vector<int64_t>{64, 10}));
  ASSERT_EQ(c.grad_norms.size(), 4u);  // two weights, two biases
  for (const auto& s : c.grad_norms) EXPECT_EQ(s.values.size(), 5u) << s.name;
  EXPECT_EQ(c.grad_norms[0].name, "0.weight");
  EXPECT_THAT(r.json(), Not(HasSubstr("charts"))) << "json() schema 1 is unchanged";
}

TEST(ReportHtml, EveryStageEveryFindingAndAChartPerKind) {
  const dg::Report& r = healthy();
  const std::string h = r.html_string();
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(h, HasSubstr("</html>"));
  EXPECT_THAT(h, HasSubstr("<p id=\"verdict\" class=\"verdict\" data-verdict=\"ok\">doctor: no failure</p>"));
  // stages in order
  const size_t d = h.find("id=\"stage-data\""), m = h.find("id=\"stage-model\""), t = h.find("id=\"stage-training\"");
  ASSERT_NE(d, std::string::npos);
  ASSERT_NE(m, std::string::npos);
  ASSERT_NE(t, std::string::npos);
  EXPECT_LT(d, m);
  EXPECT_LT(m, t);
  EXPECT_EQ(count(h, "<article class=\"finding\""), r.findings().size());
  for (const dg::Finding& f : r.findings()) EXPECT_THAT(h, HasSubstr("data-check=\"" + f.check + "\"")) << f.check;
  EXPECT_THAT(h, HasSubstr("<p class=\"stage-summary\">6 checks, 0 failed, 0 warned</p>"));
  // one chart per kind, each in its stage
  EXPECT_EQ(count(h, "<figure class=\"chart\""), 3u);
  const size_t act = h.find("data-chart=\"activations\""), lr = h.find("data-chart=\"lr_range\""),
               gn = h.find("data-chart=\"grad_norms\"");
  EXPECT_TRUE(m < act && act < t) << "the histograms are in the model stage";
  EXPECT_TRUE(t < lr && t < gn) << "the LR sweep and the gradient norms are in the training stage";
  // a histogram per layer with a bar per bin, a line per parameter, the three LR markers
  EXPECT_EQ(count(h, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"histogram\""), 3u);
  EXPECT_EQ(count(h, "<rect class=\"bar\""), 3u * 24u);
  EXPECT_EQ(count(h, "<g class=\"series\""), 4u);
  EXPECT_EQ(count(h, "<circle "), 4u * 5u);
  EXPECT_THAT(h, HasSubstr("data-marker=\"best_lr\""));
  EXPECT_THAT(h, HasSubstr("data-marker=\"optimizer_lr\""));
  EXPECT_THAT(h, HasSubstr("learning rate (log)"));
  EXPECT_THAT(h, HasSubstr(">&#39;1&#39; (ReLU) [64, 128]</text>"));
  // self-contained: no script, no resource from elsewhere
  EXPECT_THAT(h, Not(HasSubstr("<script")));
  EXPECT_THAT(h, Not(HasSubstr("src=")));
  EXPECT_THAT(h, Not(HasSubstr("url(")));
  EXPECT_EQ(count(h, "http"), count(h, "xmlns=\"http://www.w3.org/2000/svg\"")) << "the SVG namespace is the only URL";
}

TEST(ReportHtml, ValueAxesTurnLogWhenTheValuesSpanDecades) {
  dg::Report r;  // charts are drawn in the stage they belong to: training must have run
  r.add(gradlab::diagnose::Finding{dg::Stage::Training, "gradient_stats", dg::Verdict::Ok, "e", "", {}, ""});
  r.charts.grad_norms = {{"w", {1.0, 1.5, 2.0}}};
  EXPECT_THAT(r.html_string(), HasSubstr(">||grad||</text>"));
  r.charts.grad_norms = {{"w", {1e-4, 1e-2, 1.0}}};
  EXPECT_THAT(r.html_string(), HasSubstr(">||grad|| (log)</text>"));
  // a NaN breaks the line (a new M) instead of being drawn
  r.charts.grad_norms = {{"w", {1.0, NAN, 2.0, 3.0}}};
  const std::string h = r.html_string();
  const size_t at = h.find("<g class=\"series\"");
  ASSERT_NE(at, std::string::npos);
  const std::string path = h.substr(at, h.find("/>", at) - at);
  EXPECT_EQ(count(path, "M"), 2u) << path;
  EXPECT_EQ(count(path, "L"), 1u) << path;
  EXPECT_EQ(count(h.substr(at), "<circle "), 3u);
}

TEST(ReportHtml, TextIsEscaped) {
  dg::Report r = one_finding("label <script>alert(\"x & 'y'\")</script>\nsecond line");
  r.add(gradlab::diagnose::Finding{dg::Stage::Model, "a<b>", dg::Verdict::Fail, "e", "use <b> & \"c\"", {}, "data/<x>"});
  const std::string h = r.html_string();
  EXPECT_THAT(h, Not(HasSubstr("<script")));
  EXPECT_THAT(h, Not(HasSubstr("<b>&")));
  EXPECT_THAT(h, HasSubstr("label &lt;script&gt;alert(&quot;x &amp; &#39;y&#39;&quot;)&lt;/script&gt;\nsecond line"));
  EXPECT_THAT(h, HasSubstr("data-check=\"a&lt;b&gt;\""));
  EXPECT_THAT(h, HasSubstr("<b>hint:</b> use &lt;b&gt; &amp; &quot;c&quot;"));
  EXPECT_THAT(h, HasSubstr("may follow from <code>data/&lt;x&gt;</code>"));
}

TEST(ReportHtml, StagesThatDidNotRunAreShownAsNotRun) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  dg::DoctorOptions o;
  o.input_stats = digits_stats();
  const dg::Report r = dg::doctor(net, nn::CrossEntropyLoss(), opt,
                                  {prepared(raw_digits().train.data()), digits().train.targets() + 1}, o);
  ASSERT_TRUE(r.stopped_at.has_value()) << r;
  const std::string h = r.html_string();
  EXPECT_THAT(h, HasSubstr("id=\"stage-data\" data-stage=\"data\" data-verdict=\"fail\""));
  for (const char* s : {"model", "training"})
    EXPECT_THAT(h, HasSubstr(std::string("id=\"stage-") + s + "\" data-stage=\"" + s +
                             "\" data-verdict=\"not_run\">\n<h2>" + s +
                             " <span class=\"badge v-not_run\">not_run</span></h2>\n"
                             "<p class=\"stage-summary\">not run (stopped at the data stage)</p>"));
  EXPECT_THAT(h, HasSubstr("data-verdict=\"fail\">doctor: stopped at the data stage"));
  EXPECT_THAT(h, HasSubstr("data-check=\"label_range\" data-verdict=\"fail\""));
  EXPECT_EQ(count(h, "<figure class=\"chart\""), 0u) << "no stage that draws charts ran";
  // a hand-built report: the stages it does not hold are not run, without a "stopped at"
  const std::string one = one_finding("e").html_string();
  EXPECT_THAT(one, HasSubstr("data-verdict=\"not_run\">\n<h2>training <span class=\"badge v-not_run\">not_run</span></h2>\n"
                             "<p class=\"stage-summary\">not run</p>"));
  EXPECT_THAT(one, HasSubstr("<p class=\"stage-summary\">1 check, 0 failed, 1 warned</p>"));
}

TEST(ReportHtml, WritesTheFileAndReplacesItAtomically) {
  const fs::path dir = scratch("atomic");
  const fs::path p = dir / "report.html";
  const dg::Report first = one_finding("first");
  first.html(p.string());
  EXPECT_EQ(read(p), first.html_string());
  // rename over the target, never a rewrite in place: a hard link to the old file keeps the old page
  fs::create_hard_link(p, dir / "old.html");
  const dg::Report second = one_finding("second");
  second.html(p.string());
  EXPECT_EQ(read(p), second.html_string());
  EXPECT_EQ(read(dir / "old.html"), first.html_string());
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2u) << "no temporary file left behind";
  fs::remove_all(dir);
}

TEST(ReportHtml, AFailedWriteNamesThePathAndKeepsTheOldFile) {
  const fs::path dir = scratch("failed");
  const std::string missing = (dir / "no-such-dir" / "report.html").string();
  try {
    one_finding("e").html(missing);
    ADD_FAILURE() << "writing into a missing folder must throw";
  } catch (const gl::IOError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Report::html: cannot write the report to '" + missing + "'"));
    EXPECT_THAT(e.what(), HasSubstr("hint: check that the directory exists"));
  }
  // A write that fails half way (the file-size limit, EFBIG) leaves the previous report whole.
  const fs::path p = dir / "report.html";
  const dg::Report& good = healthy();
  good.html(p.string());
  const std::string before = read(p);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);  // the write returns EFBIG instead of a signal
  rlimit small = old;
  small.rlim_cur = 4096;  // far below the page: the write of its temporary fails
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    good.html(p.string());
  } catch (const gl::IOError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_THAT(error, HasSubstr("cannot write the report to '" + p.string() + "'"));
  EXPECT_THAT(error, HasSubstr("File too large"));
  EXPECT_EQ(read(p), before) << "the previous report is untouched";
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "the failed temporary is removed";
  fs::remove_all(dir);
}
