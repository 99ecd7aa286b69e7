// Data-parallel speed, under mpirun (every rank runs every benchmark; rank 0 reports):
//   * allreduce/<bytes>: distributed::all_reduce of a float32 buffer vs a raw MPI_Allreduce of the
//     same buffer (goal: >= 0.95x the raw bandwidth);
//   * step: one SGD step of an MLP with DDP (2 ranks, per-rank batch B) vs one process alone at
//     batch B (run on every rank at the same time, so both see the same loaded cores);
//   * overlap: the DDP step with bucket all-reduces started from the backward hooks vs all of
//     them started after the last gradient;
//   * hook/<none|fp16|bf16>: the DDP step with the gradient compression hooks (counter comm_MiB:
//     what each rank hands to the all-reduces per step), and allreduce/gradlab_all_reduce_bf16:
//     a bfloat16 buffer of the same element count (half the bytes).
// Across two "hosts" (network namespaces and a veth pair; root), the all-reduce rows only:
//   bash checks/distributed/netns_hosts.sh bench build/release/bench/bench_distributed
//
//   export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
//     mpirun -np 2 --oversubscribe build/release/bench/bench_distributed
//
// NOTE: iteration counts are fixed (Iterations): with Google Benchmark's adaptive counts the
// ranks could run different numbers of collectives and deadlock. For the same reason never pass
// --benchmark_enable_random_interleaving: each rank would shuffle differently, and two ranks in
// all_reduces of different sizes is undefined behaviour in MPI (Open MPI crashes).

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <gradlab/gradlab.hpp>

namespace gl = gradlab;
namespace dist = gradlab::distributed;
namespace nn = gradlab::nn;

namespace {

void set_bandwidth(benchmark::State& state, int64_t bytes) {
  // Bus bandwidth as nccl-tests count it for all-reduce: 2 (n - 1) / n of the buffer per rank.
  const double n = dist::get_world_size();
  state.counters["GB"] = benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(bytes) *
                                                2 * (n - 1) / n / 1e9,
                                            benchmark::Counter::kIsRate);
}

void BM_AllReduceRawMPI(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;
  gl::Tensor t = gl::ones({n});
  for (auto _ : state) MPI_Allreduce(MPI_IN_PLACE, t.data_ptr<float>(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  set_bandwidth(state, state.range(0));
}

// The same call on a duplicate of MPI_COMM_WORLD (as gradlab's group uses): separates the cost of
// gradlab's wrapper from any difference between communicators.
void BM_AllReduceRawMPIDupComm(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;
  gl::Tensor t = gl::ones({n});
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (auto _ : state) MPI_Allreduce(MPI_IN_PLACE, t.data_ptr<float>(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm);
  MPI_Comm_free(&comm);
  set_bandwidth(state, state.range(0));
}

void BM_AllReduceGradlab(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;
  gl::Tensor t = gl::ones({n});
  for (auto _ : state) dist::all_reduce(t);
  set_bandwidth(state, state.range(0));
}

void BM_AllReduceGradlabBF16(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;  // as many elements as the float32 rows
  gl::Tensor t = gl::ones({n}).to(gl::kBFloat16);
  for (auto _ : state) dist::all_reduce(t);
  set_bandwidth(state, state.range(0) / 2);
}

// ---- training steps ---------------------------------------------------------------------------

constexpr int64_t kBatch = 64;

nn::Sequential make_mlp() {
  gl::manual_seed(0);
  return nn::Sequential(nn::Linear(256, 1024), nn::ReLU(), nn::Linear(1024, 1024), nn::ReLU(), nn::Linear(1024, 1024),
                        nn::ReLU(), nn::Linear(1024, 10));
}

template <class Forward>
void run_steps(benchmark::State& state, nn::Module& params_of, Forward forward) {
  gl::optim::SGD opt(params_of.parameters(), gl::optim::SGDOptions(0.01));
  gl::Generator g(1);
  gl::Tensor x = gl::randn({kBatch, 256}, {}, &g);
  gl::Tensor y = gl::randint(0, 10, {kBatch}, {}, &g);
  for (auto _ : state) {
    opt.zero_grad();
    nn::functional::cross_entropy(forward(x), y).backward();
    opt.step();
  }
  state.counters["samples"] = benchmark::Counter(static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate);
}

void BM_StepSingleProcess(benchmark::State& state) {
  nn::Sequential m = make_mlp();
  run_steps(state, *m, [&](const gl::Tensor& x) { return m->forward(x); });
}

void BM_StepDDP(benchmark::State& state) {
  nn::Sequential m = make_mlp();
  // 1 MiB buckets: 6 buckets for this 2.4M-parameter model (9 MiB of float32 gradients).
  nn::parallel::DistributedDataParallel ddp(m, nn::parallel::DDPOptions().bucket_cap_mb(1).overlap(state.range(0) != 0));
  run_steps(state, ddp, [&](const gl::Tensor& x) { return ddp(x); });
  state.counters["buckets"] = static_cast<double>(ddp.stats().buckets);
  state.counters["early"] = static_cast<double>(ddp.stats().launched_during_backward);
}

void BM_StepHook(benchmark::State& state) {
  nn::Sequential m = make_mlp();
  nn::parallel::DistributedDataParallel ddp(m, nn::parallel::DDPOptions().bucket_cap_mb(1));
  if (state.range(0) == 1) ddp.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook);
  if (state.range(0) == 2) ddp.register_comm_hook(nn::parallel::comm_hooks::bf16_compress_hook);
  run_steps(state, ddp, [&](const gl::Tensor& x) { return ddp(x); });
  state.counters["comm_MiB"] = static_cast<double>(ddp.stats().comm_bytes) / (1 << 20);
}

// Ranks other than 0 run everything and report nothing.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

BENCHMARK(BM_AllReduceRawMPI)->Name("allreduce/raw_MPI_Allreduce")->Arg(1 << 20)->Arg(16 << 20)->Iterations(60)->UseRealTime();
BENCHMARK(BM_AllReduceRawMPIDupComm)->Name("allreduce/raw_MPI_Allreduce_dup_comm")->Arg(1 << 20)->Arg(16 << 20)->Iterations(60)->UseRealTime();
BENCHMARK(BM_AllReduceGradlab)->Name("allreduce/gradlab_all_reduce")->Arg(1 << 20)->Arg(16 << 20)->Iterations(60)->UseRealTime();
BENCHMARK(BM_AllReduceGradlabBF16)->Name("allreduce/gradlab_all_reduce_bf16")->Arg(1 << 20)->Arg(16 << 20)->Iterations(60)->UseRealTime();
BENCHMARK(BM_StepSingleProcess)->Name("step/single_process_batch64")->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepDDP)->Name("step/ddp_2ranks_batch64_per_rank")->Arg(1)->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepDDP)->Name("overlap/on")->Arg(1)->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepDDP)->Name("overlap/off")->Arg(0)->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepHook)->Name("hook/none")->Arg(0)->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepHook)->Name("hook/fp16")->Arg(1)->Iterations(30)->UseRealTime();
BENCHMARK(BM_StepHook)->Name("hook/bf16")->Arg(2)->Iterations(30)->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  dist::init_process_group("mpi", std::chrono::minutes(5));
  Silent silent;
  if (dist::get_rank() == 0) benchmark::RunSpecifiedBenchmarks();
  else benchmark::RunSpecifiedBenchmarks(&silent);
  benchmark::Shutdown();
  return 0;
}
