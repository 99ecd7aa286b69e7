// Data checks: each catches its planted bug and stays quiet on healthy data.

#include <cmath>
#include <limits>

#include "diagnose/fixtures.hpp"

using namespace diagnose_fixtures;

namespace {

gl::Tensor with_value(gl::Tensor x, int64_t row, int64_t col, double v) {
  x = x.clone();
  gl::NoGradGuard no_grad;
  x.select(0, row).select(0, col).fill_(v);
  return x;
}

}  // namespace

TEST(DiagnoseData, FiniteNamesTheFirstBadElement) {
  const dg::Finding ok = dg::check_finite(digits().train.data(), digits().train.targets());
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_EQ(ok.stage, dg::Stage::Data);

  const gl::Tensor x = with_value(with_value(digits().train.data(), 17, 3, NAN), 40, 0,
                                  std::numeric_limits<double>::infinity());
  const dg::Finding bad = dg::check_finite(x, digits().train.targets());
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail);
  EXPECT_THAT(bad.evidence, HasSubstr("the first inputs[17, 3] = nan (row 17)"));
  EXPECT_EQ(bad.metric("nonfinite_inputs"), 2);

  const gl::Tensor y = gl::tensor({1.0, 2.0, NAN});
  const dg::Finding bad_y = dg::check_finite(gl::zeros({3, 2}), y);
  EXPECT_EQ(bad_y.verdict, dg::Verdict::Fail);
  EXPECT_THAT(bad_y.evidence, HasSubstr("targets[2]"));
}

TEST(DiagnoseData, LabelRangeCatchesLabelsShiftedByOne) {
  const dg::Finding ok = dg::check_label_range(digits().train.targets(), 10);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_EQ(ok.metric("max"), 9);

  const dg::Finding shifted = dg::check_label_range(digits().train.targets() + 1, 10);
  EXPECT_EQ(shifted.verdict, dg::Verdict::Fail);
  EXPECT_THAT(shifted.evidence, HasSubstr("labels span [1, 10]"));
  EXPECT_THAT(shifted.hint, HasSubstr("shifted by one"));
  EXPECT_EQ(shifted.metric("out_of_range"),
            gl::sum(digits().train.targets() == 9).item<int64_t>());

  const dg::Finding neg = dg::check_label_range(gl::tensor({int64_t(0), int64_t(-1), int64_t(2)}), 3);
  EXPECT_EQ(neg.verdict, dg::Verdict::Fail);
  EXPECT_THAT(neg.evidence, HasSubstr("label -1 at index 1"));
  EXPECT_EQ(dg::check_label_range(gl::tensor({0.0, 1.0}), 2).verdict, dg::Verdict::Fail) << "float labels";
  EXPECT_THROW(dg::check_label_range(digits().train.targets(), 0), gl::ValueError);
}

TEST(DiagnoseData, LabelBalanceWarnsOnMissingClassesAndImbalance) {
  const dg::Finding ok = dg::check_label_balance(digits().train.targets(), 10);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_LT(ok.metric("imbalance_ratio"), 1.2);
  EXPECT_EQ(ok.metric("count_0") + ok.metric("count_9") > 0, true);

  const dg::Finding missing = dg::check_label_balance(digits().train.targets() + 1, 11);
  EXPECT_EQ(missing.verdict, dg::Verdict::Warn) << missing;
  EXPECT_THAT(missing.evidence, HasSubstr("never seen: class 0"));

  std::vector<int64_t> y(105, 0);
  for (int i = 100; i < 105; ++i) y[static_cast<size_t>(i)] = 1;
  const dg::Finding skew = dg::check_label_balance(gl::from_vector(y, {105}), 2);
  EXPECT_EQ(skew.verdict, dg::Verdict::Warn);
  EXPECT_DOUBLE_EQ(skew.metric("imbalance_ratio"), 20.0);
}

TEST(DiagnoseData, ConstantFeatures) {
  gl::manual_seed(3);
  const gl::Tensor x = gl::randn({50, 6});
  EXPECT_EQ(dg::check_constant_features(x).verdict, dg::Verdict::Ok);

  gl::Tensor c = x.clone();
  {
    gl::NoGradGuard no_grad;
    c.select(1, 4).fill_(2.5);
  }
  // one of six (at most a quarter): information, not a warning, unless the user asks (fraction 0)
  const dg::Finding one = dg::check_constant_features(c);
  EXPECT_EQ(one.verdict, dg::Verdict::Ok);
  EXPECT_THAT(one.evidence, HasSubstr("1 of 6 features (flat index within a sample) never varies: 4 (information"));
  EXPECT_EQ(dg::check_constant_features(c, 0.0).verdict, dg::Verdict::Warn);
  {
    gl::NoGradGuard no_grad;
    c.select(1, 1).fill_(-1.0);
  }
  const dg::Finding two = dg::check_constant_features(c);  // two of six: more than a quarter
  EXPECT_EQ(two.verdict, dg::Verdict::Warn);
  EXPECT_THAT(two.evidence, HasSubstr("2 of 6 features (flat index within a sample) never vary: 1, 4"));
  EXPECT_THROW(dg::check_constant_features(c, 1.5), gl::ValueError);
  EXPECT_EQ(dg::check_constant_features(gl::ones({50, 6})).verdict, dg::Verdict::Fail);
  // the digits have always-blank pixels: 3 of the 64 never vary in the training split
  const dg::Finding digits_blank = dg::check_constant_features(digits().train.data());
  EXPECT_EQ(digits_blank.metric("constant"), 3);
  EXPECT_EQ(digits_blank.verdict, dg::Verdict::Ok) << "a healthy run must not warn: " << digits_blank;
}

TEST(DiagnoseData, InputStatsWithoutReference) {
  gl::manual_seed(4);
  const gl::Tensor x = gl::randn({200, 3, 4, 4});
  const dg::Finding ok = dg::check_input_stats(x);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;
  EXPECT_NEAR(ok.metric("std_2"), 1.0, 0.1);
  const dg::Finding raw = dg::check_input_stats(x * 50 + 120);  // 0..255 pixels
  EXPECT_EQ(raw.verdict, dg::Verdict::Warn);
  EXPECT_THAT(raw.hint, HasSubstr("normalize"));
}

TEST(DiagnoseData, InputStatsNamesTheMixUpOnDigits) {
  const dg::InputStats st = digits_stats();
  const gl::Tensor raw = raw_digits().train.data();
  const gl::Tensor normalized = (raw - st.mean) / st.std;
  const dg::Finding ok = dg::check_input_stats(normalized, st);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;

  const dg::Finding missing = dg::check_input_stats(raw, st);
  EXPECT_EQ(missing.verdict, dg::Verdict::Fail) << missing;
  EXPECT_THAT(missing.evidence, HasSubstr("fit 'normalization missing'"));

  const dg::Finding transposed = dg::check_input_stats((transpose_images(raw) - st.mean) / st.std, st);
  EXPECT_EQ(transposed.verdict, dg::Verdict::Fail) << transposed;
  EXPECT_THAT(transposed.evidence, HasSubstr("fit 'images transposed (H and W swapped)'"));

  const dg::Finding both = dg::check_input_stats(transpose_images(raw), st);
  EXPECT_EQ(both.verdict, dg::Verdict::Fail) << both;
  EXPECT_THAT(both.evidence, HasSubstr("fit 'images transposed (H and W swapped), and normalization missing'"));

  // the held-out split, prepared the same way, is no false alarm either
  EXPECT_EQ(dg::check_input_stats((raw_digits().test.data() - st.mean) / st.std, st).verdict, dg::Verdict::Ok);
}

TEST(DiagnoseData, InputStatsNamesAConstantScaleOrShift) {
  // Stating the reference statistics never makes the answer worse: inputs x 255 (a reader of bytes),
  // / 255 and + 128 are named as a constant scale or shift of the expected preparation.
  const dg::InputStats st = digits_stats();
  const gl::Tensor normalized = (raw_digits().train.data() - st.mean) / st.std;
  struct Case {
    gl::Tensor x;
    const char* name;
  };
  for (const Case& c : {Case{normalized * 255.0, "the normalized inputs scaled by 255"},
                        Case{normalized / 255.0, "the normalized inputs scaled by 0.00392"},
                        Case{normalized + 128.0, "the normalized inputs shifted by 128"}}) {
    const dg::Finding f = dg::check_input_stats(c.x, st);
    EXPECT_EQ(f.verdict, dg::Verdict::Fail) << c.name << "\n" << f;
    EXPECT_THAT(f.evidence, HasSubstr(std::string("fit '") + c.name)) << f;
    EXPECT_THAT(f.hint, HasSubstr("constant factor or offset")) << f;
  }
  // and the plain mix-ups keep their simpler names (checked above), the prepared inputs stay ok
  EXPECT_EQ(dg::check_input_stats(normalized, st).verdict, dg::Verdict::Ok);
}

TEST(DiagnoseData, InputStatsCatchesReversedChannels) {
  // Synthetic RGB images whose channels differ: means 0.2, 0.5, 0.8, stds 0.1, 0.2, 0.3.
  gl::manual_seed(5);
  const gl::Tensor mean = gl::tensor({0.2, 0.5, 0.8}), sd = gl::tensor({0.1, 0.2, 0.3});
  const gl::Tensor raw = gl::randn({300, 3, 4, 4}) * sd.reshape({3, 1, 1}) + mean.reshape({3, 1, 1});
  dg::InputStats st;
  st.mean = mean;
  st.std = sd;
  const auto norm = [&](const gl::Tensor& x) { return (x - mean.reshape({3, 1, 1})) / sd.reshape({3, 1, 1}); };
  EXPECT_EQ(dg::check_input_stats(norm(raw), st).verdict, dg::Verdict::Ok);
  const gl::Tensor bgr = gl::index_select(raw, 1, gl::tensor({int64_t(2), int64_t(1), int64_t(0)}));
  const dg::Finding f = dg::check_input_stats(norm(bgr), st);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_THAT(f.evidence, HasSubstr("fit 'channels reversed (RGB <-> BGR)'"));
  EXPECT_THROW(dg::check_input_stats(raw, dg::InputStats{.mean = gl::zeros({4}), .std = gl::ones({4})}),
               gl::ShapeError);
}

TEST(DiagnoseData, SplitLeakage) {
  const gl::Tensor train = digits().train.data(), test = digits().test.data();
  const dg::Finding ok = dg::check_split_leakage(train, test);
  EXPECT_EQ(ok.verdict, dg::Verdict::Ok) << ok;

  // ten training rows copied into the test split (2.8% of it)
  const gl::Tensor leaky = gl::cat({test.narrow(0, 0, 350), train.narrow(0, 100, 10)}, 0);
  const dg::Finding bad = dg::check_split_leakage(train, leaky);
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail);
  EXPECT_EQ(bad.metric("duplicates"), 10);
  EXPECT_THAT(bad.evidence, HasSubstr("held-out row 350 == training row 100"));
  // one row of 360 is below the 1% threshold: a warning
  const gl::Tensor one = gl::cat({test.narrow(0, 0, 359), train.narrow(0, 7, 1)}, 0);
  EXPECT_EQ(dg::check_split_leakage(train, one).verdict, dg::Verdict::Warn);
}

TEST(DiagnoseData, LoaderOrderCatchesAForgottenShuffle) {
  // The training split sorted by label, as some files come.
  const gl::data::TensorDataset sorted = sorted_by_label(digits().train.data(), digits().train.targets());
  gl::data::DataLoader plain(sorted, gl::data::DataLoaderOptions(64));
  const dg::Finding bad = dg::check_loader_order(plain, 10);
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail) << bad;
  EXPECT_LT(bad.metric("distinct_per_batch"), 2.5);
  EXPECT_GT(bad.metric("expected_distinct_per_batch"), 9.5);
  EXPECT_EQ(plain.state().position, 0u) << "the loader's position is restored";

  gl::data::DataLoader shuffled(sorted, gl::data::DataLoaderOptions(64).shuffle(true).seed(1));
  EXPECT_EQ(dg::check_loader_order(shuffled, 10).verdict, dg::Verdict::Ok);
  // the seeded split is already in random order: no shuffle needed, no false alarm
  gl::data::DataLoader split(digits().train, gl::data::DataLoaderOptions(64));
  EXPECT_EQ(dg::check_loader_order(split, 10).verdict, dg::Verdict::Ok);
}

TEST(DiagnoseData, CheckDataOnHealthyDigitsHasNoFailure) {
  const auto fs = dg::check_data(digits().train.data(), digits().train.targets(), 10, {}, digits().test.data());
  ASSERT_EQ(fs.size(), 7u);
  for (const dg::Finding& f : fs) EXPECT_NE(f.verdict, dg::Verdict::Fail) << f;
}

TEST(DiagnoseData, LoaderOrderReadsAConstLoaderWithoutMovingIt) {
  const gl::data::TensorDataset sorted = sorted_by_label(digits().train.data(), digits().train.targets());
  const gl::data::DataLoader plain(sorted, gl::data::DataLoaderOptions(64).seed(3));
  gl::manual_seed(5);
  const dg::Finding bad = dg::check_loader_order(plain, 10);
  const double after_check = gl::randn({1}).item<double>();
  gl::manual_seed(5);
  EXPECT_EQ(gl::randn({1}).item<double>(), after_check) << "the check draws nothing from default_generator";
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail) << bad;
  EXPECT_THAT(bad.evidence, HasSubstr("grouped by label"));
  EXPECT_EQ(plain.state(), (gl::data::LoaderState{3, 0, 0})) << "a const loader stays where it stood";

  // A loader in the middle of an epoch: checked from where it stands, and it continues there.
  gl::data::DataLoader shuffled(digits().train, gl::data::DataLoaderOptions(64).shuffle(true).seed(7));
  {
    auto it = shuffled.begin();  // batch 0
    ++it;                        // batch 1
  }
  const gl::data::LoaderState mid = shuffled.state();
  ASSERT_EQ(mid.position, 2u);
  const gl::data::DataLoader& view = shuffled;
  EXPECT_EQ(dg::check_loader_order(view, 10).verdict, dg::Verdict::Ok);
  EXPECT_EQ(shuffled.state(), mid);
  gl::data::DataLoader fresh(digits().train, gl::data::DataLoaderOptions(64).shuffle(true).seed(7));
  fresh.load_state(mid);
  EXPECT_EQ((*shuffled.begin()).indices, (*fresh.begin()).indices) << "the next batch is the one it would have been";
}

TEST(DiagnoseData, DuplicatesOnHealthyDigitsAreNone) {
  const dg::Finding f = dg::check_duplicates(digits().train.data(), digits().train.targets());
  EXPECT_EQ(f.verdict, dg::Verdict::Ok) << f;
  EXPECT_EQ(f.metric("duplicates"), 0);
  EXPECT_THAT(f.evidence, HasSubstr("every one of the 1437 training rows is distinct"));
}

TEST(DiagnoseData, DuplicatesFoundWithThePairNamed) {
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  // 40 rows (2.7%) appended a second time, labels and all: a join that ran twice
  const gl::Tensor x2 = gl::cat({x, x.narrow(0, 10, 40)}, 0), y2 = gl::cat({y, y.narrow(0, 10, 40)}, 0);
  const dg::Finding many = dg::check_duplicates(x2, y2);
  EXPECT_EQ(many.verdict, dg::Verdict::Warn) << many;
  EXPECT_EQ(many.metric("duplicates"), 40);
  EXPECT_EQ(many.metric("conflicting"), 0);
  EXPECT_NEAR(many.metric("fraction"), 40.0 / 1477, 1e-12);
  EXPECT_THAT(many.evidence, HasSubstr("40 of 1477 rows repeat an earlier row bit for bit"));
  EXPECT_THAT(many.evidence, HasSubstr("row 1437 == row 10"));
  EXPECT_THAT(many.hint, HasSubstr("deduplicate"));
  // two repeated rows (0.14%): information, not a warning
  const dg::Finding few = dg::check_duplicates(gl::cat({x, x.narrow(0, 3, 2)}, 0), gl::cat({y, y.narrow(0, 3, 2)}, 0));
  EXPECT_EQ(few.verdict, dg::Verdict::Ok) << few;
  EXPECT_EQ(few.metric("duplicates"), 2);
  EXPECT_THAT(few.evidence, HasSubstr("2 of 1439 rows repeat"));
  EXPECT_THAT(few.evidence, HasSubstr("information"));
  // -0 and +0 are the same value
  const gl::Tensor signed_zero = gl::from_vector(std::vector<double>{0.0, 1.0, -0.0, 1.0}, {2, 2});
  EXPECT_EQ(dg::check_duplicates(signed_zero).metric("duplicates"), 1);
}

namespace {
// (label + 1) mod 10: a wrong label for every row.
gl::Tensor next_label(const gl::Tensor& y) {
  std::vector<int64_t> v = y.contiguous().to_vector<int64_t>();
  for (int64_t& c : v) c = (c + 1) % 10;
  return gl::from_vector(v, y.sizes());
}
}  // namespace

TEST(DiagnoseData, ConflictingDuplicatesAreWorse) {
  const gl::Tensor x = digits().train.data(), y = digits().train.targets();
  // one row repeated with another label: a warning that says so
  const gl::Tensor relabel = next_label(y.narrow(0, 5, 1));
  const dg::Finding one = dg::check_duplicates(gl::cat({x, x.narrow(0, 5, 1)}, 0), gl::cat({y, relabel}, 0));
  EXPECT_EQ(one.verdict, dg::Verdict::Warn) << one;
  EXPECT_EQ(one.metric("conflicting"), 1);
  const int64_t label = y.narrow(0, 5, 1).item<int64_t>();
  EXPECT_THAT(one.evidence, HasSubstr("1 of them has another target than the row they repeat"));
  EXPECT_THAT(one.evidence, HasSubstr("row 1437 (label " + std::to_string((label + 1) % 10) + ") == row 5 (label " +
                                      std::to_string(label) + ")"));
  EXPECT_THAT(one.hint, HasSubstr("label noise"));
  // 30 rows (2%) repeated with shifted labels: a failure
  const gl::Tensor x2 = gl::cat({x, x.narrow(0, 0, 30)}, 0), y2 = gl::cat({y, next_label(y.narrow(0, 0, 30))}, 0);
  const dg::Finding bad = dg::check_duplicates(x2, y2);
  EXPECT_EQ(bad.verdict, dg::Verdict::Fail) << bad;
  EXPECT_EQ(bad.metric("conflicting"), 30);
  // the same rows without targets: plain duplicates
  EXPECT_EQ(dg::check_duplicates(x2).verdict, dg::Verdict::Warn);
}

// Every row the same input: the inputs collapsed, which is not label noise (the labels may be fine).
TEST(DiagnoseData, DuplicatesOfOneInputBlameTheInputsNotTheLabels) {
  const gl::Tensor y = digits().train.targets();
  const gl::Tensor x = gl::zeros({y.size(0), 64});
  const dg::Finding f = dg::check_duplicates(x, y);
  EXPECT_EQ(f.verdict, dg::Verdict::Fail) << f;
  EXPECT_THAT(f.evidence, HasSubstr("rows hold only 1 distinct input"));
  EXPECT_THAT(f.hint, HasSubstr("the inputs collapsed"));
  EXPECT_THAT(f.hint, ::testing::Not(HasSubstr("label noise")));
}

TEST(DiagnoseData, DuplicatesRejectBadArguments) {
  EXPECT_THROW(dg::check_duplicates(gl::Tensor()), gl::ValueError);
  EXPECT_THROW(dg::check_duplicates(gl::zeros({4, 2}), gl::zeros({3})), gl::ShapeError);
  EXPECT_THROW(dg::check_duplicates(gl::zeros({4, 2}), {}, 2.0), gl::ValueError);
}
