// Monitor and run records: History with seed / config / commit (CSV header and JSON sidecar),
// the event file, the grad-norm watch (fires on a planted spike, quiet on a healthy run) and
// the stop on a non-finite loss.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "train/event_decode.hpp"
#include "train/train_test_util.hpp"

namespace gradlab {
namespace {

namespace fs = std::filesystem;
using testing_train::fresh_dir;
using testing_train::slurp;

TEST(RunInfo, GitCommitIsAHashOrUnknown) {
  const std::string c = train::git_commit();
  EXPECT_TRUE(std::regex_match(c, std::regex("[0-9a-f]{7,40}|unknown"))) << c;
  EXPECT_EQ(train::HParam(0.05).str(), "0.05");
  EXPECT_EQ(train::HParam(64).str(), "64");
  EXPECT_EQ(train::HParam(0.1 + 0.2).str(), "0.30000000000000004");
  EXPECT_EQ(train::HParam("sgd").str(), "sgd");
  EXPECT_EQ(train::HParam(true).str(), "true");
}

TEST(History, RunInfoInTheCsvHeaderAndAJsonSidecar) {
  const fs::path dir = fresh_dir("history");
  train::History h;
  h.set_run_info(train::RunInfo().seed(42).config({{"lr", 0.05}, {"opt", "sgd"}}).commit("abc123"));
  h.add({0, 0, 2.0, 1.5, 0.05});
  const std::string csv = h.to_csv();
  EXPECT_EQ(csv.substr(0, csv.find("epoch,")),
            "# seed: 42\n# git_commit: abc123\n# config: {\"lr\":0.05,\"opt\":\"sgd\"}\n");
  EXPECT_NE(csv.find("epoch,step,loss,grad_norm,lr\n0,0,2,1.5,0.050000000000000003\n"),
            std::string::npos);
  h.write_csv((dir / "run.csv").string());
  EXPECT_EQ(slurp(dir / "run.csv"), csv);
  const auto j = nlohmann::json::parse(slurp(dir / "run.json"));
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["git_commit"], "abc123");
  EXPECT_EQ(j["config"]["lr"], 0.05);
  EXPECT_EQ(j["config"]["opt"], "sgd");
  EXPECT_EQ(j["steps"], 1);
  EXPECT_EQ(j["csv"], "run.csv");
  // no temporary is left beside the files
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
  fs::remove_all(dir);
}

// A run of `n` steps with loss 1/(s+1) and |grad| 1, except `spike` at step spike_at.
void feed(train::Monitor& m, int n, int spike_at = -1, double spike = 1.0) {
  for (int s = 0; s < n; ++s)
    m.step({0, s, 1.0 / (s + 1), s == spike_at ? spike : 1.0 + 0.01 * s, 0.1});
}

TEST(Monitor, WritesHistoryEventsAndTerminalAtOnce) {
  const fs::path dir = fresh_dir("all");
  std::ostringstream term;
  {
    train::Monitor m(train::RunInfo().seed(7).config({{"lr", 0.1}}),
                     train::MonitorOptions()
                         .log_dir((dir / "tb").string())
                         .csv_path((dir / "run.csv").string())
                         .total_steps(20)
                         .progress_options(train::ProgressOptions().tty(false)),
                     term);
    feed(m, 20);
    m.add_scalar("loss/validation", 0.25, 19);
    EXPECT_FALSE(m.watch_fired_at().has_value());  // healthy: the watch stays quiet
    EXPECT_EQ(m.history().size(), 20u);
    m.close({{"final_loss", 0.05}});
  }
  // terminal: plain lines, the last at 20/20
  EXPECT_NE(term.str().find("train 20/20 (100%)  loss 0.0500"), std::string::npos) << term.str();
  EXPECT_EQ(term.str().find("grad-norm watch"), std::string::npos);
  // CSV + JSON
  const std::string csv = slurp(dir / "run.csv");
  EXPECT_EQ(csv.rfind("# seed: 7\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n0,19,0.050000000000000003,"), std::string::npos) << csv;
  EXPECT_TRUE(fs::exists(dir / "run.json"));
  // the event file: version, the run text, 3 scalars per step, the validation loss
  fs::path file;
  for (const auto& e : fs::directory_iterator(dir / "tb"))
    if (e.is_regular_file()) file = e.path();
  const auto scan = train::read_tfrecords(file.string());
  ASSERT_EQ(scan.records.size(), 1u + 1u + 3u * 20u + 1u);
  const auto loss19 = testing_train::decode_scalar_event(scan.records[2 + 3 * 19]);
  EXPECT_EQ(loss19.tag, "loss");
  EXPECT_EQ(loss19.step, 19);
  EXPECT_EQ(loss19.value, 0.05f);
  EXPECT_TRUE(fs::is_directory(dir / "tb" / "hparams"));  // close(): hparams + final metrics
  fs::remove_all(dir);
}

TEST(Monitor, GradNormWatchFiresOnAPlantedSpike) {
  std::ostringstream term;
  train::Monitor m({}, train::MonitorOptions().progress(false), term);
  feed(m, 12, 8, 25.0);  // baseline max(1, 1.01, 1.02) = 1.02; 25 > 10.2
  ASSERT_TRUE(m.watch_fired_at().has_value());
  EXPECT_EQ(*m.watch_fired_at(), 8);
  EXPECT_NE(term.str().find("grad-norm watch: |grad| 25 > 10 x 1.02"), std::string::npos)
      << term.str();
  // just under the threshold: quiet
  std::ostringstream quiet;
  train::Monitor q({}, train::MonitorOptions().progress(false), quiet);
  feed(q, 12, 8, 10.1);
  EXPECT_FALSE(q.watch_fired_at().has_value());
  // stop_on_watch throws
  train::Monitor s({}, train::MonitorOptions().progress(false).stop_on_watch(true), quiet);
  EXPECT_THROW(feed(s, 12, 5, 1e3), train::GradNormWatchError);
}

TEST(Monitor, StopsOnANonFiniteLossAndKeepsTheRecords) {
  const fs::path dir = fresh_dir("nan");
  std::ostringstream term;
  train::Monitor m(train::RunInfo().seed(1),
                   train::MonitorOptions()
                       .csv_path((dir / "run.csv").string())
                       .total_steps(10)
                       .progress_options(train::ProgressOptions().tty(false)),
                   term);
  m.step({0, 0, 1.0, 1.0, 0.1});
  m.step({0, 1, 0.9, 1.0, 0.1});
  try {
    m.step({0, 2, std::nan(""), 1.0, 0.1});
    FAIL() << "no exception";
  } catch (const train::NonFiniteLossError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Monitor::step: the loss is not finite; expected a finite loss, got nan at "
                  "step 2 (epoch 0)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("hint:"), std::string::npos);
  }
  const std::string csv = slurp(dir / "run.csv");
  EXPECT_NE(csv.find("\n0,2,nan,"), std::string::npos) << csv;  // the bad step is recorded
  EXPECT_NE(term.str().find("stopped: Monitor::step: the loss is not finite"), std::string::npos)
      << term.str();
  EXPECT_THROW(m.step({0, 3, 1.0, 1.0, 0.1}), ValueError);  // closed
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradlab

namespace gradlab {
namespace {

// Lesson 07, section 5: the digits MLP (seed 4) with SGD lr 3.0, momentum 0.9, batches of 64 in
// order. The lesson's hand-written watch fires at step 8 with baseline 1.8580; Monitor's watch is
// the same rule and must fire at the same step, with the same baseline.
TEST(Monitor, GradNormWatchMatchesLesson07) {
  const data::DigitsSplit d = data::load_digits_split();
  manual_seed(4);
  nn::Sequential m(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::SGD o(m->parameters(), optim::SGDOptions(3.0).momentum(0.9));
  nn::CrossEntropyLoss criterion;
  std::ostringstream term;
  train::Monitor mon({}, train::MonitorOptions().progress(false), term);
  data::DataLoader loader(std::make_shared<data::TensorDataset>(d.train.data(), d.train.targets()),
                          data::DataLoaderOptions(64));
  int64_t s = 0;
  for (data::Batch& b : loader) {
    if (s >= 20 || mon.watch_fired_at()) break;
    o.zero_grad();
    Tensor l = criterion(m(b.data), b.target);
    l.backward();
    mon.step({0, s, l.item<double>(), nn::utils::grad_norm(m->parameters()), 3.0});
    o.step();
    ++s;
  }
  ASSERT_TRUE(mon.watch_fired_at().has_value()) << term.str();
  EXPECT_EQ(*mon.watch_fired_at(), 8);
  EXPECT_NEAR(mon.watch_baseline(), 1.8580, 5e-5);
  EXPECT_TRUE(std::isfinite(mon.history().back().loss));
}

}  // namespace
}  // namespace gradlab
