// Lesson 09: state_dict.
//
// Save a trained model's weights and load them into a freshly built one; what happens when the
// model changed after saving (missing and unexpected keys); why strict=false can leave layers
// silently at their random initialization (shown by the test accuracy); shape mismatches; and
// the prefix remap for weights saved from a wrapped model ("module.", "model.").
//
// Files are safetensors: an 8-byte length, a JSON header (dtype, shape, offsets per tensor),
// then the raw data. PyTorch users read them with `safetensors.torch.load_file`.

#include <fstream>
#include <functional>
#include <gradlab/gradlab.hpp>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace data = gradlab::data;
using lesson::fmt;
using lesson::join;

namespace {

// The digits, split and standardized with the training set's statistics (sample std).
data::DigitsSplit load() {
  data::DigitsSplitOptions o;
  o.correction = 1;
  o.eps = 0;
  return data::load_digits_split(o);
}

// model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
nn::Sequential mlp(int64_t hidden = 128) {
  return nn::Sequential(nn::Linear(64, hidden), nn::ReLU(), nn::Linear(hidden, 10));
}

template <class M>
double accuracy(M& model, const data::TensorDataset& d) {
  gl::NoGradGuard no_grad;
  model->eval();
  gl::Tensor pred = model->forward(d.data()).argmax(1);
  return (pred == d.targets()).to(gl::kFloat32).mean().template item<float>();
}

template <class M>
void train(M& model, const data::TensorDataset& d, int epochs) {
  gl::optim::Adam opt(model->parameters(), gl::optim::AdamOptions(1e-3));
  data::DataLoader loader(d, data::DataLoaderOptions(64).shuffle(true).seed(1));
  model->train();
  for (int e = 0; e < epochs; ++e)
    for (auto& b : loader) {
      opt.zero_grad();
      gl::nn::functional::cross_entropy(model->forward(b.data), b.target).backward();
      opt.step();
    }
}

std::string pct(double a) { return fmt(100 * a, 1) + "%"; }

// Prints the whole message of the error f() throws (check_throws shows only its first line).
void show_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::cout << "the full error:\n" << e.what() << "\n";
  }
}

// A training script that wrapped the model (as DataParallel does): keys gain "model.".
struct TrainerImpl : nn::Module {
  nn::Sequential model{nullptr};
  TrainerImpl() { model = register_module("model", mlp()); }
  gl::Tensor forward(const gl::Tensor& x) { return model->forward(x); }
};
GRADLAB_MODULE(Trainer);

// The same network after a refactor: its own class, with named submodules instead of 0, 1, 2.
struct ClassifierImpl : nn::Module {
  nn::Linear encoder{nullptr}, classifier{nullptr};
  nn::ReLU act{nullptr};
  ClassifierImpl() {
    encoder = register_module("encoder", nn::Linear(64, 128));
    act = register_module("act", nn::ReLU());
    classifier = register_module("classifier", nn::Linear(128, 10));
  }
  gl::Tensor forward(const gl::Tensor& x) {
    return classifier->forward(act->forward(encoder->forward(x)));
  }
};
GRADLAB_MODULE(Classifier);

// "[128,64]" for a shape, as the safetensors header writes it.
std::string json_shape(const gl::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i) s += ',';  // NOTE: not `(i ? "," : "") + to_string(...)`: GCC 12 warns -Wrestrict there
    s += std::to_string(t.size(i));
  }
  return s + "]";
}
}  // namespace

int main() {
  lesson::Lesson L("09", "state_dict");
  return L.run([&] {
    const auto dir = lesson::output_dir();
    const data::DigitsSplit d = load();

    // ---------------------------------------------------------------------------------------
    L.section("1. save a trained model, load it into a fresh one");
    gl::manual_seed(0);
    nn::Sequential model = mlp();
    train(model, d.train, 10);
    const double trained = accuracy(model, d.test);
    std::cout << "after 10 epochs of Adam: test accuracy " << pct(trained) << "\n";
    // model.state_dict()
    gl::StateDict sd = model->state_dict();
    for (const auto& [k, t] : sd)
      std::cout << "  " << std::left << std::setw(10) << k << t.describe() << "\n";
    // safetensors.torch.save_file(model.state_dict(), path)
    const auto path = dir / "mlp.safetensors";
    gl::save(model, path);
    std::cout << "saved " << std::filesystem::file_size(path) << " bytes to " << path.filename()
              << "\n";
    {
      std::ifstream in(path, std::ios::binary);
      std::string head(8 + 96, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      std::cout << "the file starts with its JSON header: " << head.substr(8) << "...\n";
    }
    gl::manual_seed(123);
    nn::Sequential fresh = mlp();
    const double untrained = accuracy(fresh, d.test);
    // fresh.load_state_dict(safetensors.torch.load_file(path))
    nn::LoadResult r = gl::load(fresh, path);
    const double loaded = accuracy(fresh, d.test);
    std::cout << "fresh model: " << pct(untrained) << " before loading, " << pct(loaded)
              << " after\n";
    L.check(trained >= 0.9, "the trained MLP reaches at least 90% test accuracy");
    L.check(r.ok() && loaded == trained,
            "the fresh model, after load, has exactly the trained accuracy");
    L.check(gl::equal(fresh->forward(d.test.data()), model->forward(d.test.data())),
            "and bit-identical outputs: every weight came back exactly");

    // ---------------------------------------------------------------------------------------
    L.section("2. the model changed after saving: missing and unexpected keys");
    // v2 names its layers and renamed the output layer "2" -> "head".
    nn::Sequential v2(
        {{"0", nn::Linear(64, 128)}, {"1", nn::ReLU()}, {"head", nn::Linear(128, 10)}});
    std::cout << "v2 keys: " << join(v2->state_dict().keys()) << "\n";
    show_error([&] { v2->load_state_dict(gl::load(path)); });
    L.check_throws([&] { v2->load_state_dict(gl::load(path)); },
                   "missing keys: head.weight, head.bias",
                   "strict loading (the default) refuses, listing every missing key ...");
    L.check_throws([&] { v2->load_state_dict(gl::load(path)); },
                   "unexpected keys: 2.weight, 2.bias", "... and every unexpected one");
    L.check(
        v2->load_state_dict(io::remap_prefix(gl::load(path), "2.", "head.")).ok() &&
            accuracy(v2, d.test) == trained &&
            gl::equal(v2->forward(d.test.data()), model->forward(d.test.data())),
        "the hint spotted the rename: io::remap_prefix(dict, \"2.\", \"head.\") loads everything");

    // ---------------------------------------------------------------------------------------
    L.section("3. strict=false: silently half-loaded");
    gl::manual_seed(7);
    nn::Sequential v2b(
        {{"0", nn::Linear(64, 128)}, {"1", nn::ReLU()}, {"head", nn::Linear(128, 10)}});
    nn::LoadResult partial = v2b->load_state_dict(gl::load(path), /*strict=*/false);
    const double half = accuracy(v2b, d.test);
    std::cout << "missing_keys: " << join(partial.missing_keys)
              << "\nunexpected_keys: " << join(partial.unexpected_keys)
              << "\ntest accuracy: " << pct(half) << " (the saved model: " << pct(trained) << ")\n";
    L.check(
        !partial.ok() && partial.missing_keys.size() == 2,
        "no error: load_state_dict(..., strict=false) only returns the keys it could not match");
    L.check(half < 0.5,
            "the head kept its random initialization: the accuracy collapses (below 50%)");
    L.say(
        "With strict=false, always look at missing_keys: an empty list is the only proof that\n"
        "every layer got its weights.");

    // ---------------------------------------------------------------------------------------
    L.section("4. same keys, other shapes");
    nn::Sequential narrow = mlp(64);
    show_error([&] { gl::load(narrow, path, /*strict=*/false); });
    L.check_throws([&] { gl::load(narrow, path, /*strict=*/false); },
                   "0.weight: expected [64, 64] float32, got [128, 64] float32",
                   "a shape mismatch is an error even with strict=false, naming key, expected and "
                   "found shapes");

    // ---------------------------------------------------------------------------------------
    L.section("5. weights saved from a wrapped model: prefix remap");
    Trainer trainer;
    trainer->model->load_state_dict(model->state_dict());
    const auto wrapped_path = dir / "trainer.safetensors";
    gl::save(trainer, wrapped_path);
    std::cout << "keys in the trainer's file: " << join(gl::load(wrapped_path).keys()) << "\n";
    nn::Sequential bare = mlp();
    show_error([&] { gl::load(bare, wrapped_path); });
    L.check_throws([&] { gl::load(bare, wrapped_path); }, "io::strip_prefix(dict, \"model.\")",
                   "the error sees that the keys differ only by a prefix and says how to remap");
    // consume_prefix_in_state_dict_if_present(sd, "model.")
    nn::LoadResult fixed =
        bare->load_state_dict(io::strip_prefix(gl::load(wrapped_path), "model."));
    L.check(fixed.ok() && accuracy(bare, d.test) == trained &&
                gl::equal(bare->forward(d.test.data()), model->forward(d.test.data())),
            "io::strip_prefix(dict, \"model.\") loads it, with the trained accuracy");
    L.check(trainer->load_state_dict(io::add_prefix(model->state_dict(), "model.")).ok(),
            "and io::add_prefix goes the other way (io::remap_prefix(dict, from, to) does both)");

    // ---------------------------------------------------------------------------------------
    L.section("6. the whole model or its state_dict: the file holds data, not code");
    L.say(
        "PyTorch's torch.save(model) pickles the model object, which names its class by import\n"
        "path: loading needs that code, unchanged. gradlab, like LibTorch's C++ API, has no\n"
        "\"save the whole module\": gl::save(model, path) writes model->state_dict(), plain\n"
        "name -> tensor. The code that builds the model stays yours; the file is data.");
    // (a) a plain safetensors file, read here with the standard library only.
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(bytes.at(i));
    std::string header;  // the JSON text without its whitespace (keys here have none)
    for (char c : bytes.substr(8, hlen))
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') header += c;
    size_t listed = 0;
    int64_t data_bytes = 0;
    std::cout << "read without gradlab: 8-byte length " << hlen
              << ", then a JSON header that lists\n";
    for (const auto& [k, t] : sd) {
      const std::string entry = "\"" + k + "\":{\"dtype\":\"F32\",\"shape\":" + json_shape(t);
      const bool found = header.find(entry) != std::string::npos;
      listed += found ? 1 : 0;
      data_bytes += t.numel() * 4;
      std::cout << "  " << std::left << std::setw(10) << k << "F32 " << json_shape(t)
                << (found ? "" : "   (NOT in the header)") << "\n";
    }
    const int64_t rest = static_cast<int64_t>(bytes.size() - 8 - hlen);
    std::cout << "then " << rest << " bytes of raw float32 data (sum of numel * 4 = " << data_bytes
              << ")\n";
    L.check(listed == sd.size() && rest == data_bytes,
            "(a) the file is plain safetensors: every key, dtype and shape is in the JSON header, "
            "then the raw data");
    L.check(
        bytes.find("Sequential") == std::string::npos && bytes.find("Linear") == std::string::npos,
        "    it names no class: nothing in it says Sequential or Linear");
    // (b) the code changed: a new class with renamed submodules.
    gl::manual_seed(5);
    Classifier refactored;
    std::cout << "the refactored model's keys: " << join(refactored->state_dict().keys()) << "\n";
    nn::LoadResult report = gl::load(refactored, path, /*strict=*/false);
    std::cout << "strict=false report: missing_keys: " << join(report.missing_keys)
              << "\n                     unexpected_keys: " << join(report.unexpected_keys) << "\n";
    L.check(
        report.missing_keys == std::vector<std::string>{"encoder.weight", "encoder.bias",
                                                        "classifier.weight", "classifier.bias"} &&
            report.unexpected_keys ==
                std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"},
        "(b) into a refactored class, strict=false reports exactly the renamed keys, missing "
        "and unexpected");
    gl::StateDict renamed =
        io::remap_prefix(io::remap_prefix(gl::load(path), "0.", "encoder."), "2.", "classifier.");
    L.check(refactored->load_state_dict(renamed).ok() &&
                gl::equal(refactored->forward(d.test.data()), model->forward(d.test.data())),
            "    two prefix remaps (0. -> encoder., 2. -> classifier.) load it strictly, with "
            "bit-identical outputs");
    L.say(
        "A pickled whole model would have needed the old class to load at all; the state_dict\n"
        "needed only a rename of its keys (section 1: same code, it loads as it is).");
  });
}
