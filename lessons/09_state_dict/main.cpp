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
            accuracy(v2, d.test) == trained,
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
    L.check(fixed.ok() && accuracy(bare, d.test) == trained,
            "io::strip_prefix(dict, \"model.\") loads it, with the trained accuracy");
    L.check(trainer->load_state_dict(io::add_prefix(model->state_dict(), "model.")).ok(),
            "and io::add_prefix goes the other way (io::remap_prefix(dict, from, to) does both)");
  });
}
