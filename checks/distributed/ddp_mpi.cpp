// DistributedDataParallel with 2 ranks in float64: N ranks x batch B must train exactly like one
// process on the concatenated N * B batch, whatever the bucket size, with or without overlap,
// with no_sync accumulation, with unused parameters; plus state_dict keys and checkpoints.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <gradlab/gradlab.hpp>

#include "distributed/ddp_common.hpp"

namespace gradlab {
namespace {

namespace dist = distributed;
using nn::parallel::DDPOptions;
using nn::parallel::DistributedDataParallel;
using ::testing::HasSubstr;

constexpr int64_t kB = 3;      // rows per rank and step
constexpr int kSteps = 4;      // optimizer steps
constexpr uint64_t kSeed = 7;  // rank 0's (and the reference's) initialization
const TensorOptions kF64 = TensorOptions().dtype(kFloat64);

int world() { return dist::get_world_size(); }
int rank() { return dist::get_rank(); }

nn::Sequential make_mlp(uint64_t seed) {
  manual_seed(seed);
  nn::Sequential m(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 8), nn::Tanh(), nn::Linear(8, 3));
  m->to(kFloat64);
  return m;
}

struct XY {
  Tensor x, y;
};
// The global batch of a step (the same on every rank): rows [r B, (r + 1) B) are rank r's.
XY global_batch(int step, int64_t rows) {
  Generator g(1000 + static_cast<uint64_t>(step));
  return {randn({rows, 4}, kF64, &g), randn({rows, 3}, kF64, &g)};
}
XY rows(const XY& b, int64_t start, int64_t n) { return {b.x.narrow(0, start, n), b.y.narrow(0, start, n)}; }

using checks::flat;
using checks::gather;  // for "the replicas agree" and "the ranks differ" checks
using checks::max_abs_diff;

optim::SGD make_sgd(const std::vector<Tensor>& ps) { return optim::SGD(ps, optim::SGDOptions(0.1).momentum(0.9)); }

// One process, batch N * B: the oracle.
std::vector<double> train_single(int micro = 1) {
  nn::Sequential m = make_mlp(kSeed);
  optim::SGD opt = make_sgd(m->parameters());
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    XY b = global_batch(s, micro * world() * kB);
    nn::functional::mse_loss(m->forward(b.x), b.y).backward();
    opt.step();
  }
  return flat(m->parameters());
}

// N ranks, batch B each. Rank r starts from another seed: DDP's broadcast must fix that.
std::vector<double> train_ddp(const DDPOptions& o, nn::parallel::DDPStats* stats = nullptr) {
  DistributedDataParallel ddp(make_mlp(kSeed + 17 * static_cast<uint64_t>(rank())), o);
  optim::SGD opt = make_sgd(ddp.parameters());
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    XY b = rows(global_batch(s, world() * kB), rank() * kB, kB);
    nn::functional::mse_loss(ddp(b.x), b.y).backward();
    opt.step();
  }
  if (stats) *stats = ddp.stats();
  return flat(ddp.parameters());
}

TEST(DDP, ConstructionBroadcastsRankZerosWeights) {
  nn::Sequential m = make_mlp(kSeed + 17 * static_cast<uint64_t>(rank()));
  auto before = gather(flat(m->parameters()));
  EXPECT_GT(max_abs_diff(before[0], before[1]), 0.01) << "the ranks must start different";
  DistributedDataParallel ddp(m);
  auto after = gather(flat(m->parameters()));
  for (int r = 1; r < world(); ++r) EXPECT_EQ(after[static_cast<size_t>(r)], after[0]);
  EXPECT_EQ(after[0], before[0]);
}

TEST(DDP, KStepsEqualOneProcessOnTheConcatenatedBatch) {
  const std::vector<double> single = train_single();
  const std::vector<double> ddp = train_ddp(DDPOptions());
  const double d = max_abs_diff(ddp, single);
  std::printf("rank %d: max |DDP - single process| after %d steps: %.3g\n", rank(), kSteps, d);
  EXPECT_LE(d, 1e-12);
  // and not trivially: the weights moved
  EXPECT_GT(max_abs_diff(single, flat(make_mlp(kSeed)->parameters())), 1e-3);
  auto all = gather(ddp);
  for (int r = 1; r < world(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], all[0]) << "replicas drifted";
}

TEST(DDP, BucketSizesAndOverlapGiveIdenticalResults) {
  nn::parallel::DDPStats one, some, each, each_no_overlap;
  const auto a = train_ddp(DDPOptions(), &one);                                 // 25 MB: one bucket
  const auto b = train_ddp(DDPOptions().bucket_cap_mb(600e-6), &some);          // ~629 bytes
  const auto c = train_ddp(DDPOptions().bucket_cap_mb(1e-6), &each);            // one per parameter
  const auto d = train_ddp(DDPOptions().bucket_cap_mb(1e-6).overlap(false), &each_no_overlap);
  EXPECT_EQ(one.buckets, 1);
  EXPECT_GT(some.buckets, 1);
  EXPECT_LT(some.buckets, 6);
  EXPECT_EQ(each.buckets, 6);
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a);
  EXPECT_EQ(d, a);
  // Overlap: with a bucket per parameter, all-reduces start while backward still runs; with one
  // bucket, or overlap off, only at the end.
  EXPECT_GE(each.launched_during_backward, 4);
  EXPECT_EQ(one.launched_during_backward, 0);
  EXPECT_EQ(each_no_overlap.launched_during_backward, 0);
  EXPECT_EQ(each.reductions, kSteps);
}

TEST(DDP, BucketsFollowReverseParameterOrder) {
  DistributedDataParallel ddp(make_mlp(kSeed), DDPOptions().bucket_cap_mb(1e-6));
  auto idx = ddp.bucket_indices();
  ASSERT_EQ(idx.size(), 6u);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(idx[k], std::vector<int64_t>{static_cast<int64_t>(5 - k)});
}

TEST(DDP, NoSyncAccumulationEqualsOneSynchronizedStep) {
  const std::vector<double> single = train_single(/*micro=*/2);
  DistributedDataParallel ddp(make_mlp(kSeed));
  optim::SGD opt = make_sgd(ddp.parameters());
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    XY b = global_batch(s, 2 * world() * kB);
    {
      auto guard = ddp.no_sync();
      XY m0 = rows(b, rank() * kB, kB);  // micro-batch 0: rows [0, N B)
      (nn::functional::mse_loss(ddp(m0.x), m0.y) * 0.5).backward();
    }
    auto local = gather(flat({ddp.parameters()[0].grad()}));
    EXPECT_NE(local[0], local[1]) << "under no_sync the gradients must stay local";
    XY m1 = rows(b, (world() + rank()) * kB, kB);  // micro-batch 1: rows [N B, 2 N B)
    (nn::functional::mse_loss(ddp(m1.x), m1.y) * 0.5).backward();
    auto synced = gather(flat({ddp.parameters()[0].grad()}));
    EXPECT_EQ(synced[0], synced[1]);
    opt.step();
  }
  EXPECT_LE(max_abs_diff(flat(ddp.parameters()), single), 1e-12);
}

struct TwoHeadsImpl : nn::Module {
  nn::Linear used{nullptr}, unused{nullptr};
  TwoHeadsImpl() {
    used = register_module("used", nn::Linear(4, 3));
    unused = register_module("unused", nn::Linear(4, 3));
  }
  Tensor forward(const Tensor& x) { return used(x); }
};
GRADLAB_MODULE(TwoHeads);

TwoHeads make_two_heads(uint64_t seed) {
  manual_seed(seed);
  TwoHeads m;
  m->to(kFloat64);
  return m;
}

TEST(DDP, UnusedParametersRaisePyTorchsErrorAtTheNextForward) {
  DistributedDataParallel ddp(make_two_heads(kSeed));
  XY b = rows(global_batch(0, world() * kB), rank() * kB, kB);
  nn::functional::mse_loss(ddp(b.x), b.y).backward();  // 'unused' never gets a gradient
  try {
    ddp(b.x);
    FAIL() << "no error";
  } catch (const dist::DistributedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Expected to have finished reduction in the prior iteration before "
                                    "starting a new one"));
    EXPECT_THAT(e.what(), HasSubstr("find_unused_parameters"));
    EXPECT_THAT(e.what(), HasSubstr("module.unused.weight"));
  }
}

TEST(DDP, FindUnusedParametersTrainsLikeOneProcess) {
  TwoHeads ref = make_two_heads(kSeed);
  optim::SGD ropt = make_sgd(ref->parameters());
  DistributedDataParallel ddp(make_two_heads(kSeed + 3 * static_cast<uint64_t>(rank())),
                              DDPOptions().find_unused_parameters(true).bucket_cap_mb(1e-6));
  optim::SGD opt = make_sgd(ddp.parameters());
  for (int s = 0; s < kSteps; ++s) {
    ropt.zero_grad();
    XY g = global_batch(s, world() * kB);
    nn::functional::mse_loss(ref->forward(g.x), g.y).backward();
    ropt.step();
    opt.zero_grad();
    XY b = rows(g, rank() * kB, kB);
    nn::functional::mse_loss(ddp(b.x), b.y).backward();
    opt.step();
  }
  EXPECT_LE(max_abs_diff(flat(ddp.parameters()), flat(ref->parameters())), 1e-12);
  EXPECT_FALSE(ddp.module()->unused->weight.grad().defined()) << "unused on every rank: left alone";
  EXPECT_TRUE(ddp.module()->used->weight.grad().defined());
}

TEST(DDP, DifferentModelsOnTheRanksAreAnError) {
  manual_seed(1);
  nn::Linear m(4, rank() == 0 ? 3 : 5);
  try {
    DistributedDataParallel ddp(m);
    FAIL() << "no error";
  } catch (const dist::DistributedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 holds a different model than rank 0"));
  }
}

TEST(DDP, StateDictKeysCarryModulePrefixAndStripPrefixLoadsThem) {
  DistributedDataParallel ddp(make_mlp(kSeed));
  StateDict sd = ddp.state_dict();
  ASSERT_EQ(sd.size(), 6u);
  for (const auto& [k, t] : sd) EXPECT_EQ(k.rfind("module.", 0), 0u) << k;
  EXPECT_TRUE(sd.contains("module.0.weight"));
  nn::Sequential bare = make_mlp(99);
  try {
    bare->load_state_dict(sd);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("io::strip_prefix(dict, \"module.\")"));
  }
  EXPECT_TRUE(bare->load_state_dict(io::strip_prefix(sd, "module.")).ok());
  EXPECT_EQ(flat(bare->parameters()), flat(ddp.parameters()));
}

TEST(DDP, RankZeroWritesTheCheckpointAndEveryRankLoadsIt) {
  // Both ranks are children of the same mpirun: its pid names one folder for the job.
  const auto dir = std::filesystem::temp_directory_path() / ("gradlab_ddp_ckpt_" + std::to_string(::getppid()));
  if (rank() == 0) std::filesystem::remove_all(dir);
  dist::barrier();
  DistributedDataParallel ddp(make_mlp(kSeed));
  optim::SGD opt = make_sgd(ddp.parameters());
  XY b = rows(global_batch(0, world() * kB), rank() * kB, kB);
  nn::functional::mse_loss(ddp(b.x), b.y).backward();
  opt.step();
  io::CheckpointManager manager(dir, "ckpt", 0);
  if (rank() == 0) {
    io::Checkpoint c;
    c.model = ddp.state_dict();
    c.step = 1;
    manager.save(c);
  }
  dist::barrier();  // the file is complete before anyone reads it
  EXPECT_EQ(manager.list().size(), 1u) << "only rank 0 writes";
  DistributedDataParallel fresh(make_mlp(1234 + static_cast<uint64_t>(rank())));
  EXPECT_NE(flat(fresh.parameters()), flat(ddp.parameters()));
  auto c = manager.load_latest();
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(fresh.load_state_dict(c->model).ok());
  EXPECT_EQ(flat(fresh.parameters()), flat(ddp.parameters()));
  dist::barrier();
  if (rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradlab
