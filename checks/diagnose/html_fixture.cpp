// Writes the pages checks/diagnose/browser_check.py opens in a real browser, and what each must
// show (manifest.json):
//   healthy.html   doctor on the healthy digits MLP: three stages, the three charts
//   stopped.html   doctor on labels shifted by one: stopped at data, model and training not run
//   escaped.html   a finding whose evidence and hint hold markup and a script: shown as text
//
//   html_fixture OUT_DIR

#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace dg = gradlab::diagnose;

namespace {

// doctor on the digits MLP (64-128-10, SGD lr 0.1) with the training targets plus `label_shift`.
dg::Report doctor_run(int64_t label_shift) {
  gl::data::DigitsSplitOptions so;
  so.standardize = false;
  const gl::data::DigitsSplit raw = gl::data::load_digits_split(so);
  gl::manual_seed(1);
  nn::Sequential net(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  dg::DoctorOptions o;
  o.input_stats.mean = raw.mean;
  o.input_stats.std = raw.std;
  o.input_stats.sample_shape = {1, 8, 8};
  const gl::Tensor x = (raw.train.data() - raw.mean) / raw.std;
  return dg::doctor(net, nn::CrossEntropyLoss(), opt, {x, raw.train.targets() + label_shift}, o);
}

// What the page must show: each stage's verdict and, per chart kind, how many SVGs it holds
// (activations: one per layer) and how many series or bars.
nlohmann::json expected(const std::string& file, const dg::Report& r) {
  nlohmann::json page;
  page["file"] = file;
  for (dg::Stage s : {dg::Stage::Data, dg::Stage::Model, dg::Stage::Training})
    page["stages"][dg::to_string(s)] = dg::to_string(r.verdict(s));
  page["findings"] = r.findings().size();
  page["charts"] = nlohmann::json::object();
  if (!r.charts.lr_range.lrs.empty()) page["charts"]["lr_range"] = {{"svgs", 1}, {"curves", 1}};
  if (!r.charts.activations.empty()) {
    size_t bars = 0;
    for (const auto& l : r.charts.activations) bars += l.histogram.counts.size();
    page["charts"]["activations"] = {{"svgs", r.charts.activations.size()}, {"bars", bars}};
  }
  if (!r.charts.grad_norms.empty())
    page["charts"]["grad_norms"] = {{"svgs", 1}, {"series", r.charts.grad_norms.size()}};
  page["texts"] = nlohmann::json::array();
  return page;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: html_fixture OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  nlohmann::json pages = nlohmann::json::array();

  const dg::Report healthy = doctor_run(0);
  healthy.html((out / "healthy.html").string());
  pages.push_back(expected("healthy.html", healthy));

  const dg::Report stopped = doctor_run(1);
  stopped.html((out / "stopped.html").string());
  pages.push_back(expected("stopped.html", stopped));

  // Markup in the evidence must stay text: were it parsed, the script would log an error and the
  // image would be an element of the page.
  dg::Report escaped;
  const std::string evidence = "label <script>console.error('injected')</script> <img src=x onerror=\"console.error(1)\">";
  escaped.add(dg::Finding{dg::Stage::Data, "label_range", dg::Verdict::Fail, evidence, "use <b>bold</b> & \"quotes\"", {}, ""});
  escaped.html((out / "escaped.html").string());
  nlohmann::json e = expected("escaped.html", escaped);
  e["texts"] = {evidence, "hint: use <b>bold</b> & \"quotes\""};
  pages.push_back(e);

  std::ofstream(out / "manifest.json") << nlohmann::json{{"pages", pages}}.dump(2) << "\n";
  std::cout << "html_fixture: wrote " << pages.size() << " pages and manifest.json to " << out.string() << "\n";
  return 0;
}
