// io_resume_helper: trains the digits MLP with Adam (shuffled DataLoader with 2 workers and
// random augmentations, Dropout drawing from the global generator) and saves or resumes, so that
// ResumeFromCheckpoint.* can compare an interrupted run, continued in a NEW process, with an
// uninterrupted one.
//
//   io_resume_helper full   <steps> <out.safetensors>                 steps from scratch
//   io_resume_helper first  <steps> <ckpt.safetensors>                steps from scratch,
//   checkpoint io_resume_helper resume <ckpt> <steps> <out> [no-rng|no-loader|no-optimizer]
//                                                                     fresh objects, load, steps
// <out> is a checkpoint of the final model and optimizer state.

#include <cstdlib>
#include <iostream>
#include <string>

#include "gradlab/gradlab.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;

namespace {

struct Run {
  nn::Sequential model{nullptr};
  std::unique_ptr<gl::optim::Adam> optimizer;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;

  explicit Run(uint64_t init_seed) {
    gl::manual_seed(init_seed);
    model = nn::Sequential(nn::Flatten(), nn::Linear(64, 128), nn::ReLU(), nn::Dropout(0.1),
                           nn::Linear(128, 10));
    optimizer =
        std::make_unique<gl::optim::Adam>(model->parameters(), gl::optim::AdamOptions(1e-3));
    // [N, 1, 8, 8] images, raw; normalized per sample (sample std) in front of the augmentations
    data::DigitsSplitOptions o;
    o.flatten = false;
    o.standardize = false;
    o.correction = 1;
    o.eps = 0;
    const data::DigitsSplit d = data::load_digits_split(o);
    auto ds = data::map(
        std::make_shared<data::TensorDataset>(d.train),
        tf::compose({tf::normalize(d.mean, d.std), tf::random_shift(1), tf::random_noise(0.05)}));
    loader = std::make_unique<data::DataLoader>(
        ds, data::DataLoaderOptions(64).shuffle(true).num_workers(2).seed(1234));
  }

  void train(int64_t steps) {
    const int64_t target = step + steps;
    while (step < target) {
      for (data::Batch& b : *loader) {
        optimizer->zero_grad();
        gl::Tensor loss = gl::nn::functional::cross_entropy(model->forward(b.data), b.target);
        loss.backward();
        optimizer->step();
        if (++step == target) break;
      }
    }
  }

  gl::io::Checkpoint checkpoint() const {
    gl::io::Checkpoint c;
    c.model = model->state_dict();
    c.optimizer = optimizer->state_dict();
    c.step = step;
    c.epoch = static_cast<int64_t>(loader->epoch());
    c.loader = loader->state();
    c.capture_rng();
    return c;
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if ((mode == "full" || mode == "first") && argc == 4) {
      Run run(7);
      run.train(std::stoll(argv[2]));
      gl::io::save_checkpoint(run.checkpoint(), argv[3]);
      return 0;
    }
    if (mode == "resume" && (argc == 5 || argc == 6)) {
      const std::string drop = argc == 6 ? argv[5] : "";
      Run run(999);  // another initialization: everything must come from the checkpoint
      gl::io::Checkpoint c = gl::io::load_checkpoint(argv[2]);
      run.model->load_state_dict(c.model);
      if (drop != "no-optimizer") run.optimizer->load_state_dict(c.optimizer);
      if (drop != "no-loader") run.loader->load_state(*c.loader);
      if (drop != "no-rng") c.restore_rng();
      run.step = c.step;
      run.train(std::stoll(argv[3]));
      gl::io::save_checkpoint(run.checkpoint(), argv[4]);
      return 0;
    }
    std::cerr << "usage: io_resume_helper full|first <steps> <out> | resume <ckpt> <steps> <out> "
                 "[no-rng|no-loader|no-optimizer]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "io_resume_helper: " << e.what() << "\n";
    return 1;
  }
}
