// doctor: no failure on the healthy digits MLP; each planted bug a failure in the right stage,
// with the later stages not run; the model and optimizer left as they were; text and JSON.

#include <nlohmann/json.hpp>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;
using ::testing::Not;

namespace {

// The healthy run's pipeline: raw images normalized with the reference statistics.
gl::Tensor prepared(const gl::Tensor& raw) { return (raw - raw_digits().mean) / raw_digits().std; }

dg::DoctorOptions with_stats() {
  dg::DoctorOptions o;
  o.input_stats = digits_stats();
  return o;
}

struct DoctorRun {
  dg::Report report;
  std::vector<double> before, after;
};

DoctorRun doctor_on(dg::Model model, double lr, const gl::Tensor& x, const gl::Tensor& y,
              const dg::DoctorOptions& o = with_stats()) {
  gl::optim::SGD opt(model.module->parameters(), gl::optim::SGDOptions(lr));
  DoctorRun r;
  r.before = flat(*model.module);
  r.report = dg::doctor(model, nn::CrossEntropyLoss(), opt, {x, y, prepared(raw_digits().test.data())}, o);
  r.after = flat(*model.module);
  return r;
}

void expect_stopped_at(const dg::Report& r, dg::Stage stage, const std::string& check) {
  ASSERT_TRUE(r.stopped_at.has_value()) << r;
  EXPECT_EQ(*r.stopped_at, stage) << r;
  const dg::Finding* f = r.find(check);
  ASSERT_NE(f, nullptr) << r;
  EXPECT_EQ(f->verdict, dg::Verdict::Fail) << r;
  EXPECT_EQ(f->stage, stage);
  // every stage before it passed, none after it ran
  for (dg::Stage s : {dg::Stage::Data, dg::Stage::Model, dg::Stage::Training}) {
    const bool ran = std::find(r.stages_run.begin(), r.stages_run.end(), s) != r.stages_run.end();
    EXPECT_EQ(ran, s <= stage) << dg::to_string(s) << "\n" << r;
    if (s < stage) {
      EXPECT_FALSE(r.has_failure(s)) << r;
    }
  }
  EXPECT_THAT(r.text(), HasSubstr("doctor: stopped at the " + dg::to_string(stage) + " stage"));
}

}  // namespace

TEST(Doctor, HealthyDigitsMlpHasNoFailure) {
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(raw_digits().train.data()), digits().train.targets());
  EXPECT_FALSE(r.report.has_failure()) << r.report;
  EXPECT_FALSE(r.report.stopped_at.has_value());
  EXPECT_EQ(r.report.stages_run.size(), 3u);
  EXPECT_EQ(r.report.findings().size(), 7u + 8u + 4u) << r.report;
  EXPECT_EQ(r.before, r.after) << "doctor leaves the model as it was";
  EXPECT_THAT(r.report.text(), HasSubstr("doctor: no failure"));
  EXPECT_EQ(r.report.verdict(), dg::Verdict::Ok) << "a warning on a healthy run is a defect:\n" << r.report;
}

TEST(Doctor, WithoutReferenceStatisticsOnTheStandardizedSplit) {
  dg::DoctorOptions o;  // num_classes from the model's output width
  const DoctorRun r = doctor_on(mlp(), 0.1, digits().train.data(), digits().train.targets(), o);
  EXPECT_FALSE(r.report.has_failure()) << r.report;
}

TEST(Doctor, LabelsShiftedByOneFailTheDataStage) {
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(raw_digits().train.data()), digits().train.targets() + 1);
  expect_stopped_at(r.report, dg::Stage::Data, "label_range");
}

TEST(Doctor, TransposedImagesFailTheDataStage) {
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(transpose_images(raw_digits().train.data())), digits().train.targets());
  expect_stopped_at(r.report, dg::Stage::Data, "input_stats");
  EXPECT_THAT(r.report.find("input_stats")->evidence, HasSubstr("images transposed"));
}

TEST(Doctor, MissingNormalizationFailsTheDataStage) {
  const DoctorRun r = doctor_on(mlp(), 0.1, raw_digits().train.data(), digits().train.targets());
  expect_stopped_at(r.report, dg::Stage::Data, "input_stats");
  EXPECT_THAT(r.report.find("input_stats")->evidence, HasSubstr("normalization missing"));
}

TEST(Doctor, ALayerLeftOutFailsTheModelStage) {
  const DoctorRun r = doctor_on(LayerLeftOut(), 0.1, prepared(raw_digits().train.data()), digits().train.targets());
  expect_stopped_at(r.report, dg::Stage::Model, "gradient_flow");
}

TEST(Doctor, SoftmaxBeforeCrossEntropyFailsTheModelStage) {
  gl::manual_seed(1);
  nn::Sequential net(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10), nn::Softmax(1));
  const DoctorRun r = doctor_on(net, 0.1, prepared(raw_digits().train.data()), digits().train.targets());
  expect_stopped_at(r.report, dg::Stage::Model, "loss_pairing");
}

TEST(Doctor, AWrongLRFailsTheTrainingStage) {
  const DoctorRun big = doctor_on(mlp(), 8.0, prepared(raw_digits().train.data()), digits().train.targets());
  expect_stopped_at(big.report, dg::Stage::Training, "overfit_one_batch");
  EXPECT_THAT(big.report.find("overfit_one_batch")->hint, HasSubstr("LR is too large"));
  EXPECT_EQ(big.report.find("lr_range")->verdict, dg::Verdict::Fail) << big.report;
  EXPECT_EQ(big.before, big.after);

  const DoctorRun tiny = doctor_on(mlp(), 1e-5, prepared(raw_digits().train.data()), digits().train.targets());
  expect_stopped_at(tiny.report, dg::Stage::Training, "overfit_one_batch");
  EXPECT_THAT(tiny.report.find("overfit_one_batch")->hint, HasSubstr("LR is too small"));
}

TEST(Doctor, KeepGoingRunsEveryStage) {
  dg::DoctorOptions o = with_stats();
  o.keep_going = true;
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(raw_digits().train.data()), digits().train.targets() + 1, o);
  EXPECT_EQ(r.report.stages_run.size(), 3u);
  EXPECT_FALSE(r.report.stopped_at.has_value()) << "keep_going: doctor stopped nowhere";
  for (dg::Stage s : {dg::Stage::Data, dg::Stage::Model, dg::Stage::Training})
    EXPECT_NE(r.report.verdict(s), dg::Verdict::NotRun);
  // the labels the loss rejects make the model checks fail with the loss's own error ...
  const dg::Finding* model = r.report.find("model");
  ASSERT_NE(model, nullptr) << r.report;
  EXPECT_THAT(model->evidence, HasSubstr("the check could not run: cross_entropy: target out of range"));
  // ... and every later finding that is not ok names the data failure instead of its own hint
  // (no knock-on blame of the LR or the model)
  for (const dg::Finding& f : r.report.findings()) {
    if (f.stage == dg::Stage::Data || f.ok()) continue;
    EXPECT_EQ(f.deferred_to, "data/label_range") << f;
    EXPECT_THAT(f.hint, HasSubstr("fix data/label_range first")) << f;
    EXPECT_THAT(f.hint, Not(HasSubstr("LR"))) << f;
  }
  EXPECT_THAT(r.report.json(), HasSubstr("\"deferred_to\": \"data/label_range\""));
}

TEST(Doctor, AStageThatDidNotRunIsNotRunAndTheJsonSaysSo) {
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(raw_digits().train.data()), digits().train.targets() + 1);
  ASSERT_TRUE(r.report.stopped_at.has_value());
  EXPECT_EQ(*r.report.stopped_at, dg::Stage::Data);
  EXPECT_EQ(r.report.verdict(dg::Stage::Data), dg::Verdict::Fail);
  EXPECT_EQ(r.report.verdict(dg::Stage::Model), dg::Verdict::NotRun);
  EXPECT_EQ(r.report.verdict(dg::Stage::Training), dg::Verdict::NotRun);
  const std::string j = r.report.json(-1);
  EXPECT_THAT(j, HasSubstr("\"schema\":\"gradlab.diagnose.report/1\""));
  EXPECT_THAT(j, HasSubstr("\"stages\":{\"data\":\"fail\",\"model\":\"not_run\",\"training\":\"not_run\"}"));
  EXPECT_THAT(j, HasSubstr("\"stopped_at\":\"data\""));
}

TEST(Doctor, ForgottenShuffleFailsTheDataStage) {
  const gl::data::TensorDataset sorted = sorted_by_label(digits().train.data(), digits().train.targets());
  const gl::Tensor xs = sorted.data(), ys = sorted.targets();
  gl::data::DataLoader loader(gl::data::TensorDataset(xs, ys), gl::data::DataLoaderOptions(64));
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  dg::DoctorData d{xs, ys};
  d.loader = &loader;
  const dg::Report r = dg::doctor(net, nn::CrossEntropyLoss(), opt, d);
  expect_stopped_at(r, dg::Stage::Data, "loader_order");
}

TEST(Doctor, TakesAConstLoaderOrATemporary) {
  const gl::data::TensorDataset sorted = sorted_by_label(digits().train.data(), digits().train.targets());
  const gl::Tensor xs = sorted.data(), ys = sorted.targets();
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  // a temporary loader, built in the call
  const dg::Report tmp = dg::doctor(
      net, nn::CrossEntropyLoss(), opt,
      {.inputs = xs, .targets = ys, .loader = gl::data::DataLoader(sorted, gl::data::DataLoaderOptions(64))});
  expect_stopped_at(tmp, dg::Stage::Data, "loader_order");
  // a const loader, by reference or by pointer; it stays where it stood
  const gl::data::DataLoader loader(sorted, gl::data::DataLoaderOptions(64).seed(4));
  expect_stopped_at(dg::doctor(net, nn::CrossEntropyLoss(), opt, {.inputs = xs, .targets = ys, .loader = loader}),
                    dg::Stage::Data, "loader_order");
  expect_stopped_at(dg::doctor(net, nn::CrossEntropyLoss(), opt, {.inputs = xs, .targets = ys, .loader = &loader}),
                    dg::Stage::Data, "loader_order");
  EXPECT_EQ(loader.state(), (gl::data::LoaderState{4, 0, 0}));
}

TEST(Doctor, LoaderSpeedInTheTrainingStage) {
  const gl::Tensor x = prepared(raw_digits().train.data()), y = digits().train.targets();
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const std::vector<double> before = flat(*net);
  // a healthy in-memory loader: one more ok finding
  const gl::data::DataLoader fast(gl::data::TensorDataset(x, y), gl::data::DataLoaderOptions(64).shuffle(true).seed(1));
  const dg::Report ok = dg::doctor(net, nn::CrossEntropyLoss(), opt, {.inputs = x, .targets = y, .loader = &fast},
                                   with_stats());
  EXPECT_EQ(ok.verdict(), dg::Verdict::Ok) << ok;
  const dg::Finding* f = ok.find("loader_speed");
  ASSERT_NE(f, nullptr) << ok;
  EXPECT_EQ(f->stage, dg::Stage::Training);
  EXPECT_EQ(ok.findings(dg::Stage::Training).size(), 5u) << ok;
  // a loader whose get() sleeps: a warning of the training stage, not a failure
  dg::DoctorOptions o;
  o.loader_speed.batches = 3;
  // (batches of 8: the data stage's loader_order reads 16 of them too)
  const gl::data::DataLoader slow(SlowDigits(2), gl::data::DataLoaderOptions(8).num_workers(1).seed(1));
  const dg::Report warn = dg::doctor(net, nn::CrossEntropyLoss(), opt, {.inputs = digits().train.data(), .targets = y,
                                                                         .loader = &slow}, o);
  EXPECT_FALSE(warn.has_failure()) << warn;
  const dg::Finding* w = warn.find("loader_speed");
  ASSERT_NE(w, nullptr) << warn;
  EXPECT_EQ(w->verdict, dg::Verdict::Warn) << *w;
  EXPECT_THAT(w->hint, HasSubstr("raise num_workers (now 1)"));
  EXPECT_EQ(flat(*net), before) << "doctor leaves the model as it was";
}

TEST(Doctor, ConflictingDuplicatesFailTheDataStage) {
  const gl::Tensor x = prepared(raw_digits().train.data()), y = digits().train.targets();
  // 40 rows appended again with other labels
  std::vector<int64_t> wrong = y.narrow(0, 0, 40).contiguous().to_vector<int64_t>();
  for (int64_t& c : wrong) c = (c + 1) % 10;
  const gl::Tensor x2 = gl::cat({x, x.narrow(0, 0, 40)}, 0), y2 = gl::cat({y, gl::from_vector(wrong, {40})}, 0);
  const DoctorRun r = doctor_on(mlp(), 0.1, x2, y2);
  expect_stopped_at(r.report, dg::Stage::Data, "duplicates");
  EXPECT_THAT(r.report.find("duplicates")->evidence, HasSubstr("40 of them have another target"));
}

TEST(Doctor, VanishingGradientsFailTheModelStage) {
  gl::manual_seed(3);
  nn::Sequential deep;
  for (int i = 0; i < 10; ++i) {
    deep->push_back(nn::Linear(64, i == 9 ? 10 : 64));
    if (i < 9) deep->push_back(nn::Sigmoid());
  }
  {
    gl::NoGradGuard no_grad;
    for (auto& [name, p] : deep->named_parameters())
      if (name.find("weight") != std::string::npos) nn::init::normal_(p, 0.0, 0.01);
  }
  const DoctorRun r = doctor_on(deep, 0.1, prepared(raw_digits().train.data()), digits().train.targets());
  expect_stopped_at(r.report, dg::Stage::Model, "layer_gradients");
  EXPECT_THAT(r.report.find("layer_gradients")->evidence, HasSubstr("vanishing gradients"));
}

TEST(Doctor, ASigmoidOutputOnLargeRegressionTargetsFailsTheModelStage) {
  const gl::Tensor x = prepared(raw_digits().train.data());
  const gl::Tensor y = digits().train.targets().to(gl::kFloat32).reshape({-1, 1}) * 5.0 + 5.0;  // 5 .. 50
  gl::manual_seed(2);
  nn::Sequential reg(nn::Linear(64, 32), nn::ReLU(), nn::Linear(32, 1), nn::Sigmoid());
  gl::optim::SGD opt(reg->parameters(), gl::optim::SGDOptions(0.01));
  const dg::Report r = dg::doctor(reg, nn::MSELoss(), opt, {.inputs = x, .targets = y}, with_stats());
  expect_stopped_at(r, dg::Stage::Model, "loss_floor");
  EXPECT_THAT(r.find("loss_floor")->evidence, HasSubstr("targets span [5, 50]: MSE cannot fall below"));
}

TEST(Doctor, JsonForTools) {
  const DoctorRun r = doctor_on(mlp(), 0.1, prepared(raw_digits().train.data()), digits().train.targets() + 1);
  const nlohmann::json j = nlohmann::json::parse(r.report.json());
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["stopped_at"], "data");
  EXPECT_EQ(j["stages_run"], nlohmann::json::array({"data"}));
  bool found = false;
  for (const auto& f : j["findings"]) {
    if (f["check"] != "label_range") continue;
    found = true;
    EXPECT_EQ(f["stage"], "data");
    EXPECT_EQ(f["verdict"], "fail");
    EXPECT_EQ(f["metrics"]["max"], 10.0);
    EXPECT_THAT(f["hint"].get<std::string>(), HasSubstr("shifted by one"));
  }
  EXPECT_TRUE(found);
  // an infinite metric (the imbalance ratio with a missing class) is written as null
  for (const auto& f : j["findings"])
    if (f["check"] == "label_balance") {
      EXPECT_TRUE(f["metrics"]["imbalance_ratio"].is_null());
    }
}

TEST(Doctor, BadInputIsAClearError) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  EXPECT_THROW(dg::doctor(net, nn::CrossEntropyLoss(), opt, {xb(), yb(10)}), gl::ShapeError);
  EXPECT_THROW(dg::doctor(net, nn::CrossEntropyLoss(), opt, {}), gl::ShapeError);
  // held-out targets need held-out inputs with as many rows
  EXPECT_THROW(dg::doctor(net, nn::CrossEntropyLoss(), opt,
                          {.inputs = xb(), .targets = yb(xb().size(0)), .holdout_targets = yb(4)}),
               gl::ShapeError);
}

TEST(Doctor, HeldOutTargetsAreCheckedForTheirLabelRange) {
  nn::Sequential net = mlp();
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.1));
  const gl::Tensor xt = prepared(raw_digits().test.data());
  dg::DoctorOptions o = with_stats();
  const dg::Report bad = dg::doctor(net, nn::CrossEntropyLoss(), opt,
                                    {.inputs = prepared(raw_digits().train.data()),
                                     .targets = digits().train.targets(),
                                     .holdout_inputs = xt,
                                     .holdout_targets = digits().test.targets() + 1},
                                    o);
  expect_stopped_at(bad, dg::Stage::Data, "holdout_label_range");
  EXPECT_THAT(bad.find("holdout_label_range")->evidence, HasSubstr("held-out split: "));
  const dg::Report good = dg::doctor(net, nn::CrossEntropyLoss(), opt,
                                     {.inputs = prepared(raw_digits().train.data()),
                                      .targets = digits().train.targets(),
                                      .holdout_inputs = xt,
                                      .holdout_targets = digits().test.targets()},
                                     o);
  ASSERT_NE(good.find("holdout_label_range"), nullptr);
  EXPECT_TRUE(good.find("holdout_label_range")->ok()) << good;
}

TEST(Doctor, RegressionTargetsAreCheckedAsTargets) {
  // an MSE regression (float targets [N, 1]) with one Inf target: one data/finite finding that
  // names the targets, not the inputs
  gl::manual_seed(4);
  nn::Sequential net(nn::Linear(64, 16), nn::ReLU(), nn::Linear(16, 1));
  gl::optim::SGD opt(net->parameters(), gl::optim::SGDOptions(0.05));
  gl::Tensor y = gl::mean(digits().train.data(), {1}).reshape({-1, 1}).clone();
  {
    gl::NoGradGuard no_grad;
    y.select(0, 3).fill_(INFINITY);
  }
  const dg::Report r = dg::doctor(net, nn::MSELoss(), opt, {digits().train.data(), y});
  expect_stopped_at(r, dg::Stage::Data, "finite");
  int finite = 0;
  for (const dg::Finding& f : r.findings()) finite += f.check == "finite";
  EXPECT_EQ(finite, 1) << r;
  EXPECT_THAT(r.find("finite")->evidence, HasSubstr("1 of 1437 targets is not finite, the first targets[3, 0] = inf"));
}
