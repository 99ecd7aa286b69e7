// Lesson 18: from experiment to deployment.
//
// A trained digits classifier goes the last steps of the workflow: eval mode + no_grad for
// inference; jit::trace to record its forward as a graph (and what a trace cannot see: a branch
// on tensor values); jit::compile to fuse elementwise chains into one pass over memory, checked
// against eager, the bytes it writes counted against eager's (its speed only printed);
// onnx::export_model to an ONNX file that onnxruntime (from the project's .venv) runs to the same
// predictions. eval mode is not an inference pipeline: infer() wraps eval + NoGradGuard + the
// training preprocessing of raw rows; serve.py, a minimal server with no gradlab code, answers raw
// rows from the exported file and the shipped statistics as gradlab does.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <gradlab/testing.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace fs = std::filesystem;
using lesson::fmt;

namespace {

double accuracy(nn::Sequential& model, const gl::Tensor& x, const gl::Tensor& y) {
  gl::NoGradGuard no_grad;
  return gl::mean((gl::argmax(model(x), 1) == y).to(gl::kFloat64)).item<double>();
}

// A LayerNorm written out with elementwise ops and sums: what jit::compile fuses.
std::vector<gl::Tensor> layer_norm_chain(const std::vector<gl::Tensor>& in) {
  const gl::Tensor& x = in[0];
  const double D = static_cast<double>(x.size(-1));
  gl::Tensor xc = x - x.sum({-1}, true) / D;
  gl::Tensor var = (xc * xc).sum({-1}, true) / D;
  return {xc / gl::sqrt(var + 1e-5) * in[1] + in[2]};
}

// Bytes one call of f allocates: what it writes into new tensors.
template <class F>
std::size_t bytes_allocated(F&& f) {
  const std::size_t before = gl::memory::stats().allocated_total;
  f();
  return gl::memory::stats().allocated_total - before;
}

// Best wall time (ms) of `reps` calls of f, over `trials` trials (the best is the least disturbed
// by other processes).
template <class F>
double best_ms(F&& f, int reps, int trials) {
  double best = 1e300;
  for (int k = 0; k < trials; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count() / reps);
  }
  return best;
}

// A branch on data: the classic trap of tracing.
gl::Tensor branchy(const gl::Tensor& x) {
  if (x.sum().item<float>() > 0) return x * 2;
  return -x;
}


// The inference pipeline: what predict() must do besides model->eval(). Raw rows are the data
// set's 64 pixel values (0..16); the training preprocessing is pixel / 16, then the training
// split's per-pixel standardization. Eval mode, no graph, and the model's mode given back.
struct Preprocess {
  gl::Tensor mean, std;  // [64], the training split's statistics (load_digits_split)
  bool skip_scaling = false;  // --bug infer_skips_scaling: the / 16 is forgotten
  gl::Tensor operator()(const gl::Tensor& rows) const {
    const gl::Tensor x = skip_scaling ? rows : rows / 16.0;
    return (x - mean) / std;
  }
};
gl::Tensor infer(nn::Sequential& model, const Preprocess& prep, const gl::Tensor& rows) {
  const bool was_training = model->is_training();
  model->eval();
  gl::Tensor pred;
  {
    gl::NoGradGuard no_grad;
    pred = gl::argmax(model(prep(rows)), 1);
  }
  if (was_training) model->train();
  return pred;
}

// Runs a command through the shell; its exit code (-1 when it did not exit normally).
int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson L("18", "deployment: eval, trace, compile, ONNX", argc, argv,
                   {{"test_in_train_mode", "the Dropout demo runs test digits through the model in training mode",
                     "BatchNorm's running statistics hold training images only"},
                    {"bn_left_in_train", "only Dropout is put in eval mode; BatchNorm stays in training mode",
                     "a digit's output does not depend on its batch"},
                    {"trace_on_negative", "branchy is traced on -ones instead of ones",
                     "the trace froze the x > 0 branch"},
                    {"stale_onnx", "the export goes to another path; an earlier run's file is left in its place",
                     "the exported file holds this model's trained weights"},
                    {"infer_skips_scaling", "the inference function forgets the / 16 of the training preprocessing",
                     "infer() on raw rows gives the model's predictions"},
                    {"stats_not_shipped", "the server gets mean 0 and std 1: the standardization is not shipped with the model",
                     "the server answers every request as gradlab does"}});
  return L.run([&] {
    // -------------------------------------------------------------------------------------------
    L.section("1. A trained model, in eval mode and under no_grad");
    gl::manual_seed(0);
    gl::data::DigitsSplit split = gl::data::load_digits_split();
    const gl::Tensor xtr = split.train.data(), ytr = split.train.targets();
    const gl::Tensor xte = split.test.data(), yte = split.test.targets();
    nn::Sequential model(nn::Linear(64, 64), nn::BatchNorm1d(64), nn::ReLU(), nn::Dropout(0.2),
                         nn::Linear(64, 10));
    gl::optim::Adam opt(model->parameters(), gl::optim::AdamOptions(1e-2));
    for (int step = 0; step < 60; ++step) {  // full-batch steps: enough for this small net
      opt.zero_grad();
      gl::nn::functional::cross_entropy(model(xtr), ytr).backward();
      opt.step();
    }
    // Dropout's randomness is shown on a training batch: a training-mode forward writes the
    // batch's statistics into BatchNorm's running ones (even under no_grad, even without
    // backward), so a test image must never go through the model in training mode (lesson 08).
    nn::BatchNorm1dImpl* bn = &model->at<nn::BatchNorm1dImpl>(1);
    const gl::Tensor rm0 = bn->running_mean.clone();
    const bool test_in_train_mode = L.bug("test_in_train_mode");
    gl::Tensor shown = test_in_train_mode ? xte.narrow(0, 0, 8) : xtr.narrow(0, 0, 8);
    gl::Tensor a = model(shown), b = model(shown);
    L.check(!gl::equal(a, b), "in training mode two calls differ (Dropout draws new masks)");
    // Each training-mode call did running_mean = 0.9 running_mean + 0.1 mean(batch of h), h the
    // first Linear's output (not changed: no optimizer step): what went in is known exactly.
    gl::Tensor h_train;
    {
      gl::NoGradGuard no_grad;
      h_train = model->at<nn::LinearImpl>(0).forward(xtr.narrow(0, 0, 8)).mean({0});
    }
    const gl::Tensor rm_want = rm0 * (0.9 * 0.9) + h_train * (1.0 - 0.9 * 0.9);
    const double rm_err = lesson::max_abs_diff(bn->running_mean, rm_want);
    std::cout << "running_mean after the two calls vs 0.81 rm + 0.19 mean(h(train batch)): max diff "
              << fmt("%.1e", rm_err) << "\n";
    L.check(rm_err < 1e-5, "BatchNorm's running statistics hold training images only, no test image");
    if (L.bug("bn_left_in_train")) {
      model->ptr(3)->eval();  // only Dropout switched off: BatchNorm stays in training mode
    } else {
      model->eval();
    }
    const gl::Tensor rm1 = bn->running_mean.clone();
    gl::Tensor probe = xte.narrow(0, 0, 8);
    gl::Tensor c, d, pair;
    {
      gl::NoGradGuard no_grad;
      c = model(probe), d = model(probe);
      pair = model(probe.narrow(0, 0, 2));  // (one digit alone: BatchNorm in training mode refuses)
    }
    L.check(gl::equal(c, d), "in eval mode the same input gives the same output, bit for bit");
    const double other_batch = lesson::max_abs_diff(pair, c.narrow(0, 0, 2));
    std::cout << "test digits 0-1 in a batch of 2 vs in a batch of 8: max diff " << fmt("%.1e", other_batch)
              << "\n";
    L.check(other_batch < 1e-5,
            "in eval mode a digit's output does not depend on its batch: BatchNorm uses running statistics");
    L.check(!c.requires_grad() && c.grad_fn() == nullptr,
            "under NoGradGuard no graph is recorded (no grad_fn)");
    const double acc = accuracy(model, xte, yte);
    std::cout << "test accuracy (eval mode): " << fmt(acc, 3) << "\n";
    L.check(acc > 0.9, "the model is worth deploying: test accuracy above 0.9");
    L.check(gl::equal(bn->running_mean, rm1),
            "inference on all 360 test digits left BatchNorm's running statistics untouched");
    // eval() is one switch, not an inference pipeline: a request is a raw row (pixels 0..16), and
    // the model only knows rows prepared as in training. infer() = eval + NoGradGuard + that
    // preprocessing; the statistics come from the training split, never from the requests.
    gl::data::DigitsSplitOptions raw_opt;
    raw_opt.standardize = false;
    const gl::data::DigitsSplit raw_split = gl::data::load_digits_split(raw_opt);
    const gl::Tensor rows = raw_split.test.data() * 16.0;  // what a client sends: 0..16, exact in float32
    const Preprocess prep{split.mean, split.std, L.bug("infer_skips_scaling")};
    gl::Tensor want_pred, on_raw;
    {
      gl::NoGradGuard no_grad;
      want_pred = gl::argmax(model(xte), 1);  // the model as set up above, on the prepared split
      on_raw = gl::argmax(model(rows), 1);  // eval mode alone: the raw rows as a client sends them
    }
    const bool bn_left_in_train = L.bug("bn_left_in_train");
    model->train();  // as a training script leaves it
    const gl::Tensor served = infer(model, prep, rows);
    const double same = gl::mean((served == want_pred).to(gl::kFloat64)).item<double>();
    std::cout << "infer(model, prep, raw rows): " << fmt(100 * same, 3)
              << "% of the 360 predictions equal the model's on the prepared test split; model in "
              << (model->is_training() ? "training" : "eval") << " mode afterwards\n";
    L.check(same == 1.0 && model->is_training() && !served.requires_grad(),
            "infer() on raw rows gives the model's predictions on the prepared split (all 360), and gives the "
            "training mode back");
    if (bn_left_in_train) {  // back to the modes set above, for the next sections
      model->ptr(3)->eval();
    } else {
      model->eval();
    }
    const double acc_raw = gl::mean((on_raw == yte).to(gl::kFloat64)).item<double>();
    const double changed = 1.0 - gl::mean((on_raw == want_pred).to(gl::kFloat64)).item<double>();
    std::cout << "eval mode alone, on the raw rows (no preprocessing): " << fmt(100 * changed, 3)
              << "% of the predictions change; test accuracy " << fmt(acc_raw, 3) << "\n";
    L.check(changed > 0.05,
            "eval mode alone is not an inference pipeline: without the training preprocessing more than 5% of "
            "the predictions change");

    // -------------------------------------------------------------------------------------------
    L.section("2. jit::trace: the forward as a graph, and what a trace cannot see");
    gl::jit::Graph g = gl::jit::trace([&](const gl::Tensor& x) { return model(x); }, probe);
    std::cout << "traced ops: " << lesson::join(g.kinds()) << "\n";
    const fs::path dot = lesson::output_dir() / "model.dot";
    std::ofstream(dot) << g.dot();
    std::cout << "graph written to " << dot.string() << " (Graphviz: dot -Tsvg model.dot)\n";
    gl::Tensor other = xte.narrow(0, 100, 8), replayed, direct;
    {
      gl::NoGradGuard no_grad;
      replayed = g.replay(other);
      direct = model(other);
    }
    L.check(lesson::max_abs_diff(replayed, direct) < 1e-6,
            "replaying the graph on other inputs gives the model's outputs");
    L.check(g.warnings.empty(), "the model's forward reads no tensor value on the host: no TracerWarning");
    gl::jit::TraceOptions quiet;
    quiet.print_warnings = false;
    gl::Tensor pos = gl::ones({3}), neg = -gl::ones({3});
    // The planted bug traces on the wrong example input: a trace is only as good as its example.
    gl::jit::Graph gb = gl::jit::trace(branchy, L.bug("trace_on_negative") ? neg : pos, quiet);
    std::cout << "branchy traced on ones: " << lesson::join(gb.kinds()) << "\n"
              << (gb.warnings.empty() ? "(no warning)" : gb.warnings[0].substr(0, 60) + " ...") << "\n";
    L.check(gb.warnings.size() == 1, "item() inside the traced function raises a TracerWarning");
    gl::Tensor frozen = gb.replay(neg);
    std::cout << "replay on -ones: " << fmt(frozen.sum().item<double>(), 0) << " (sum); eager: "
              << fmt(branchy(neg).sum().item<double>(), 0) << " (sum)\n";
    L.check(gl::allclose(frozen, neg * 2) && !gl::allclose(frozen, branchy(neg)),
            "the trace froze the x > 0 branch: on -ones it computes x * 2, not -x");
    gl::jit::TraceOptions check = quiet;
    check.check_inputs = {{neg}};
    L.check_throws([&] { gl::jit::trace(branchy, pos, check); }, "graphs differed across invocations",
                   "re-tracing on other inputs (check_inputs) catches it: TracingCheckError");

    // -------------------------------------------------------------------------------------------
    L.section("3. jit::compile: elementwise chains fused into one pass");
    auto ln = gl::jit::compile(layer_norm_chain);
    const std::vector<gl::Tensor> in = {gl::randn({2048, 512}), gl::randn({512}), gl::randn({512})};
    gl::Tensor fused = ln(in)[0], eager = layer_norm_chain(in)[0];
    std::cout << ln.report();
    L.check(ln.fused_regions() >= 2, "the LayerNorm chain runs as fused regions (with row-sum tails)");
    const double err = lesson::max_abs_diff(fused, eager);
    std::cout << "max |compiled - eager| = " << fmt("%.1e", err) << "\n";
    L.check(err < 1e-4, "compiled equals eager within float32 tolerance (< 1e-4)");
    // Training: the fused region is one autograd node, and its fused backward passes gradcheck.
    auto f64 = gl::jit::compile([](const std::vector<gl::Tensor>& v) {
      return std::vector<gl::Tensor>{gl::tanh(v[0] * v[1]) + gl::sigmoid(v[0]) * gl::exp(-v[1])};
    });
    gl::Tensor u = gl::randn({4, 3}, gl::dtype(gl::kFloat64)).requires_grad_();
    gl::Tensor w = gl::randn({4, 3}, gl::dtype(gl::kFloat64)).requires_grad_();
    L.check(f64({u, w})[0].grad_fn()->name() == "FusedBackward0",
            "a fused region records one autograd node (FusedBackward0)");
    auto report = gl::testing::gradcheck([&](const gl::TensorList& v) { return f64(v); }, {u, w},
                                         gl::testing::GradcheckOptions().raise_exception(false));
    L.check(report.ok, "gradcheck (float64) passes on the compiled function: the fused backward is right");
    // What fusion saves is memory traffic: every eager op writes a new tensor that the next op
    // reads again. Counted in bytes allocated per call (memory::stats().allocated_total), which
    // does not depend on the machine, its load or its BLAS: eager writes 5 float32 [2048, 512]
    // tensors (xc, xc * xc, xc / std, * w, + b: 5 x 4 MiB), the compiled chain fewer.
    const std::size_t bytes_eager = bytes_allocated([&] { layer_norm_chain(in); });
    const std::size_t bytes_compiled = bytes_allocated([&] { ln(in); });
    const double full = 2048.0 * 512 * 4;  // bytes of one float32 [2048, 512] tensor
    std::cout << "LayerNorm chain [2048, 512], bytes allocated per call: eager "
              << gl::memory::format_bytes(bytes_eager) << " (" << fmt(bytes_eager / full, 1)
              << " full-size tensors), compiled " << gl::memory::format_bytes(bytes_compiled) << " ("
              << fmt(bytes_compiled / full, 1) << ")\n";
    L.check(2 * bytes_compiled <= bytes_eager,
            "compiled writes at most half the bytes eager writes: fewer passes over memory");
    // The speed-up this saving buys depends on the machine (its caches, memory bandwidth and
    // load): printed as information, not checked. bench_jit measures it with repetitions.
    const double t_eager = best_ms([&] { layer_norm_chain(in); }, 3, 5);
    const double t_compiled = best_ms([&] { ln(in); }, 3, 5);
    std::cout << "measured here (information, not a claim): eager " << fmt(t_eager, 2)
              << " ms, compiled " << fmt(t_compiled, 2) << " ms (" << fmt(t_eager / t_compiled, 1)
              << "x faster)\n";

    // -------------------------------------------------------------------------------------------
    L.section("4. onnx::export_model, run by onnxruntime");
    const fs::path onnx_file = lesson::output_dir() / "digits_mlp.onnx";
    // A file left by an earlier run must not pass for this model: remove it, export, then look
    // for this model's trained weights (raw float32 bytes of its initializers) in the new file.
    fs::remove(onnx_file);
    if (L.bug("stale_onnx")) {
      // The export is written elsewhere, and an earlier run's file (another model) is left in place.
      gl::manual_seed(1);
      nn::Sequential earlier(nn::Linear(64, 64), nn::BatchNorm1d(64), nn::ReLU(), nn::Dropout(0.2),
                             nn::Linear(64, 10));
      earlier->eval();
      gl::onnx::export_model(earlier, xte, onnx_file.string());
      gl::onnx::export_model(model, xte, (lesson::output_dir() / "digits_mlp_new.onnx").string());
    } else {
      gl::onnx::export_model(model, xte, onnx_file.string());
    }
    std::string onnx_bytes;
    {
      std::ifstream f(onnx_file, std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      onnx_bytes = ss.str();
    }
    auto holds = [&](const gl::Tensor& t) {
      const std::vector<float> v = t.detach().contiguous().to_vector<float>();
      const std::string raw(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
      return onnx_bytes.find(raw) != std::string::npos;
    };
    const bool weights_in = holds(model->at<nn::LinearImpl>(0).weight) &&
                            holds(model->at<nn::LinearImpl>(4).weight) && holds(bn->running_mean);
    std::cout << "ONNX file: " << onnx_bytes.size() << " bytes\n";
    L.check(weights_in, "the exported file holds this model's trained weights and running statistics");
    const fs::path py = fs::path(GRADLAB_SOURCE_DIR) / ".venv" / "bin" / "python";
    const fs::path xin = lesson::output_dir() / "x.npy", want = lesson::output_dir() / "want.npy",
                   got = lesson::output_dir() / "ort.npy", log = lesson::output_dir() / "ort.log";
    gl::Tensor logits;
    {
      gl::NoGradGuard no_grad;
      logits = model(xte);
    }
    gl::io::save_npy(xte, xin);
    gl::io::save_npy(logits, want);
    fs::remove(got);
    int code = 77;
    if (fs::exists(py)) {
      const std::string cmd = py.string() + " " + GRADLAB_SOURCE_DIR + "/tools/onnxruntime_check.py " +
                              onnx_file.string() + " " + xin.string() + " " + want.string() +
                              " --out " + got.string() + " > " + log.string() + " 2>&1";
      const int rc = std::system(cmd.c_str());
      code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    }
    if (code == 77) {
      std::cout << "SKIPPED: onnxruntime is not in " << py.parent_path().parent_path().string()
                << " (run tools/setup.sh); the ONNX predictions are not checked here.\n";
    } else {
      std::ifstream f(log);
      std::stringstream text;
      text << f.rdbuf();
      const std::string t = text.str();
      std::cout << "onnxruntime: " << (t.find("max") != std::string::npos ? t.substr(t.find("max")) : t);
      gl::Tensor ort = fs::exists(got) ? gl::io::load_npy(got) : gl::Tensor();
      L.check(code == 0 && ort.defined(), "onnxruntime runs the file and matches gradlab's logits within 1e-5");
      L.check(ort.defined() && gl::equal(gl::argmax(ort, 1), gl::argmax(logits, 1)),
              "the same predictions for all 360 test digits");
    }

    // A minimal server (lessons/18_deployment/serve.py): onnxruntime and numpy only, no gradlab
    // and none of the model's C++ code. It loads a batch-1 export once, reads raw rows (0..16,
    // one request a line), applies the training preprocessing with the statistics shipped beside
    // the model, and answers each request with a digit.
    const fs::path serve_model = lesson::output_dir() / "digits_mlp_serve.onnx",
                   mean_file = lesson::output_dir() / "mean.npy", std_file = lesson::output_dir() / "std.npy",
                   requests = lesson::output_dir() / "requests.csv",
                   answers = lesson::output_dir() / "predictions.txt";
    gl::onnx::export_model(model, xte.narrow(0, 0, 1), serve_model.string());
    const bool shipped = !L.bug("stats_not_shipped");
    gl::io::save_npy(shipped ? split.mean : gl::zeros({64}), mean_file);
    gl::io::save_npy(shipped ? split.std : gl::ones({64}), std_file);
    {
      std::ofstream out(requests);
      const std::vector<float> v = rows.contiguous().to_vector<float>();
      for (int64_t i = 0; i < rows.size(0); ++i)
        for (int64_t j = 0; j < 64; ++j) out << static_cast<int>(v[i * 64 + j]) << (j == 63 ? "\n" : ",");
    }
    fs::remove(answers);
    const int serve_code =
        fs::exists(py) ? shell(py.string() + " " + GRADLAB_SOURCE_DIR + "/lessons/18_deployment/serve.py " +
                               serve_model.string() + " " + mean_file.string() + " " + std_file.string() + " < " +
                               requests.string() + " > " + answers.string() + " 2> " + log.string())
                       : 77;
    if (serve_code == 77) {
      std::cout << "SKIPPED: onnxruntime is not in " << py.parent_path().parent_path().string()
                << " (run tools/setup.sh); the server is not run here.\n";
    } else {
      std::vector<int64_t> got_pred;
      std::ifstream in(answers);
      for (int64_t p; in >> p;) got_pred.push_back(p);
      const std::vector<int64_t> want_v = infer(model, prep, rows).to_vector<int64_t>();
      int64_t agree = 0;
      for (size_t i = 0; i < std::min(got_pred.size(), want_v.size()); ++i) agree += got_pred[i] == want_v[i];
      std::cout << "serve.py (onnxruntime + numpy, no gradlab): " << got_pred.size() << " requests answered, "
                << agree << " as gradlab's infer()\n";
      L.check(serve_code == 0 && got_pred.size() == want_v.size() && agree == static_cast<int64_t>(want_v.size()),
              "the server answers every request as gradlab does: the exported file and the shipped preprocessing "
              "run without the model's C++ code");
    }
  });
}
