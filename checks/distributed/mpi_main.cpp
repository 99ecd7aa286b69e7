// main() of the tests that run under mpirun (label mpi): every rank joins the group, runs the
// same tests in the same order (collectives must match), and the job fails when any rank fails.

#include <gtest/gtest.h>

#include <chrono>
#include <gradlab/gradlab.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  namespace dist = gradlab::distributed;
  // A rank stuck in a collective (another rank failed an assertion and skipped one) ends the job
  // within a minute instead of hanging ctest.
  dist::init_process_group("mpi", std::chrono::seconds(60));
  const int rc = RUN_ALL_TESTS();
  gradlab::Tensor worst = gradlab::full({1}, rc, gradlab::TensorOptions().dtype(gradlab::kInt64));
  dist::all_reduce(worst, dist::ReduceOp::MAX);
  return static_cast<int>(worst.item<int64_t>());
}
