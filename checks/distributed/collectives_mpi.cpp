// Collectives over MPI with 2 (or more) ranks: results on every rank, and the errors.

#include <mpi.h>

#include <gradlab/distributed/backend.hpp>

#include <gradlab/gradlab.hpp>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

namespace dist = distributed;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const TensorOptions kF64 = TensorOptions().dtype(kFloat64);

// Rank r holds [r + 1, 10 (r + 1)].
Tensor rank_values(ScalarType dt = kFloat64) {
  const double r = dist::get_rank() + 1;
  return tensor({r, 10 * r}, TensorOptions().dtype(dt));
}

double sum_1_to(int n) { return n * (n + 1) / 2.0; }

TEST(Collectives, GroupKnowsRankAndSize) {
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_TRUE(dist::is_launched());
  EXPECT_EQ(dist::get_backend(), "mpi");
  EXPECT_GE(dist::get_world_size(), 2) << "run under mpirun -np 2";
  EXPECT_GE(dist::get_rank(), 0);
  EXPECT_LT(dist::get_rank(), dist::get_world_size());
}

TEST(Collectives, AllReduceSumAvgMax) {
  const int n = dist::get_world_size();
  for (ScalarType dt : {kFloat64, kFloat32, kInt64}) {
    Tensor s = rank_values(dt);
    dist::all_reduce(s);  // default SUM
    EXPECT_THAT(s.to_vector<double>(), ElementsAre(sum_1_to(n), 10 * sum_1_to(n))) << to_string(dt);
    Tensor m = rank_values(dt);
    dist::all_reduce(m, dist::ReduceOp::MAX);
    EXPECT_THAT(m.to_vector<double>(), ElementsAre(n, 10.0 * n)) << to_string(dt);
  }
  Tensor a = rank_values();
  dist::all_reduce(a, dist::ReduceOp::AVG);
  EXPECT_THAT(a.to_vector<double>(), ElementsAre(sum_1_to(n) / n, 10 * sum_1_to(n) / n));
}

TEST(Collectives, AsyncAllReduceIsThereAfterWait) {
  Tensor t = rank_values();
  dist::Work w = dist::all_reduce_async(t, dist::ReduceOp::AVG);
  w.wait();
  EXPECT_TRUE(w.is_completed());
  const int n = dist::get_world_size();
  EXPECT_DOUBLE_EQ(t.to_vector<double>()[0], sum_1_to(n) / n);
}

TEST(Collectives, BroadcastFromEachRank) {
  for (int src = 0; src < dist::get_world_size(); ++src) {
    Tensor t = rank_values();
    dist::broadcast(t, src);
    EXPECT_THAT(t.to_vector<double>(), ElementsAre(src + 1, 10.0 * (src + 1)));
  }
}

TEST(Collectives, BroadcastCoalescedMixesDtypes) {
  const double r = dist::get_rank();
  std::vector<Tensor> ts = {full({2, 2}, r, kF64), full({3}, r + 7, TensorOptions().dtype(kInt64)),
                            full({1}, r + 0.5, kF64)};
  dist::broadcast_coalesced(ts, 1);
  EXPECT_THAT(ts[0].to_vector<double>(), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(ts[1].to_vector<int64_t>(), ElementsAre(8, 8, 8));
  EXPECT_THAT(ts[2].to_vector<double>(), ElementsAre(1.5));
}

TEST(Collectives, AllGatherInRankOrder) {
  const int n = dist::get_world_size();
  std::vector<Tensor> out(static_cast<size_t>(n));
  dist::all_gather(out, rank_values().reshape({1, 2}));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(out[static_cast<size_t>(r)].sizes(), (Shape{1, 2}));
    EXPECT_THAT(out[static_cast<size_t>(r)].to_vector<double>(), ElementsAre(r + 1, 10.0 * (r + 1)));
  }
}

TEST(Collectives, ReduceScatterGivesEachRankItsBlock) {
  // inputs[k] on rank r = 100 k + r: rank k receives sum_r (100 k + r).
  const int n = dist::get_world_size(), me = dist::get_rank();
  std::vector<Tensor> in;
  for (int k = 0; k < n; ++k) in.push_back(full({3}, 100.0 * k + me, kF64));
  Tensor out = empty({3}, kF64);
  dist::reduce_scatter(out, in);
  const double want = 100.0 * me * n + (n - 1) * n / 2.0;
  EXPECT_THAT(out.to_vector<double>(), ElementsAre(want, want, want));
  dist::reduce_scatter(out, in, dist::ReduceOp::MAX);
  EXPECT_THAT(out.to_vector<double>(), ElementsAre(100.0 * me + n - 1, 100.0 * me + n - 1, 100.0 * me + n - 1));
}

TEST(Collectives, BarrierReturnsOnEveryRank) {
  dist::barrier();
  SUCCEED();
}

// Misuse is caught on the calling rank, before any message is sent (so both ranks throw alike).
TEST(Collectives, BadInputIsAClearErrorNamingTheCollective) {
  Tensor m = zeros({2, 3}, kF64);
  EXPECT_THROW_MSG(dist::all_reduce(m.t()), ValueError, "all_reduce: tensor must be contiguous");
  EXPECT_THROW_MSG(dist::all_reduce(zeros({2}, TensorOptions().dtype(kInt64)), dist::ReduceOp::AVG),
                   dist::DistributedError, "all_reduce: ReduceOp::AVG needs a floating-point tensor");
  EXPECT_THROW_MSG(dist::all_reduce(zeros({2}, TensorOptions().dtype(kBool))), dist::DistributedError,
                   "all_reduce: dtype not supported by the mpi backend");
  EXPECT_THROW_MSG(dist::broadcast(m, 7), ValueError, "broadcast: src is not a rank of the group");
  std::vector<Tensor> one(1);
  EXPECT_THROW_MSG(dist::all_gather(one, m), ValueError, "all_gather: one output tensor per rank");
  std::vector<Tensor> wrong(static_cast<size_t>(dist::get_world_size()), zeros({5}, kF64));
  EXPECT_THROW_MSG(dist::all_gather(wrong, m), ShapeError,
                   "all_gather: every output must have the input's shape and dtype");
  EXPECT_THROW_MSG(dist::reduce_scatter(m, {m}), ValueError, "reduce_scatter: one input tensor per rank");
  EXPECT_THROW_MSG(dist::init_process_group("mpi"), dist::DistributedError, "already initialized");
  if (cuda::is_available()) {
    EXPECT_THROW_MSG(dist::all_reduce(m.cuda()), dist::DistributedError, "the mpi backend cannot take");
  }
}

// What MPI itself reports becomes a DistributedError naming the collective and MPI's text.
TEST(Collectives, MpiErrorsBecomeExceptionsNamingTheCollective) {
  try {
    dist::detail::check_mpi(MPI_ERR_COUNT, "all_reduce");
    FAIL() << "no exception";
  } catch (const dist::DistributedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("all_reduce: MPI error"));
    EXPECT_THAT(e.what(), HasSubstr("invalid count"));
  }
  EXPECT_NO_THROW(dist::detail::check_mpi(MPI_SUCCESS, "all_reduce"));
  // And a real one from MPI: a receive on a communicator with a bad rank through the group's
  // error handler (MPI_ERRORS_RETURN) returns a code instead of aborting.
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  double x = 0;
  const int rc = MPI_Send(&x, 1, MPI_DOUBLE, dist::get_world_size() + 5, 0, comm);
  MPI_Comm_free(&comm);
  EXPECT_NE(rc, MPI_SUCCESS);
  EXPECT_THROW(dist::detail::check_mpi(rc, "send"), dist::DistributedError);
}

}  // namespace
}  // namespace gradlab
