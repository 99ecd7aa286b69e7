// GRADLAB_DISTRIBUTED_DEBUG=DETAIL (set by ctest for this program): ranks that call different
// collectives get a DistributedError naming both calls, instead of MPI's undefined behaviour
// (without the check, Open MPI crashed on two all_reduces of different sizes).

#include <gradlab/gradlab.hpp>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

namespace dist = distributed;

TEST(DistributedDebugDetail, MatchingCollectivesRunAsUsual) {
  Tensor t = full({2}, 1.0, TensorOptions().dtype(kFloat64));
  dist::all_reduce(t);
  EXPECT_EQ(t.to_vector<double>()[0], dist::get_world_size());
  dist::barrier();
}

TEST(DistributedDebugDetail, DifferentSizesOnTheRanksAreAnError) {
  const int64_t n = dist::get_rank() == 0 ? 2 : 3;
  Tensor t = zeros({n}, TensorOptions().dtype(kFloat64));
  EXPECT_THROW_MSG(dist::all_reduce(t), dist::DistributedError, "all_reduce: the ranks called different collectives",
                   "rank 0: all_reduce (SUM, float64 [2])", "rank 1: all_reduce (SUM, float64 [3])");
  // The non-blocking path (DDP's) is checked too.
  EXPECT_THROW_MSG(dist::all_reduce_async(t), dist::DistributedError, "the ranks called different collectives");
}

TEST(DistributedDebugDetail, DifferentCollectivesAreAnError) {
  Tensor t = zeros({2}, TensorOptions().dtype(kFloat64));
  if (dist::get_rank() == 0) {
    EXPECT_THROW_MSG(dist::barrier(), dist::DistributedError, "rank 0: barrier", "rank 1: broadcast (src 0");
  } else {
    EXPECT_THROW_MSG(dist::broadcast(t, 0), dist::DistributedError, "rank 0: barrier");
  }
}

}  // namespace
}  // namespace gradlab
