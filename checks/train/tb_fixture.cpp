// Writes a TensorBoard log directory with every kind of record SummaryWriter makes, and
// expected.json with every value written. checks/train/tensorboard_reader.py reads the event
// files back with TensorBoard's own reader and compares them with expected.json.
//
//   tb_fixture <out_dir>     -> <out_dir>/logs/... and <out_dir>/expected.json

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gl = gradlab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// JSON has no NaN / Inf: they travel as strings.
json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json hist_json(const gl::train::Histogram& h) {
  json j{{"min", h.min}, {"max", h.max}, {"num", h.num}, {"sum", h.sum},
         {"sum_squares", h.sum_squares}, {"bucket_limit", h.bucket_limit}, {"bucket", h.bucket}};
  return j;
}

// The add_graph model: encoder = Sequential(Linear(4, 3), Tanh()), then head = Linear(3, 2),
// then a sigmoid the module itself applies.
struct NetImpl : gl::nn::Module {
  gl::nn::Sequential encoder{nullptr};
  gl::nn::Linear head{nullptr};
  NetImpl() {
    encoder = register_module("encoder", gl::nn::Sequential(gl::nn::Linear(4, 3), gl::nn::Tanh()));
    head = register_module("head", gl::nn::Linear(3, 2));
  }
  gl::Tensor forward(const gl::Tensor& x) { return gl::sigmoid(head(encoder(x))); }
};
GRADLAB_MODULE(Net);

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tb_fixture <out_dir>\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::remove_all(out);
  const fs::path logs = out / "logs";
  json ex;
  ex["logdir"] = logs.string();
  {
    gl::train::SummaryWriter w(logs.string());
    ex["main_file"] = w.file_path();
    // scalars: ordinary, tiny, huge, negative, NaN, Inf, and a step above 2^32
    const std::vector<double> values = {2.302585092994046, 0.1, -3.5, 1e-30, 3.4e38, 1e10,
                                        std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::infinity(), 0.0};
    json sc = json::array();
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t step = i + 1 == values.size() ? (int64_t{1} << 40) : static_cast<int64_t>(i);
      const double wall = 1700000000.25 + static_cast<double>(i);
      w.add_scalar("loss/train", values[i], step, wall);
      sc.push_back({{"step", step}, {"value", num(values[i])}, {"wall_time", wall}});
    }
    ex["scalars"]["loss/train"] = sc;

    // add_scalars: one sub-run per key, all with the tag "loss/both"
    json subs = json::object();
    for (int64_t s = 0; s < 3; ++s) {
      const double a = 1.0 / (s + 1), b = 1.5 / (s + 1);
      w.add_scalars("loss/both", {{"train", a}, {"val", b}}, s, 1700000100.0 + s);
      subs["loss_both_train"].push_back({{"step", s}, {"value", a}, {"wall_time", 1700000100.0 + s}});
      subs["loss_both_val"].push_back({{"step", s}, {"value", b}, {"wall_time", 1700000100.0 + s}});
    }
    ex["add_scalars"] = {{"tag", "loss/both"}, {"runs", subs}};

    // histograms: a weight tensor (seeded), its gradient-like vector, a constant vector
    gl::manual_seed(3);
    const gl::Tensor weight = gl::randn({8, 16}, gl::kFloat64);
    std::vector<double> grad;
    for (int i = 0; i < 200; ++i) grad.push_back(std::sin(0.37 * i) * std::exp(-0.01 * i));
    const std::vector<double> flat(5, 0.25);
    w.add_histogram("fc1.weight", weight, 7, 30, 1700000200.0);
    w.add_histogram("fc1.weight.grad", grad, 7, 12, 1700000200.5);
    w.add_histogram("constant", flat, 9, 30, 1700000201.0);
    ex["histograms"]["fc1.weight"] = {{"step", 7},
                                      {"h", hist_json(gl::train::make_histogram(
                                                weight.to_vector<double>(), 30))}};
    ex["histograms"]["fc1.weight.grad"] = {{"step", 7},
                                           {"h", hist_json(gl::train::make_histogram(grad, 12))}};
    ex["histograms"]["constant"] = {{"step", 9},
                                    {"h", hist_json(gl::train::make_histogram(flat, 30))}};

    // text: markdown and non-ASCII
    const std::string text = "**lr** 0.05, seed 0\n\n| a | b |\n|---|---|\n| 1 | 2 |\n曲线 ✓";
    w.add_text("notes", text, 4, 1700000300.0);
    ex["text"] = {{"tag", "notes/text_summary"}, {"step", 4}, {"text", text}};

    // images: a float RGB [3, 5, 7] (CHW) with 0 and 1 in it, a uint8 RGBA [4, 6, 4] (HWC), a
    // float gray [3, 2] (HW); the raw values go to expected.json in the tensor's own layout
    {
      std::vector<float> rgb;
      for (int i = 0; i < 3 * 5 * 7; ++i)
        rgb.push_back(i == 0 ? 0.f : i == 1 ? 1.f : static_cast<float>((i * 37) % 101) / 100.f);
      std::vector<double> rgba_v;
      for (int i = 0; i < 4 * 6 * 4; ++i) rgba_v.push_back((i * 53) % 256);
      const std::vector<double> gray_v = {0.0, 0.25, 0.5, 0.75, 1.0, 0.002};
      const gl::Tensor rgb_t = gl::tensor(rgb).reshape({3, 5, 7});
      const gl::Tensor rgba_t = gl::tensor(rgba_v).reshape({4, 6, 4}).to(gl::kUInt8);
      const gl::Tensor gray_t = gl::tensor(gray_v).reshape({3, 2});
      w.add_image("images/rgb", rgb_t, 5, "CHW", 1700000250.0);
      w.add_image("images/rgba_u8", rgba_t, 6, "HWC", 1700000251.0);
      w.add_image("images/gray", gray_t, 7, "HW", 1700000252.0);
      json rgb_j = json::array();
      for (float v : rgb) rgb_j.push_back(static_cast<double>(v));
      ex["images"] = {{"images/rgb",
                       {{"step", 5},
                        {"format", "CHW"},
                        {"shape", {3, 5, 7}},
                        {"uint8", false},
                        {"values", rgb_j}}},
                      {"images/rgba_u8",
                       {{"step", 6},
                        {"format", "HWC"},
                        {"shape", {4, 6, 4}},
                        {"uint8", true},
                        {"values", rgba_v}}},
                      {"images/gray",
                       {{"step", 7},
                        {"format", "HW"},
                        {"shape", {3, 2}},
                        {"uint8", false},
                        {"values", gray_v}}}};
    }

    // hparams: a float, an integer, a string, a bool; two final metrics
    w.add_hparams({{"lr", 0.05}, {"batch_size", 64}, {"optimizer", "sgd"}, {"nesterov", true}},
                  {{"hparam/accuracy", 0.9722222222222222}, {"hparam/loss", 0.0912}}, "hp_run", 20);
    ex["hparams"] = {{"run", "hp_run"},
                     {"step", 20},
                     {"hparams", {{"lr", 0.05}, {"batch_size", 64.0}, {"optimizer", "sgd"},
                                  {"nesterov", true}}},
                     {"types", {{"lr", 3}, {"batch_size", 3}, {"optimizer", 1}, {"nesterov", 2}}},
                     {"metrics", {{"hparam/accuracy", 0.9722222222222222}, {"hparam/loss", 0.0912}}}};
    w.close();
  }
  // add_graph: a nested model (a Sequential inside a module, then a head), in its own run
  {
    gl::manual_seed(5);
    gl::train::SummaryWriter w((logs / "graph").string());
    Net net;
    w.add_graph(net, gl::randn({5, 4}));
    w.close();
    ex["graph"] = {{"run", "graph"}};
  }
  // A killed writer: a run whose file is cut inside its last record.
  {
    const fs::path dir = logs / "killed";
    std::string path;
    {
      gl::train::SummaryWriter w(dir.string());
      for (int64_t s = 0; s < 5; ++s) w.add_scalar("x", 0.5 * s, s, 1700000400.0 + s);
      path = w.file_path();
    }
    const auto size = fs::file_size(path);
    fs::resize_file(path, size - 7);  // into the last record's payload
    json k = json::array();
    for (int64_t s = 0; s < 4; ++s) k.push_back({{"step", s}, {"value", 0.5 * s}});
    ex["killed"] = {{"run", "killed"}, {"tag", "x"}, {"scalars", k}};
  }
  // A Monitor run (loss, grad_norm, lr per step + its History CSV), for plot_curves_test.py.
  {
    gl::train::Monitor mon(gl::train::RunInfo().seed(11),
                           gl::train::MonitorOptions()
                               .log_dir((out / "monitor" / "tb").string())
                               .csv_path((out / "monitor" / "run.csv").string())
                               .progress(false));
    for (int64_t s = 0; s < 30; ++s)
      mon.step({s / 10, s, 2.0 * std::exp(-0.1 * static_cast<double>(s)), 1.0 + 0.01 * s,
                0.1 * std::pow(0.5, static_cast<double>(s / 10))});
    mon.close({{"final_loss", 0.1}});
    ex["monitor"] = {{"csv", (out / "monitor" / "run.csv").string()},
                     {"events", (out / "monitor" / "tb").string()}};
  }
  std::ofstream(out / "expected.json") << ex.dump(2) << "\n";
  std::cout << "tb_fixture: wrote " << logs.string() << " and expected.json\n";
  return 0;
}
