// The LibTorch Tensor idioms a notebook user or a ported program types (issue 27 item 4): const
// in-place methods on handles, sizes() printed, nested literals, Tensor ⊕ Scalar, repeat, chunk,
// cumsum, torch::indexing, random fills, from_blob, uint8, InferenceMode, Sequential iteration,
// save / load of tensors and optimizers. Gradients of the new ops are in the op table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;
using namespace gradlab::indexing;

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no exception";
}

TEST(TensorHandle, InPlaceMethodsWorkOnAConstHandle) {
  Tensor w = randn({2, 3}, requires_grad());
  (w * 2).sum().backward();
  const Tensor& g = w.grad();
  g.zero_();  // LibTorch: const Tensor& zero_() const
  EXPECT_EQ(vals(w.grad()), std::vector<double>(6, 0.0));
  w.grad().add_(1.5).mul_(2);
  EXPECT_EQ(vals(w.grad()), std::vector<double>(6, 3.0));
  const Tensor c = zeros({2});
  c.fill_(7);
  EXPECT_EQ(vals(c), (std::vector<double>{7, 7}));
  // compound operators still give the caller's handle
  Tensor x = ones({2});
  Tensor& same = (x += 1);
  EXPECT_EQ(&same, &x);
}

TEST(TensorHandle, SizesPrintAsLibTorch) {
  Tensor x = zeros({2, 3});
  std::ostringstream os;
  os << x.sizes() << " " << x.strides() << " " << zeros({}).sizes();
  os << " " << x.dtype();
  EXPECT_EQ(os.str(), "[2, 3] [3, 1] [] float32");
  IntArrayRef s = x.sizes();
  EXPECT_EQ(s.vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s[1], 3);
}

TEST(TensorLiteral, NestedBracesPickTheDtypeFromTheLiterals) {
  Tensor f = tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.sizes(), (Shape{2, 2}));
  EXPECT_EQ(vals(f), (std::vector<double>{1, 2, 3, 4}));
  Tensor i = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.sizes(), (Shape{2, 3}));
  Tensor b = tensor({{true, false}});
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(tensor({{1, 2.5}}).dtype(), kFloat32);  // a mix gives the floating dtype
  Tensor c = tensor({{{1.0, 2.0}}, {{3.0, 4.0}}});
  EXPECT_EQ(c.sizes(), (Shape{2, 1, 2}));
  EXPECT_EQ(vals(c), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(tensor({{1, 2}}, kFloat64).dtype(), kFloat64);
  // int64 beyond 2^53 is exact
  EXPECT_EQ(tensor({{int64_t{9007199254740993}}}).item<int64_t>(), int64_t{9007199254740993});
  EXPECT_EQ(tensor({{5}}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(tensor({5}).sizes(), (Shape{1}));
  EXPECT_EQ(tensor(5).sizes(), (Shape{}));
  EXPECT_EQ(tensor({}).sizes(), (Shape{0}));
  EXPECT_EQ(tensor(std::vector<float>{1, 2}).dtype(), kFloat32);
  EXPECT_EQ(tensor(std::vector<int>{1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).dtype(), kBool);
  EXPECT_EQ(tensor(std::vector<int64_t>{}).dtype(), kInt64);  // the element type, even when empty
  EXPECT_EQ(tensor({{1.0}}).sizes(), (Shape{1, 1}));
  EXPECT_NE(message_of<ShapeError>([] { tensor({{1.0, 2.0}, {3.0}}); }).find("ragged"),
            std::string::npos);
  EXPECT_NE(message_of<ShapeError>([] { tensor({{{1.0}}, {{2.0}, {3.0}}}); }).find("ragged"),
            std::string::npos);
}

TEST(TensorScalar, TensorWithAScalarFromItem) {
  Tensor t = tensor({1.0, 2.0});
  Tensor b = tensor({0.5});
  EXPECT_EQ(vals(t + b.item()), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(vals(b.item() * t), (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(vals(t - b.item()), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(vals(b.item() / t), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ((t + b.item()).dtype(), kFloat32);
}

TEST(TensorScalar, ArithmeticMethodsTakeScalarsAndAlpha) {
  Tensor x = tensor({1.0, 2.0}), y = tensor({10.0, 20.0});
  EXPECT_EQ(vals(x.add(1.0)), (std::vector<double>{2, 3}));
  EXPECT_EQ(vals(x.sub(1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(vals(x.mul(3)), (std::vector<double>{3, 6}));
  EXPECT_EQ(vals(x.div(2)), (std::vector<double>{0.5, 1}));
  EXPECT_EQ(vals(x.add(y, 2)), (std::vector<double>{21, 42}));
  EXPECT_EQ(vals(x.sub(y, 0.5)), (std::vector<double>{-4, -8}));
}

TEST(TensorOps, RepeatTilesEachDim) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor r = x.repeat({2, 1});
  EXPECT_EQ(r.sizes(), (Shape{4, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(vals(tensor({1.0, 2.0}).repeat({2, 2})), (std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(tensor({1.0, 2.0}).repeat({3, 1, 2}).sizes(), (Shape{3, 1, 4}));
  EXPECT_EQ(x.repeat({0, 1}).sizes(), (Shape{0, 2}));
  // each element is copied 4 times: its gradient is 4
  Tensor w = ones({2}, requires_grad());
  w.repeat({2, 2}).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{4, 4}));
  EXPECT_NE(message_of<ShapeError>([&] { x.repeat({2}); }).find("number of repeat dims"), std::string::npos);
}

TEST(TensorOps, ChunkAndSplitGiveViews) {
  Tensor x = arange(10, kFloat32);
  TensorList c = x.chunk(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].sizes(), (Shape{4}));
  EXPECT_EQ(c[2].sizes(), (Shape{2}));
  EXPECT_EQ(vals(c[2]), (std::vector<double>{8, 9}));
  EXPECT_TRUE(c[1].is_same_storage(x));
  EXPECT_EQ(arange(2).chunk(4).size(), 2u);  // fewer chunks when n is small, as LibTorch
  TensorList s = zeros({2, 5}).split(2, 1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].sizes(), (Shape{2, 1}));
  EXPECT_THROW(x.chunk(0), ValueError);
}

TEST(TensorOps, CumsumIsARunningSum) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(vals(x.cumsum(1)), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(vals(x.cumsum(0)), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(vals(x.cumsum(-1)), vals(x.cumsum(1)));
  Tensor i = tensor({1, 2, 3, 4, 5});
  EXPECT_EQ(i.cumsum(0).dtype(), kInt64);
  EXPECT_EQ(i.cumsum(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 6, 10, 15}));
  EXPECT_EQ(tensor({true, true, false}).cumsum(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2}));
  // a long dim (many doubling steps) against a sequential sum in float64
  Tensor l = rand({1000}, kFloat64);
  std::vector<double> lv = vals(l), want(lv.size());
  double acc = 0;
  for (size_t k = 0; k < lv.size(); ++k) want[k] = acc += lv[k];
  std::vector<double> got = vals(l.cumsum(0));
  for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-9 * (1 + std::abs(want[k]))) << k;
  // d/dx_j Σ_i y_i = number of i >= j
  Tensor w = ones({4}, requires_grad());
  w.cumsum(0).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{4, 3, 2, 1}));
}

TEST(TensorOps, MaxAndMinWithAnotherTensor) {
  Tensor a = tensor({1.0, 5.0}), b = tensor({3.0, 2.0});
  EXPECT_EQ(vals(a.max(b)), (std::vector<double>{3, 5}));
  EXPECT_EQ(vals(gradlab::max(a, b)), (std::vector<double>{3, 5}));
  EXPECT_EQ(vals(gradlab::min(a, b)), (std::vector<double>{1, 2}));
  EXPECT_EQ(vals(a.min(b)), (std::vector<double>{1, 2}));
}

TEST(Indexing, SlicesIntegersNoneAndEllipsis) {
  Tensor x = arange(24, kFloat32).reshape({2, 3, 4});
  EXPECT_TRUE(equal(x.index({Slice(), 0}), x.select(1, 0)));
  EXPECT_TRUE(equal(x.index({1}), x[1]));
  EXPECT_TRUE(equal(x.index({-1, -1, -1}), x[1][2][3]));
  EXPECT_EQ(x.index({None}).sizes(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.index({Ellipsis, None}).sizes(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.index({"...", 0}).sizes(), (Shape{2, 3}));
  EXPECT_EQ(x.index({Slice(None, None, 2), Slice(1, None), Slice(0, -1, 2)}).sizes(), (Shape{1, 2, 2}));
  EXPECT_EQ(vals(x.index({0, 0, Slice(1, 3)})), (std::vector<double>{1, 2}));
  EXPECT_EQ(vals(x.index({0, 0, Slice(-2)})), (std::vector<double>{2, 3}));
  // the result is a view
  EXPECT_TRUE(x.index({Slice(), 1}).is_same_storage(x));
}

TEST(Indexing, TensorEntriesPickAlongTheirDim) {
  Tensor x = arange(12, kFloat32).reshape({3, 4});
  Tensor idx = tensor({2, 0});
  EXPECT_EQ(vals(x.index({idx})), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_EQ(vals(x.index({Slice(), idx})), (std::vector<double>{2, 0, 6, 4, 10, 8}));
  Tensor mask = x > 8.5;
  EXPECT_EQ(vals(x.index({mask})), (std::vector<double>{9, 10, 11}));
  // a 0-d mask adds a dim of 1 (true) or 0 (false), as x[True] in PyTorch, and consumes none
  EXPECT_EQ(x.index({tensor(true)}).sizes(), (Shape{1, 3, 4}));
  EXPECT_EQ(x.index({tensor(false), Slice(), 0}).sizes(), (Shape{0, 3}));
  Tensor rows = tensor({true, false, true});
  EXPECT_EQ(x.index({rows}).sizes(), (Shape{2, 4}));
  // gradient through a picked index reaches the picked elements
  Tensor w = zeros({3}, requires_grad());
  w.index({tensor({1, 1})}).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{0, 2, 0}));
}

TEST(Indexing, BadIndexListsAreClearErrors) {
  Tensor x = zeros({2, 3});
  EXPECT_NE(message_of<ShapeError>([&] { x.index({0, 0, 0}); }).find("too many indices for tensor of dimension 2"),
            std::string::npos);
  EXPECT_NE(message_of<ShapeError>([&] { x.index({Slice(), 3}); }).find("index 3 is out of bounds for dimension 1 with size 3"),
            std::string::npos);
  EXPECT_NE(message_of<ShapeError>([&] { x.index({Ellipsis, Ellipsis}); }).find("single ellipsis"), std::string::npos);
  EXPECT_NE(message_of<ShapeError>([&] { x.index({tensor({0}), tensor({1})}); }).find("several tensor indices"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { x.index({Slice(None, None, -1)}); }).find("step must be positive"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { x.index({"::"}); }).find("a string index must be"), std::string::npos);
  EXPECT_NE(message_of<DTypeError>([&] { x.index({tensor({0.5})}); }).find("long or bool"), std::string::npos);
  EXPECT_NE(message_of<ShapeError>([&] { x.index({zeros({3}, kBool)}); }).find("shape of the mask"), std::string::npos);
}

TEST(Indexing, IndexPutWritesThroughTheView) {
  Tensor x = zeros({2, 3});
  x.index_put_({Slice(), 1}, 5.0);
  EXPECT_EQ(vals(x), (std::vector<double>{0, 5, 0, 0, 5, 0}));
  x.index_put_({0}, tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(vals(x), (std::vector<double>{1, 2, 3, 0, 5, 0}));
  x.index_put_({Slice(), tensor({0, 2})}, tensor({{7.0, 8.0}, {9.0, 10.0}}));
  EXPECT_EQ(vals(x), (std::vector<double>{7, 2, 8, 9, 5, 10}));
  x.index_put_({x > 8.5}, 0.0);
  EXPECT_EQ(vals(x), (std::vector<double>{7, 2, 8, 0, 5, 0}));
  // on a non-leaf the write is recorded: d/dv of sum(y) with y[:, 1] = v is 1 per written element
  Tensor a = ones({2, 3}, requires_grad()), v = zeros({2}, requires_grad());
  Tensor y = a * 2;
  y.index_put_({Slice(), 1}, v);
  y.sum().backward();
  EXPECT_EQ(vals(v.grad()), (std::vector<double>{1, 1}));
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{2, 0, 2, 2, 0, 2}));
}

TEST(RandomFill, UniformAndNormalInPlace) {
  Generator g(42);
  Tensor u = empty(10000);
  u.uniform_(-2, 3, &g);
  std::vector<double> uv = vals(u);
  double mean = 0;
  for (double e : uv) {
    ASSERT_GE(e, -2);
    ASSERT_LT(e, 3);
    mean += e / static_cast<double>(uv.size());
  }
  EXPECT_NEAR(mean, 0.5, 0.1);  // 6.9 standard errors (σ = 5/√12 / 100)
  Tensor n = empty({10000}, kFloat64);
  n.normal_(1.0, 2.0, &g);
  std::vector<double> nv = vals(n);
  double m = 0, s2 = 0;
  for (double e : nv) m += e / static_cast<double>(nv.size());
  for (double e : nv) s2 += (e - m) * (e - m) / static_cast<double>(nv.size() - 1);
  EXPECT_NEAR(m, 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(s2), 2.0, 0.1);
  Generator a(7), b(7);
  EXPECT_EQ(vals(empty(5).uniform_(0, 1, &a)), vals(empty(5).uniform_(0, 1, &b)));
  Tensor leaf = zeros({3}, requires_grad());
  EXPECT_THROW(leaf.uniform_(), AutogradError);
  {
    NoGradGuard ng;
    leaf.uniform_(0.5, 1.0);
  }
  EXPECT_GE(vals(leaf)[0], 0.5);
  EXPECT_THROW(u.uniform_(1, 0), ValueError);
  EXPECT_THROW(u.normal_(0, -1), ValueError);
}

TEST(InPlaceView, UnsqueezeInPlace) {
  Tensor x = arange(6, kFloat32).reshape({2, 3});
  Tensor alias = x;
  x.unsqueeze_(1);
  EXPECT_EQ(alias.sizes(), (Shape{2, 1, 3}));
  EXPECT_EQ(vals(alias), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  Tensor w = ones({3}, requires_grad());
  Tensor y = w * 2;
  y.unsqueeze_(0);
  EXPECT_EQ(y.sizes(), (Shape{1, 3}));
  (y * tensor({{1.0, 2.0, 3.0}})).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{2, 4, 6}));
  EXPECT_THROW(w.unsqueeze_(0), AutogradError);
}

TEST(Factories, LibTorchShorthands) {
  EXPECT_EQ(empty(3, kFloat64).sizes(), (Shape{3}));
  Generator g(3);
  Tensor r = randint(10, {200}, {}, &g);
  EXPECT_EQ(r.dtype(), kInt64);
  std::set<int64_t> seen;
  for (int64_t v : r.to_vector<int64_t>()) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 10);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST(Factories, MultinomialSamplesByWeight) {
  Generator g(11);
  Tensor w = tensor({1.0, 0.0, 3.0});
  Tensor s = multinomial(w, 4000, true, &g);
  EXPECT_EQ(s.sizes(), (Shape{4000}));
  int64_t twos = 0;
  for (int64_t v : s.to_vector<int64_t>()) {
    ASSERT_NE(v, 1) << "a class of weight 0 was drawn";
    twos += v == 2;
  }
  EXPECT_NEAR(static_cast<double>(twos) / 4000, 0.75, 0.04);  // 5.8 standard errors
  Tensor rows = multinomial(tensor({{1.0, 1.0, 1.0, 1.0}, {0.0, 0.0, 1.0, 1.0}}), 2, false, &g);
  EXPECT_EQ(rows.sizes(), (Shape{2, 2}));
  std::vector<int64_t> rv = rows.to_vector<int64_t>();
  EXPECT_NE(rv[0], rv[1]);
  EXPECT_EQ(std::set<int64_t>(rv.begin() + 2, rv.end()), (std::set<int64_t>{2, 3}));
  EXPECT_NE(message_of<ValueError>([&] { multinomial(tensor({1.0, 0.0}), 2); }).find("not enough"), std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { multinomial(tensor({1.0, -1.0}), 1); }).find("element < 0"), std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { multinomial(tensor({1.0}), 2); }).find("without replacement"), std::string::npos);
}

TEST(Factories, FromBlobAliasesTheCallersMemory) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buf, {2, 3});
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(vals(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  t.mul_(2);
  EXPECT_EQ(buf[5], 12.0f);
  buf[0] = -1;
  EXPECT_EQ(vals(t)[0], -1.0);
  double d[4] = {1, 2, 3, 4};
  Tensor tt = from_blob(d, {2, 2}, Strides{1, 2}, kFloat64);  // column-major: the transpose
  EXPECT_EQ(vals(tt), (std::vector<double>{1, 3, 2, 4}));
  int deleted = 0;
  {
    Tensor owned = from_blob(buf, {6}, [&](void* p) { deleted += p == buf; });
    Tensor view = owned.narrow(0, 1, 2);
    owned = Tensor();
    EXPECT_EQ(deleted, 0);  // the view still holds the storage
  }
  EXPECT_EQ(deleted, 1);
  EXPECT_THROW(from_blob(nullptr, {2}), ValueError);
  EXPECT_THROW(from_blob(buf, {2}, TensorOptions().device(Device(kCUDA))), DeviceError);
  EXPECT_THROW(from_blob(reinterpret_cast<char*>(buf) + 1, {2}), ValueError);  // misaligned float
}

TEST(Dtype, UInt8IsStorageOnly) {
  EXPECT_EQ(kByte, kUInt8);
  Tensor b = zeros({3}, kByte);
  EXPECT_EQ(b.dtype(), kUInt8);
  EXPECT_EQ(element_size(kUInt8), 1u);
  EXPECT_EQ(to_string(kUInt8), "uint8");
  unsigned char px[4] = {0, 128, 255, 7};
  Tensor img = from_blob(px, {4}, kByte);
  EXPECT_EQ(vals(img.to(kFloat32)), (std::vector<double>{0, 128, 255, 7}));
  EXPECT_EQ(img.data_ptr<uint8_t>()[2], 255);
  // float -> uint8 truncates, and wraps modulo 256 as PyTorch on x86
  Tensor f = tensor({3.7, 255.0, 256.0, -1.0}).to(kUInt8);
  EXPECT_EQ(f.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{3, 255, 0, 255}));
  EXPECT_EQ(promote_types(kUInt8, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kUInt8, kInt64), kInt64);
  EXPECT_EQ(promote_types(kUInt8, kBool), kUInt8);
  EXPECT_EQ(vals(img + 0.5), (std::vector<double>{0.5, 128.5, 255.5, 7.5}));  // promoted to float32
  EXPECT_NE(message_of<DTypeError>([&] { (img + img).numel(); }).find("convert with .to(kFloat32)"),
            std::string::npos);
  EXPECT_THROW(zeros({2}, kByte).requires_grad_(), AutogradError);
}

TEST(GradMode, InferenceModeRecordsNothing) {
  Tensor w = ones({2}, requires_grad());
  {
    InferenceMode guard;
    EXPECT_FALSE((w * 2).requires_grad());
    {
      InferenceMode off(false);
      EXPECT_TRUE((w * 2).requires_grad());
    }
  }
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(Modules, SequentialIteratesAndIndexesAsLibTorch) {
  nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  std::vector<std::string> names;
  for (const auto& m : *seq) names.push_back(m.ptr()->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Linear", "ReLU", "Linear"}));
  int linears = 0;
  for (const auto& m : *seq) linears += m.is<nn::Linear>();
  EXPECT_EQ(linears, 2);
  auto* lin = seq[0]->as<nn::Linear>();
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->weight.sizes(), (Shape{3, 4}));
  EXPECT_EQ(seq[1]->as<nn::Linear>(), nullptr);
  EXPECT_NE(seq[1]->as<nn::ReLUImpl>(), nullptr);
  EXPECT_EQ((*seq->begin()).get<nn::Linear>().weight.sizes(), (Shape{3, 4}));
  EXPECT_THROW((*(seq->begin() + 1)).get<nn::Linear>(), ValueError);
  Tensor x = randn({5, 4});
  EXPECT_TRUE(allclose((*(seq->begin() + 2)).forward(seq[1]->as<nn::ReLUImpl>()->forward(lin->forward(x))),
                       seq->forward(x)));
}

class SaveLoad : public ::testing::Test {
 protected:
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gradlab_api_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
};

TEST_F(SaveLoad, TensorsAndTensorLists) {
  Tensor t = randn({3, 4}, kFloat64);
  save(t, dir / "t.st");
  Tensor back;
  load(back, dir / "t.st");
  EXPECT_TRUE(equal(back, t));
  EXPECT_EQ(back.dtype(), kFloat64);
  TensorList l{ones({2}), arange(3)}, lb;
  save(l, dir / "l.st");
  load(lb, dir / "l.st");
  ASSERT_EQ(lb.size(), 2u);
  EXPECT_TRUE(equal(lb[1], l[1]));
  EXPECT_EQ(lb[1].dtype(), kInt64);
  Tensor wrong;
  EXPECT_NE(message_of<IOError>([&] { load(wrong, dir / "l.st"); }).find("does not hold one tensor"),
            std::string::npos);
}

TEST_F(SaveLoad, OptimizerStateRoundTrips) {
  nn::Linear model(3, 2);
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
  Tensor x = randn({4, 3});
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    model->forward(x).pow(2).sum().backward();
    opt.step();
  }
  save(opt, dir / "opt.st");
  save(model, dir / "model.st");
  nn::Linear model2(3, 2);
  optim::Adam opt2(model2->parameters(), optim::AdamOptions(0.5));
  load(model2, dir / "model.st");
  load(opt2, dir / "opt.st");
  // one more identical step on both gives identical weights: moments, step count and lr loaded
  opt.zero_grad();
  model->forward(x).pow(2).sum().backward();
  opt.step();
  opt2.zero_grad();
  model2->forward(x).pow(2).sum().backward();
  opt2.step();
  EXPECT_TRUE(allclose(model2->weight, model->weight, 1e-6, 1e-7));
}

}  // namespace
