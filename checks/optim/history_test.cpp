// train::History and StepRecord: printing, per-epoch summaries, CSV.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gradlab/train/history.hpp>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

TEST(History, RecordsSummariesAndCsv) {
  train::History h;
  EXPECT_TRUE(h.empty());
  h.add({0, 0, 2.0, 1.5, 0.1});
  h.add({0, 1, 1.0, 3.0, 0.1});
  h.add({1, 2, 0.5, 0.25, 0.05});
  EXPECT_EQ(h.size(), 3u);
  EXPECT_DOUBLE_EQ(h.mean_loss(0), 1.5);
  EXPECT_DOUBLE_EQ(h.mean_loss(1), 0.5);
  EXPECT_TRUE(std::isnan(h.mean_loss(7)));
  EXPECT_DOUBLE_EQ(h.max_grad_norm(), 3.0);
  EXPECT_DOUBLE_EQ(h.max_grad_norm(1), 0.25);
  EXPECT_EQ(h.back().step, 2);
  std::ostringstream os;
  os << h.records()[0];
  EXPECT_EQ(os.str(), "epoch 0  step 0  loss 2.0000  grad_norm 1.500  lr 0.1");
  const std::string csv = h.to_csv();
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "epoch,step,loss,grad_norm,lr");
  EXPECT_NE(csv.find("\n1,2,0.5,0.25,0.050000000000000003\n"), std::string::npos) << csv;
  const auto path = std::filesystem::temp_directory_path() / "gradlab_history_test.csv";
  h.write_csv(path.string());
  std::ifstream f(path);
  std::stringstream back;
  back << f.rdbuf();
  EXPECT_EQ(back.str(), csv);
  std::filesystem::remove(path);
  EXPECT_THROW(h.write_csv("/nonexistent-dir/x.csv"), IOError);
  EXPECT_THROW(train::History().back(), ValueError);
}

}  // namespace
}  // namespace gradlab
