// LibTorch's torch::data API in gradlab: CRTP datasets, map + transforms, the samplers,
// make_data_loader (with and without workers) and the MNIST reader on IDX files written here.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "gradlab/data/data.hpp"
#include "gradlab/ops/ops.hpp"
#include "idx_files.hpp"

namespace gl = gradlab;
namespace td = gradlab::data;
namespace ds = gradlab::data::datasets;
namespace tr = gradlab::data::transforms;
namespace sm = gradlab::data::samplers;
namespace fs = std::filesystem;

namespace {

// Example i: data = [i, 2i] (float32), target = i % 3 (int64 scalar).
struct Pairs : ds::Dataset<Pairs> {
  explicit Pairs(size_t n) : n_(n) {}
  td::Example<> get(size_t index) override {
    const auto x = static_cast<double>(index);
    return {gl::tensor({x, 2 * x}), gl::tensor(static_cast<int64_t>(index % 3), gl::dtype(gl::kInt64))};
  }
  std::optional<size_t> size() const override { return n_; }
  size_t n_;
};

// Fails on example `bad`.
struct Failing : ds::Dataset<Failing> {
  td::Example<> get(size_t index) override {
    if (index == 5) throw gl::ValueError("Failing: example 5 is broken");
    return {gl::tensor({static_cast<double>(index)}), gl::tensor({0.0})};
  }
  std::optional<size_t> size() const override { return 8; }
};

std::vector<size_t> drain(sm::Sampler<>& s, size_t batch) {
  std::vector<size_t> all;
  while (auto b = s.next(batch)) {
    EXPECT_LE(b->size(), batch);
    all.insert(all.end(), b->begin(), b->end());
  }
  return all;
}

std::vector<size_t> iota(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("gradlab_torch_data_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The message of the gradlab error `fn` throws ("" when it throws none).
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const gl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TorchData, CrtpDatasetGetBatchAndTypes) {
  Pairs p(5);
  static_assert(std::is_same_v<Pairs::BatchType, std::vector<td::Example<>>>);
  static_assert(std::is_same_v<Pairs::ExampleType, td::Example<>>);
  EXPECT_EQ(p.size().value(), 5u);
  std::vector<size_t> idx = {4, 0, 2};
  std::vector<td::Example<>> batch = p.get_batch(idx);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_TRUE(gl::equal(batch[0].data, gl::tensor({4.0, 8.0})));
  EXPECT_EQ(batch[0].target.item<int64_t>(), 1);
  EXPECT_EQ(batch[2].target.item<int64_t>(), 2);
  // Example<>(data, target) and the data-only TensorExample.
  td::Example<> e(gl::tensor({1.0}), gl::tensor({2.0}));
  EXPECT_EQ(e.target.item<float>(), 2.0F);
  td::TensorExample t = gl::tensor({3.0});
  const gl::Tensor& as_tensor = t;
  EXPECT_EQ(as_tensor.item<float>(), 3.0F);
}

TEST(TorchData, MapNormalizeStackGivesStackedBatches) {
  auto mapped = Pairs(6).map(tr::Lambda<td::Example<>>([](td::Example<> e) {
                           e.data = e.data.reshape({1, 1, 2});  // one channel [C, H, W]
                           return e;
                         }))
                    .map(tr::Normalize<>(1.0, 2.0))
                    .map(tr::Stack<>());
  static_assert(std::is_same_v<decltype(mapped)::BatchType, td::Example<>>);
  EXPECT_EQ(mapped.size().value(), 6u);
  td::Example<> b = mapped.get_batch(std::vector<size_t>{1, 3});
  EXPECT_EQ(b.data.sizes(), gl::Shape({2, 1, 1, 2}));
  EXPECT_EQ(b.target.sizes(), gl::Shape({2}));
  // (x - 1) / 2 for x = [1, 2] and [3, 6].
  EXPECT_TRUE(gl::allclose(b.data.reshape({2, 2}), gl::tensor({{0.0, 0.5}, {1.0, 2.5}})));
  EXPECT_TRUE(gl::equal(b.target, gl::tensor({1, 0})));
  // map on an lvalue copies the dataset; the original still works.
  Pairs base(3);
  auto copy = base.map(tr::Stack<>());
  EXPECT_EQ(copy.get_batch(std::vector<size_t>{0, 1, 2}).data.sizes(), gl::Shape({3, 2}));
  EXPECT_EQ(base.get(2).data.sizes(), gl::Shape({2}));
}

TEST(TorchData, NormalizePerChannelAndErrors) {
  tr::Normalize<> norm({0.5, 1.0, 2.0}, {0.5, 0.25, 4.0});
  EXPECT_EQ(norm.mean.sizes(), gl::Shape({3, 1, 1}));
  gl::Tensor img = gl::ones({3, 2, 2});
  gl::Tensor out = norm(img);
  EXPECT_TRUE(gl::allclose(out.select(0, 0), gl::full({2, 2}, 1.0)));
  EXPECT_TRUE(gl::allclose(out.select(0, 1), gl::full({2, 2}, 0.0)));
  EXPECT_TRUE(gl::allclose(out.select(0, 2), gl::full({2, 2}, -0.25)));
  // A batch [N, C, H, W] broadcasts too.
  EXPECT_EQ(norm(gl::ones({4, 3, 2, 2})).sizes(), gl::Shape({4, 3, 2, 2}));
  EXPECT_THAT(error_of([] { tr::Normalize<>({0.5, 0.5}, {1.0}); }),
              testing::HasSubstr("different numbers of channels"));
  EXPECT_THAT(error_of([] { tr::Normalize<>(0.5, 0.0); }), testing::HasSubstr("stddev of 0"));
  EXPECT_THROW(tr::Normalize<>(std::vector<double>{}, std::vector<double>{}), gl::ValueError);
  EXPECT_THAT(error_of([&] { norm(gl::ones({2, 2, 2})); }),
              testing::HasSubstr("channels do not match"));
}

TEST(TorchData, StackCollationsAndErrors) {
  tr::Stack<> stack;
  EXPECT_THAT(error_of([&] { stack.apply_batch({}); }), testing::HasSubstr("batch is empty"));
  std::vector<td::Example<>> mixed = {{gl::ones({2}), gl::tensor({1.0})},
                                      {gl::ones({3}), gl::tensor({1.0})}};
  EXPECT_THAT(error_of([&] { stack.apply_batch(mixed); }), testing::HasSubstr("differ in shape"));
  std::vector<td::Example<>> unlabelled = {{gl::ones({2}), gl::Tensor()}, {gl::ones({2}), gl::Tensor()}};
  td::Example<> u = stack.apply_batch(unlabelled);
  EXPECT_EQ(u.data.sizes(), gl::Shape({2, 2}));
  EXPECT_FALSE(u.target.defined());
  std::vector<td::Example<>> half = {{gl::ones({2}), gl::tensor({1.0})}, {gl::ones({2}), gl::Tensor()}};
  EXPECT_THROW(stack.apply_batch(half), gl::ValueError);

  ds::TensorDataset rows(gl::arange(0, 6, 1, gl::dtype(gl::kFloat32)).reshape({3, 2}));
  auto stacked = rows.map(tr::Stack<td::TensorExample>());
  td::TensorExample te = stacked.get_batch(std::vector<size_t>{2, 0});
  EXPECT_TRUE(gl::equal(te.data, gl::tensor({{4.0, 5.0}, {0.0, 1.0}})));
  EXPECT_THROW(rows.get(3), gl::ShapeError);

  // A Collate (BatchLambda) that sums the data; a TensorLambda on the data only.
  auto summed = Pairs(4)
                    .map(tr::TensorLambda<>([](gl::Tensor x) { return x * 10.0; }))
                    .map(tr::Collate<>([](std::vector<td::Example<>> b) {
                      gl::Tensor s = gl::zeros({2});
                      for (auto& e : b) s = s + e.data;
                      return td::Example<>(s, gl::Tensor());
                    }));
  EXPECT_TRUE(gl::allclose(summed.get_batch(std::vector<size_t>{1, 2}).data, gl::tensor({30.0, 60.0})));
}

TEST(TorchData, SequentialAndRandomSamplers) {
  sm::SequentialSampler seq(7);
  EXPECT_EQ(drain(seq, 3), iota(7));
  EXPECT_EQ(seq.next(3), std::nullopt);
  seq.reset(4);
  EXPECT_EQ(drain(seq, 3), iota(4));

  gl::manual_seed(3);
  sm::RandomSampler rnd(50);
  std::vector<size_t> first = drain(rnd, 8);
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(50)) << "every index exactly once";
  rnd.reset();
  std::vector<size_t> second = drain(rnd, 8);
  EXPECT_NE(first, second) << "a new permutation each reset";
  gl::manual_seed(3);
  sm::RandomSampler again(50);
  EXPECT_EQ(drain(again, 50), first) << "manual_seed makes it repeatable";
  EXPECT_THROW(sm::RandomSampler(-1), gl::ValueError);
}

TEST(TorchData, DistributedRandomSamplerPartitionsRanks) {
  for (size_t n : {10u, 12u, 3u}) {
    for (bool dup : {true, false}) {
      const size_t replicas = 4;
      std::vector<size_t> all;
      std::set<size_t> seen;
      for (size_t r = 0; r < replicas; ++r) {
        sm::DistributedRandomSampler s(n, replicas, r, dup);
        s.set_epoch(7);
        s.reset();
        std::vector<size_t> mine = drain(s, 2);
        const size_t want = dup ? (n + replicas - 1) / replicas : n / replicas;
        EXPECT_EQ(mine.size(), want) << "n " << n << " rank " << r << " dup " << dup;
        for (size_t i : mine) EXPECT_LT(i, n);
        all.insert(all.end(), mine.begin(), mine.end());
        seen.insert(mine.begin(), mine.end());
      }
      if (dup) {
        EXPECT_EQ(seen.size(), n) << "with duplicates every example is visited (n " << n << ")";
      } else {
        EXPECT_EQ(seen.size(), all.size()) << "without duplicates the ranks are disjoint";
        EXPECT_EQ(all.size(), (n / replicas) * replicas);
      }
    }
  }
  // Same epoch, same order (on every rank); another epoch, another order.
  sm::DistributedRandomSampler a(100, 2, 1), b(100, 2, 1);
  EXPECT_EQ(drain(a, 10), drain(b, 10));
  a.set_epoch(1);
  a.reset();
  b.reset();
  EXPECT_NE(drain(a, 10), drain(b, 10));
  EXPECT_EQ(a.epoch(), 1u);
  EXPECT_THROW(sm::DistributedRandomSampler(10, 2, 2), gl::ValueError);
  EXPECT_THROW(sm::DistributedRandomSampler(10, 0, 0), gl::ValueError);
}

TEST(TorchData, DistributedSequentialSamplerMatchesLibTorch) {
  // n = 10, 3 replicas, duplicates: 4 each, the last wraps to 0, 1.
  const std::vector<std::vector<size_t>> want = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}};
  for (size_t r = 0; r < 3; ++r) {
    sm::DistributedSequentialSampler s(10, 3, r);
    EXPECT_EQ(drain(s, 3), want[r]) << "rank " << r;
  }
  sm::DistributedSequentialSampler no_dup(10, 3, 2, false);
  EXPECT_EQ(drain(no_dup, 2), (std::vector<size_t>{6, 7, 8}));
  no_dup.reset();
  EXPECT_EQ(no_dup.index(), 0u);
}

TEST(TorchData, MakeDataLoaderBatchesAndDropLast) {
  // Without Stack a batch is a std::vector<Example<>>.
  auto raw = td::make_data_loader<sm::SequentialSampler>(Pairs(10), 4);
  std::vector<size_t> sizes;
  for (auto& batch : *raw) {
    static_assert(std::is_same_v<std::decay_t<decltype(batch)>, std::vector<td::Example<>>>);
    sizes.push_back(batch.size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  // With Stack a batch is one Example<>; drop_last drops the short one.
  auto loader = td::make_data_loader<sm::SequentialSampler>(
      Pairs(10).map(tr::Stack<>()), td::DataLoaderOptions().batch_size(4).drop_last(true));
  std::vector<gl::Shape> shapes;
  int64_t first_target = -1;
  for (td::Example<>& batch : *loader) {
    shapes.push_back(batch.data.sizes());
    EXPECT_EQ(batch.target.sizes(), gl::Shape({4}));
    if (first_target < 0) first_target = batch.target[1].item<int64_t>();
  }
  EXPECT_EQ(shapes, (std::vector<gl::Shape>{{4, 2}, {4, 2}}));
  EXPECT_EQ(first_target, 1);
  // A second pass is a new epoch with the same batches (SequentialSampler).
  size_t passes = 0;
  for (auto it = loader->begin(); it != loader->end(); ++it) ++passes;
  EXPECT_EQ(passes, 2u);
  // The default sampler is RandomSampler: every example once per epoch.
  gl::manual_seed(0);
  auto shuffled = td::make_data_loader(Pairs(9).map(tr::Stack<>()), td::DataLoaderOptions(4));
  std::vector<double> firsts;
  for (auto& batch : *shuffled)
    for (int64_t i = 0; i < batch.data.size(0); ++i) firsts.push_back(batch.data[i][0].item<double>());
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(firsts, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(TorchData, WorkersGiveTheSameBatchesInOrder) {
  auto make = [](size_t workers) {
    return td::make_data_loader<sm::SequentialSampler>(
        Pairs(37).map(tr::Stack<>()), td::DataLoaderOptions(5).workers(workers).max_jobs(3));
  };
  std::vector<gl::Tensor> serial;
  auto l0 = make(0);
  for (auto& b : *l0) serial.push_back(b.data);
  for (size_t workers : {1u, 2u, 3u}) {
    auto lw = make(workers);
    for (int epoch = 0; epoch < 2; ++epoch) {
      size_t i = 0;
      for (auto& b : *lw) {
        ASSERT_LT(i, serial.size());
        EXPECT_TRUE(gl::equal(b.data, serial[i])) << "workers " << workers << " batch " << i;
        ++i;
      }
      EXPECT_EQ(i, serial.size());
    }
  }
  // A break and a new begin() restart cleanly.
  auto lb = make(2);
  for (auto& b : *lb) {
    (void)b;
    break;
  }
  size_t count = 0;
  for (auto& b : *lb) {
    (void)b;
    ++count;
  }
  EXPECT_EQ(count, 8u);
}

TEST(TorchData, DatasetErrorsReachTheCaller) {
  for (size_t workers : {0u, 2u}) {
    auto loader = td::make_data_loader<sm::SequentialSampler>(
        Failing().map(tr::Stack<>()), td::DataLoaderOptions(2).workers(workers));
    size_t good = 0;
    std::string message;
    try {
      for (auto& b : *loader) {
        (void)b;
        ++good;
      }
    } catch (const gl::ValueError& e) {
      message = e.what();
    }
    EXPECT_EQ(good, 2u) << "workers " << workers << ": batches before example 5's";
    EXPECT_THAT(message, testing::HasSubstr("example 5 is broken"));
  }
}

TEST(TorchData, LoaderRefusesGradlabOnlyOptions) {
  EXPECT_THAT(error_of([] { td::make_data_loader(Pairs(4), td::DataLoaderOptions(2).shuffle(true)); }),
              testing::HasSubstr("shuffle(true) is not a make_data_loader option"));
  EXPECT_THROW(td::make_data_loader(Pairs(4), td::DataLoaderOptions(2).seed(1)), gl::ValueError);
  EXPECT_THROW(td::make_data_loader(Pairs(4), td::DataLoaderOptions(0)), gl::ValueError);
  // An explicit sampler: a DistributedSequentialSampler share.
  auto loader = td::make_data_loader(Pairs(10).map(tr::Stack<>()),
                                     sm::DistributedSequentialSampler(10, 2, 1),
                                     td::DataLoaderOptions(3));
  std::vector<double> seen;
  for (auto& b : *loader)
    for (int64_t i = 0; i < b.data.size(0); ++i) seen.push_back(b.data[i][0].item<double>());
  EXPECT_EQ(seen, (std::vector<double>{5, 6, 7, 8, 9}));
  EXPECT_EQ(loader->sampler().epoch(), 0u);
}

TEST(TorchData, MnistReadsIdxFiles) {
  const fs::path dir = temp_dir("mnist_ok");
  idx::write(dir / "train-images-idx3-ubyte", idx::images(5));
  idx::write(dir / "train-labels-idx1-ubyte", idx::labels(5));
  idx::write(dir / "t10k-images-idx3-ubyte", idx::images(2));
  idx::write(dir / "t10k-labels-idx1-ubyte", idx::labels(2));
  ds::MNIST train(dir.string());
  EXPECT_TRUE(train.is_train());
  EXPECT_EQ(train.size().value(), 5u);
  EXPECT_EQ(train.images().sizes(), gl::Shape({5, 1, 28, 28}));
  EXPECT_EQ(train.images().dtype(), gl::kFloat32);
  EXPECT_EQ(train.targets().dtype(), gl::kInt64);
  EXPECT_EQ(train.targets().sizes(), gl::Shape({5}));
  // Pixel (row 2, col 5) of image 3 is byte 2 * 28 + 5 of that image, / 255.
  const size_t p = 2 * 28 + 5;
  EXPECT_FLOAT_EQ(train.images()[3][0][2][5].item<float>(),
                  static_cast<float>(idx::pixel(3, p)) / 255.0F);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(train.targets()[i].item<int64_t>(), idx::label(i));
  td::Example<> e = train.get(4);
  EXPECT_EQ(e.data.sizes(), gl::Shape({1, 28, 28}));
  EXPECT_EQ(e.target.item<int64_t>(), idx::label(4));
  EXPECT_THROW(train.get(5), gl::ShapeError);
  EXPECT_GE(train.images().min().item<float>(), 0.0F);
  EXPECT_LE(train.images().max().item<float>(), 1.0F);

  ds::MNIST test(dir.string(), ds::MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(test.size().value(), 2u);
  // The MNIST example's pipeline over it.
  auto loader = td::make_data_loader<sm::SequentialSampler>(
      ds::MNIST(dir.string()).map(tr::Normalize<>(0.1307, 0.3081)).map(tr::Stack<>()), 2);
  std::vector<int64_t> batch_sizes;
  for (auto& batch : *loader) {
    EXPECT_EQ(batch.data.size(1), 1);
    EXPECT_EQ(batch.data.size(2), 28);
    batch_sizes.push_back(batch.data.size(0));
  }
  EXPECT_EQ(batch_sizes, (std::vector<int64_t>{2, 2, 1}));
  fs::remove_all(dir);
}

TEST(TorchData, MnistErrorsNameTheFileAndTheProblem) {
  const fs::path dir = temp_dir("mnist_bad");
  const std::string images = (dir / "train-images-idx3-ubyte").string();
  const std::string labels = (dir / "train-labels-idx1-ubyte").string();
  auto load = [&] { ds::MNIST m(dir.string()); };
  auto expect = [&](const std::vector<uint8_t>& img, const std::vector<uint8_t>& lab,
                    const std::string& file, const std::string& what) {
    idx::write(images, img);
    idx::write(labels, lab);
    const std::string msg = error_of(load);
    EXPECT_THAT(msg, testing::HasSubstr(file)) << what;
    EXPECT_THAT(msg, testing::HasSubstr(what));
    EXPECT_THROW(load(), gl::IOError);
  };
  std::vector<uint8_t> good_i = idx::images(3), good_l = idx::labels(3);

  EXPECT_THAT(error_of(load), testing::HasSubstr("cannot open " + images));  // nothing there yet
  std::vector<uint8_t> magic = good_i;
  magic[3] = 0x01;  // 2049: a label file's magic
  expect(magic, good_l, images, "wrong magic number");
  EXPECT_THAT(error_of(load), testing::HasSubstr("this is a label file"));
  expect(good_i, good_i, labels, "wrong magic number");
  expect(std::vector<uint8_t>(good_i.begin(), good_i.begin() + 10), good_l, images,
         "too short for an IDX image header");
  expect(std::vector<uint8_t>(good_i.begin(), good_i.end() - 1), good_l, images,
         "expected 2368 bytes, got 2367 bytes");
  std::vector<uint8_t> trailing = good_l;
  trailing.push_back(0);
  expect(good_i, trailing, labels, "the file has trailing bytes");
  expect(idx::images(3, 28, 27), good_l, images, "got rows 28, cols 27");
  std::vector<uint8_t> absurd = good_i;
  absurd[8] = absurd[12] = 0x40;  // rows = cols = 2^30 + 28
  expect(absurd, good_l, images, "got rows 1073741852, cols 1073741852");
  std::vector<uint8_t> huge = good_i;
  huge[4] = 0x7f;  // count 2^31 - 1 + ...: far more than the bytes there
  expect(huge, good_l, images, "the file is truncated");
  std::vector<uint8_t> zero = good_l;
  zero[7] = 0;
  expect(good_i, std::vector<uint8_t>(zero.begin(), zero.begin() + 8), labels,
         "bad example count");
  expect(good_i, idx::labels(4), labels, "hold different numbers of examples");
  EXPECT_THAT(error_of(load), testing::HasSubstr("expected 3 labels (one per image), got 4"));
  std::vector<uint8_t> gz = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  expect(gz, good_l, images, "gunzip");
  fs::remove_all(dir);
}
