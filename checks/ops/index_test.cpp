// Indexing ops: index_select, gather, scatter_add, index_add, embedding.

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

using checks::i64;
using checks::ivals;
using checks::vals;
using ::testing::ElementsAre;

// x = [[1, 2, 3],
//      [4, 5, 6]]
Tensor x() { return tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}); }

TEST(Index, IndexSelect) {
  EXPECT_THAT(vals(index_select(x(), 1, i64({2, 0, 2}))), ElementsAre(3, 1, 3, 6, 4, 6));
  EXPECT_THAT(vals(x().index_select(0, i64({1}))), ElementsAre(4, 5, 6));
  EXPECT_EQ(index_select(x(), 1, i64({2, 0, 2})).sizes(), (Shape{2, 3}));
  EXPECT_EQ(index_select(x(), 0, tensor(std::initializer_list<int64_t>{})).sizes(), (Shape{0, 3}));
}

TEST(Index, Gather) {
  // out[i][j] = x[i][index[i][j]]
  Tensor g = gather(x(), 1, tensor({{2, 0}, {1, 1}}));
  EXPECT_THAT(vals(g), ElementsAre(3, 1, 5, 5));
  // dim 0: out[i][j] = x[index[i][j]][j]
  EXPECT_THAT(vals(x().gather(0, tensor({{1, 0, 1}}))), ElementsAre(4, 2, 6));
  // an index smaller than x in the other dim reads only that part
  EXPECT_THAT(vals(gather(x(), 1, tensor({1}).reshape({1, 1}))), ElementsAre(2));
}

TEST(Index, ScatterAdd) {
  // out = self; out[i][index[i][j]] += src[i][j]; repeated indices add up
  Tensor out = scatter_add(zeros({2, 3}), 1, tensor({{0, 0}, {2, 1}}), tensor({{1.0, 2.0}, {3.0, 4.0}}));
  EXPECT_THAT(vals(out), ElementsAre(3, 0, 0, 0, 4, 3));
  Tensor o0 = ones({3}).scatter_add(0, i64({2, 2, 0}), tensor({5.0, 6.0, 7.0}));
  EXPECT_THAT(vals(o0), ElementsAre(8, 1, 12));
}

TEST(Index, IndexAdd) {
  Tensor out = index_add(zeros({3, 2}), 0, i64({2, 0, 2}), tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  EXPECT_THAT(vals(out), ElementsAre(3, 4, 0, 0, 6, 8));
  Tensor o1 = index_add(ones({2, 2}), 1, i64({1}), tensor({10.0, 20.0}).reshape({2, 1}));
  EXPECT_THAT(vals(o1), ElementsAre(1, 11, 1, 21));
}

TEST(Index, Embedding) {
  Tensor w = tensor({{0.0, 0.5}, {1.0, 1.5}, {2.0, 2.5}});  // [V=3, D=2]
  Tensor e = embedding(w, tensor({{2, 0}, {1, 1}}));
  EXPECT_EQ(e.sizes(), (Shape{2, 2, 2}));
  EXPECT_THAT(vals(e), ElementsAre(2, 2.5, 0, 0.5, 1, 1.5, 1, 1.5));
  EXPECT_THAT(vals(nn::functional::embedding(i64({1}), w)), ElementsAre(1, 1.5));
}

}  // namespace
}  // namespace gradlab
