// gradlab::distributed in one process without a group (the mpi-labelled tests run under mpirun):
// every entry point says clearly what is missing.

#include <gradlab/gradlab.hpp>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

namespace dist = distributed;

TEST(Distributed, CollectivesBeforeInitSayHowToStart) {
  EXPECT_FALSE(dist::is_initialized());
  Tensor t = zeros({2});
  EXPECT_THROW_MSG(dist::all_reduce(t), dist::DistributedError,
                   "all_reduce: the default process group is not initialized", "init_process_group(\"mpi\")");
  EXPECT_THROW_MSG(dist::get_rank(), dist::DistributedError, "get_rank: the default process group");
  EXPECT_THROW_MSG(dist::barrier(), dist::DistributedError, "barrier: the default process group");
  EXPECT_THROW(dist::broadcast(t, 0), dist::DistributedError);
}

TEST(Distributed, UnknownBackendIsAnError) {
  EXPECT_THROW_MSG(dist::init_process_group("gloo"), dist::DistributedError,
                   "init_process_group: unknown backend; expected \"mpi\" or \"nccl\", got \"gloo\"");
  EXPECT_FALSE(dist::is_initialized());
}

TEST(Distributed, DistributedDataParallelNeedsAGroup) {
  nn::Linear m(2, 2);
  EXPECT_THROW_MSG(nn::parallel::DistributedDataParallel(m), dist::DistributedError,
                   "DistributedDataParallel: the default process group is not initialized");
}

TEST(Distributed, ReduceOpNamesAndAvailability) {
  EXPECT_EQ(dist::to_string(dist::ReduceOp::SUM), "SUM");
  EXPECT_EQ(dist::to_string(dist::ReduceOp::AVG), "AVG");
  EXPECT_EQ(dist::to_string(dist::ReduceOp::MAX), "MAX");
#ifdef GRADLAB_TEST_HAVE_MPI
  EXPECT_TRUE(dist::is_mpi_available());
#else
  EXPECT_FALSE(dist::is_mpi_available());
  EXPECT_THROW_MSG(dist::init_process_group("mpi"), dist::DistributedError, "gradlab was built without MPI");
#endif
  EXPECT_FALSE(dist::is_launched()) << "ctest runs this binary without mpirun";
}

}  // namespace
}  // namespace gradlab
