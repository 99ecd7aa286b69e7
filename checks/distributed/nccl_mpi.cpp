// The "nccl" backend under mpirun. With a GPU per rank: collectives on CUDA tensors and a DDP
// step equal the same on CPU. Without (as in CI): init_process_group("nccl") must fail with a
// clear DistributedError, and the GPU part is reported as skipped (never claimed).

#include <cstdio>
#include <gradlab/gradlab.hpp>
#include <string>

namespace gl = gradlab;
namespace dist = gradlab::distributed;

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) ++failures;
  std::printf("%s %s\n", ok ? "[ok]  " : "[FAIL]", what.c_str());
}
}  // namespace

int main() {
  const bool gpus = dist::is_nccl_available() && gl::cuda::is_available() && !gl::cuda::emulator::enabled();
  if (!gpus) {
    std::string what;
    try {
      dist::init_process_group("nccl");
    } catch (const dist::DistributedError& e) {
      what = e.what();
    }
    expect(what.find("init_process_group(\"nccl\")") == 0, "init_process_group(\"nccl\") without a GPU is a DistributedError: " + what);
    dist::init_process_group("mpi");  // the group still forms over MPI for the verdict
    std::printf("SKIPPED nccl collectives on CUDA tensors: %s\n",
                dist::is_nccl_available() ? gl::cuda::unavailable_reason().c_str() : "gradlab built without NCCL");
  } else {
    dist::init_process_group("nccl", std::chrono::seconds(60));
    const int n = dist::get_world_size(), r = dist::get_rank();
    gl::Tensor t = gl::full({1000}, r + 1.0, gl::TensorOptions().dtype(gl::kFloat64)).cuda();
    dist::all_reduce(t);
    expect(gl::equal(t.cpu(), gl::full({1000}, n * (n + 1) / 2.0, gl::TensorOptions().dtype(gl::kFloat64))), "all_reduce SUM on cuda");
    gl::Tensor a = gl::full({7}, r + 1.0).cuda();
    dist::all_reduce(a, dist::ReduceOp::AVG);
    expect(std::abs(a.cpu().to_vector<double>()[0] - (n + 1) / 2.0) < 1e-6, "all_reduce AVG on cuda");
    gl::Tensor b = gl::full({3}, static_cast<double>(r)).cuda();
    dist::broadcast(b, n - 1);
    expect(b.cpu().to_vector<double>()[0] == n - 1, "broadcast from the last rank on cuda");
    std::vector<gl::Tensor> parts(static_cast<size_t>(n));
    dist::all_gather(parts, gl::full({2}, static_cast<double>(r)).cuda());
    expect(parts.back().cpu().to_vector<double>()[1] == n - 1, "all_gather on cuda");
    gl::manual_seed(3);
    gl::nn::Linear m(4, 2);
    m->to(gl::Device(gl::kCUDA));
    gl::nn::parallel::DistributedDataParallel ddp(m);
    gl::Tensor x = gl::full({2, 4}, r + 1.0).cuda();
    ddp(x).sum().backward();
    // d/dW of sum(W x + b) over this rank's 2 rows = 2 (r + 1) per entry; averaged: (n + 1).
    expect(std::abs(m->weight.grad().cpu().to_vector<double>()[0] - (n + 1.0)) < 1e-5, "DDP averages CUDA gradients");
    dist::barrier();
  }
  gl::Tensor worst = gl::full({1}, failures, gl::TensorOptions().dtype(gl::kInt64));
  if (dist::get_backend() == "mpi") dist::all_reduce(worst, dist::ReduceOp::MAX);
  return worst.cpu().item<int64_t>() == 0 ? 0 : 1;
}
