// A rank that fails must take the job down with its message, not leave the others waiting:
//   failure_mpi throw  rank 1 throws before the collective rank 0 waits in (the terminate
//                      handler of init_process_group aborts the job with the exception's text)
//   failure_mpi hang   rank 1 never joins the collective (rank 0's bounded wait aborts the job)
//   failure_mpi silent the same with a non-blocking all_reduce: rank 0's polled wait times out,
//                      asks its peers where they are, and names rank 1, which does not answer
//   failure_mpi uneven DDP where rank 1 has one batch fewer and no Join: rank 0's last backward
//                      waits for a bucket all-reduce rank 1 never starts, until the timeout
//   failure_mpi uneven_join  the same inside nn::parallel::Join: every rank finishes
// ctest checks the message and that mpirun returns within its TIMEOUT (checks/distributed/extras.cmake).

#include <chrono>
#include <cstdio>
#include <gradlab/gradlab.hpp>
#include <stdexcept>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  namespace dist = gradlab::distributed;
  const std::string mode = argc > 1 ? argv[1] : "throw";
  dist::init_process_group("mpi", std::chrono::seconds(mode == "throw" ? 60 : 2));
  gradlab::Tensor t = gradlab::ones({4});
  if (mode == "uneven" || mode == "uneven_join") {
    namespace nn = gradlab::nn;
    nn::parallel::DistributedDataParallel ddp(nn::Sequential(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 1)));
    gradlab::optim::SGD opt(ddp.parameters(), gradlab::optim::SGDOptions(0.1));
    const int batches = dist::get_rank() == 0 ? 3 : 2;
    auto train = [&] {
      for (int s = 0; s < batches; ++s) {
        opt.zero_grad();
        nn::functional::mse_loss(ddp(gradlab::ones({2, 3})), gradlab::zeros({2, 1})).backward();
        opt.step();
      }
    };
    if (mode == "uneven_join") {
      nn::parallel::Join join(ddp);
      train();
      join.join();
      std::printf("rank %d: uneven batches inside a Join: done\n", dist::get_rank());
      return 0;
    }
    train();
    if (dist::get_rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(120));
    std::printf("rank %d: the uneven run completed, which it must not\n", dist::get_rank());
    return 0;
  }
  if (dist::get_rank() == 1) {
    if (mode == "throw") throw std::runtime_error("planted failure on rank 1: loss is NaN at step 3");
    std::this_thread::sleep_for(std::chrono::seconds(120));  // hangs (killed by the abort)
  }
  if (mode == "silent") dist::all_reduce_async(t).wait();  // rank 0 polls here for rank 1
  else dist::all_reduce(t);  // rank 0 waits here for rank 1
  std::printf("rank %d: the all_reduce completed, which it must not\n", dist::get_rank());
  return 0;
}
