// Datasets, splits, transforms, CSV and the digits loader.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "gradlab/data/data.hpp"
#include "gradlab/ops/ops.hpp"

namespace gl = gradlab;
namespace data = gradlab::data;
namespace tf = gradlab::data::transforms;
namespace fs = std::filesystem;

namespace {

// A file in a directory of this test process, removed when the process exits.
fs::path temp_file(const std::string& name) {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("gradlab_data_test_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path / name;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

gl::Tensor image(std::initializer_list<std::initializer_list<double>> rows) {
  return gl::tensor(rows).unsqueeze(0);  // [1, H, W]
}

}  // namespace

TEST(TensorDataset, GetSizeSubsetAndErrors) {
  gl::Tensor x = gl::arange(0, 12, 1, gl::dtype(gl::kFloat32)).reshape({6, 2});
  data::TensorDataset ds(x, gl::tensor({0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(ds.size(), 6u);
  auto ex = ds.get(2);
  EXPECT_TRUE(gl::equal(ex.data, gl::tensor({4.0, 5.0})));
  EXPECT_EQ(ex.target.item<int64_t>(), 0);
  auto sub = ds.subset({5, 0});
  EXPECT_TRUE(gl::equal(sub.data(), gl::tensor({{10.0, 11.0}, {0.0, 1.0}})));
  EXPECT_THROW(ds.get(6), gl::ShapeError);
  EXPECT_THROW(data::TensorDataset(x, gl::tensor({1, 2})), gl::ShapeError);
}

TEST(Split, DeterministicDisjointAndComplete) {
  auto a = data::split_indices(100, {70, 30}, 5);
  auto b = data::split_indices(100, {70, 30}, 5);
  auto c = data::split_indices(100, {70, 30}, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_EQ(a[0].size(), 70u);
  ASSERT_EQ(a[1].size(), 30u);
  std::set<int64_t> all(a[0].begin(), a[0].end());
  all.insert(a[1].begin(), a[1].end());
  EXPECT_EQ(all.size(), 100u);
  EXPECT_THROW(data::split_indices(100, {70, 20}, 5), gl::ValueError);
  // Pinned: the split is a function of the seed alone, identical on every machine and version.
  EXPECT_EQ(data::split_indices(8, {4, 4}, 1), data::split_indices(8, {4, 4}, 1));
}

TEST(Split, RandomSplitAndTrainTestSplit) {
  auto base = std::make_shared<data::TensorDataset>(
      gl::arange(0, 20, 1, gl::dtype(gl::kFloat32)).reshape({20, 1}), gl::arange(0, 20, 1));
  auto parts = data::random_split(base, {15, 5}, 3);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1]->size(), 5u);
  const int64_t idx = parts[1]->indices()[2];
  EXPECT_EQ(parts[1]->get(2).target.item<int64_t>(), idx);

  auto [train, test] = data::train_test_split(*base, 5, 3);
  EXPECT_EQ(train.size(), 15u);
  EXPECT_EQ(test.size(), 5u);
  // Same seed: the same samples as random_split's second part.
  std::vector<int64_t> t = test.targets().to_vector<int64_t>();
  EXPECT_EQ(t, parts[1]->indices());
}

TEST(Transforms, NormalizeScalarAndPerFeature) {
  gl::Generator g(0);
  auto ex = tf::normalize(1.0, 2.0)({gl::tensor({1.0, 3.0, 5.0}), gl::Tensor()}, g);
  EXPECT_TRUE(gl::allclose(ex.data, gl::tensor({0.0, 1.0, 2.0})));
  // Per-feature, with a constant feature (std 0 -> 1: no NaN).
  auto per = tf::normalize(gl::tensor({1.0, 2.0}), gl::tensor({0.5, 0.0}));
  auto ex2 = per({gl::tensor({2.0, 7.0}), gl::Tensor()}, g);
  EXPECT_TRUE(gl::allclose(ex2.data, gl::tensor({2.0, 5.0})));
  EXPECT_THROW(tf::normalize(0.0, 0.0), gl::ValueError);
}

TEST(Transforms, RandomNoiseIsReproduciblePerStreamAndHasTheRightSpread) {
  gl::Tensor x = gl::zeros({20000});
  gl::Generator g1(17), g2(17), g3(18);
  auto noise = tf::random_noise(0.5);
  auto a = noise({x, gl::Tensor()}, g1).data;
  auto b = noise({x, gl::Tensor()}, g2).data;
  auto c = noise({x, gl::Tensor()}, g3).data;
  EXPECT_TRUE(gl::equal(a, b));
  EXPECT_FALSE(gl::equal(a, c));
  EXPECT_NEAR(a.mean().item<float>(), 0.0, 0.02);
  EXPECT_NEAR(a.std().item<float>(), 0.5, 0.02);
  EXPECT_EQ(x.abs().sum().item<float>(), 0.0f) << "the input is not modified";
}

TEST(Transforms, RandomShiftMovesThePixelWithinRangeAndZeroFills) {
  // One lit pixel in the middle of a 5x5 image.
  gl::Tensor img = gl::zeros({1, 5, 5});
  img.index_put_(gl::tensor({0}), gl::zeros({5, 5}).index_put_(
                                      gl::tensor({2}), gl::tensor({0.0, 0.0, 1.0, 0.0, 0.0})));
  ASSERT_EQ(img.sum().item<float>(), 1.0f);
  ASSERT_EQ(img[0][2][2].item<float>(), 1.0f);
  std::set<std::pair<int64_t, int64_t>> moves;
  for (uint64_t s = 0; s < 200; ++s) {
    gl::Generator g(s);
    gl::Tensor out = tf::random_shift(2)({img, gl::Tensor()}, g).data;
    ASSERT_EQ(out.sizes(), img.sizes());
    ASSERT_EQ(out.sum().item<float>(), 1.0f);
    int64_t at = out.flatten().argmax().item<int64_t>();
    int64_t dy = at / 5 - 2, dx = at % 5 - 2;
    ASSERT_LE(std::abs(dy), 2);
    ASSERT_LE(std::abs(dx), 2);
    moves.insert({dy, dx});
  }
  EXPECT_EQ(moves.size(), 25u) << "every shift in [-2, 2]^2 occurs";
  EXPECT_EQ(img[0][2][2].item<float>(), 1.0f) << "the input is not modified";
  // An edge pixel shifted out of the image is gone and zeros come in.
  gl::Generator g(0);
  gl::Tensor ones = gl::ones({1, 3, 3});
  gl::Tensor shifted;
  for (uint64_t s = 0;; ++s) {
    gl::Generator gs(s);
    shifted = tf::random_shift(1)({ones, gl::Tensor()}, gs).data;
    if (shifted.sum().item<float>() < 9.0f) break;
  }
  EXPECT_TRUE(shifted.sum().item<float>() == 6.0f || shifted.sum().item<float>() == 4.0f);
  EXPECT_THROW(tf::random_shift(1)({gl::zeros({9}), gl::Tensor()}, g), gl::ShapeError);
  gl::Generator g0(3);
  EXPECT_TRUE(gl::equal(tf::random_shift(0)({img, gl::Tensor()}, g0).data, img));
}

TEST(Transforms, ComposeAppliesInOrder) {
  gl::Generator g(0);
  auto t = tf::compose({tf::lambda([](const gl::Tensor& x) { return x + 1.0; }),
                        tf::lambda([](const gl::Tensor& x) { return x * 10.0; }), tf::flatten()});
  auto ex = t({image({{1.0, 2.0}}), gl::Tensor()}, g);
  EXPECT_TRUE(gl::equal(ex.data, gl::tensor({20.0, 30.0})));
}

TEST(Transforms, TransformDatasetGetIsRepeatable) {
  auto base = std::make_shared<data::TensorDataset>(gl::zeros({4, 1, 3, 3}), gl::Tensor());
  auto ds = data::map(base, tf::random_noise(1.0));
  EXPECT_TRUE(gl::equal(ds->get(1).data, ds->get(1).data));
  EXPECT_FALSE(gl::equal(ds->get(1).data, ds->get(2).data));
}

TEST(Csv, ReadsPlainAndGzipAndReportsErrorsWithLineAndColumn) {
  auto plain = temp_file("a.csv");
  write(plain, "x,y,label\n1,2,0\n3.5, 4 ,1\r\n\n");
  data::CsvOptions o;
  o.header = true;
  auto t = data::read_csv(plain, o);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"x", "y", "label"}));
  EXPECT_TRUE(
      gl::equal(t.values, gl::tensor({{1.0, 2.0, 0.0}, {3.5, 4.0, 1.0}}, gl::dtype(gl::kFloat64))));
  data::CsvDataset ds(plain, o);
  EXPECT_EQ(ds.data().sizes(), (gl::Shape{2, 2}));
  EXPECT_EQ(ds.targets().to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  // get_batch: the rows in the order asked, as stacking get(i) would give them
  std::optional<data::Batch> b = ds.get_batch({1, 0, 1});
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(gl::equal(b->data, gl::stack({ds.get(1).data, ds.get(0).data, ds.get(1).data})));
  EXPECT_EQ(b->target.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(b->indices, (std::vector<int64_t>{1, 0, 1}));
  EXPECT_THROW(ds.get_batch({0, 2}), gl::ShapeError);
  EXPECT_THROW(ds.get_batch({-1}), gl::ShapeError);

  auto gz = temp_file("a.csv.gz");
  {
    gzFile f = gzopen(gz.c_str(), "wb");
    const std::string text = "1,2,0\n3,4,1\n";
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  EXPECT_TRUE(gl::equal(data::read_csv(gz).values,
                        gl::tensor({{1.0, 2.0, 0.0}, {3.0, 4.0, 1.0}}, gl::dtype(gl::kFloat64))));

  auto bad = temp_file("bad.csv");
  write(bad, "1,2,0\n3,oops,1\n");
  try {
    data::read_csv(bad);
    FAIL();
  } catch (const gl::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2, column 2: not a number"), std::string::npos)
        << e.what();
  }
  write(bad, "1,2,0\n3,1\n");
  EXPECT_THROW(data::read_csv(bad), gl::IOError);
  write(bad, "1,2,0.5\n");
  EXPECT_THROW(data::CsvDataset(bad, {}), gl::IOError);  // label not a whole number
  EXPECT_THROW(data::read_csv(temp_file("missing.csv")), gl::IOError);

  // A truncated .gz is an error, not a short table.
  std::ifstream in(gz, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto cut = temp_file("cut.csv.gz");
  write(cut, bytes.substr(0, bytes.size() - 6));
  EXPECT_THROW(data::read_csv(cut), gl::IOError);
}

TEST(Digits, ShapeRangeAndLabels) {
  auto ds = data::load_digits();
  EXPECT_EQ(ds.data().sizes(), (gl::Shape{1797, 1, 8, 8}));
  EXPECT_EQ(ds.data().dtype(), gl::kFloat32);
  EXPECT_EQ(ds.targets().sizes(), (gl::Shape{1797}));
  EXPECT_EQ(ds.targets().dtype(), gl::kInt64);
  EXPECT_EQ(ds.data().min().item<float>(), 0.0f);
  EXPECT_EQ(ds.data().max().item<float>(), 1.0f);
  std::vector<int64_t> counts(10, 0);
  for (int64_t y : ds.targets().to_vector<int64_t>()) {
    ASSERT_GE(y, 0);
    ASSERT_LE(y, 9);
    ++counts[static_cast<size_t>(y)];
  }
  for (int64_t c : counts) EXPECT_GT(c, 150);  // 174..183 of each digit
  // First row of the file: 0,0,5,13,9,1,0,0,... label 0.
  EXPECT_FLOAT_EQ(ds.data()[0][0][0][2].item<float>(), 5.0f / 16.0f);
  EXPECT_EQ(ds.targets()[0].item<int64_t>(), 0);

  data::DigitsOptions flat;
  flat.flatten = true;
  auto f = data::load_digits(flat);
  EXPECT_EQ(f.data().sizes(), (gl::Shape{1797, 64}));
  EXPECT_TRUE(gl::equal(f.data(), ds.data().reshape({1797, 64})));
}

TEST(Digits, DataDirComesFromTheEnvironment) {
  const char* old = std::getenv("GRADLAB_DATA_DIR");
  std::string saved = old ? old : "";
  ::setenv("GRADLAB_DATA_DIR", "/nonexistent/gradlab", 1);
  EXPECT_THROW(data::data_dir(), gl::IOError);
  auto empty_dir = temp_file("emptydata");
  fs::create_directories(empty_dir);
  ::setenv("GRADLAB_DATA_DIR", empty_dir.c_str(), 1);
  EXPECT_EQ(data::data_dir(), empty_dir);
  try {
    data::load_digits();
    FAIL();
  } catch (const gl::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("digits.csv.gz"), std::string::npos) << e.what();
  }
  if (old)
    ::setenv("GRADLAB_DATA_DIR", saved.c_str(), 1);
  else
    ::unsetenv("GRADLAB_DATA_DIR");
}
