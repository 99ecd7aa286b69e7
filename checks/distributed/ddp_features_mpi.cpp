// DDP beyond the plain path, with 2 ranks, each checked against the plain path or one process:
// float16 / bfloat16 collectives, communication hooks (allreduce, fp16 and bf16 compression:
// bytes and accuracy), gradient_as_bucket_view (same weights, one gradient copy less),
// static_graph (one graph walk), Join for uneven inputs, and ZeroRedundancyOptimizer (bitwise
// equal to the unsharded optimizer, half the state per rank, consolidated checkpoints).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <gradlab/gradlab.hpp>

#include "distributed/ddp_common.hpp"

namespace gradlab {
namespace {

namespace dist = distributed;
using checks::flat;
using checks::gather;
using checks::max_abs_diff;
using nn::parallel::DDPOptions;
using nn::parallel::DistributedDataParallel;
using ::testing::HasSubstr;

constexpr int64_t kB = 3;
constexpr int kSteps = 4;
constexpr uint64_t kSeed = 11;
const TensorOptions kF64 = TensorOptions().dtype(kFloat64);

int world() { return dist::get_world_size(); }
int rank() { return dist::get_rank(); }

nn::Sequential make_mlp(uint64_t seed, ScalarType dtype = kFloat64) {
  manual_seed(seed);
  nn::Sequential m(nn::Linear(4, 16), nn::Tanh(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 3));
  m->to(dtype);
  return m;
}
struct XY {
  Tensor x, y;
};
XY global_batch(int step, int64_t rows, ScalarType dtype = kFloat64) {
  Generator g(2000 + static_cast<uint64_t>(step));
  return {randn({rows, 4}, kF64, &g).to(dtype), randn({rows, 3}, kF64, &g).to(dtype)};
}
XY rows(const XY& b, int64_t start, int64_t n) { return {b.x.narrow(0, start, n), b.y.narrow(0, start, n)}; }

// DDP training with options `o`, an optional hook; returns the weights.
std::vector<double> train(const DDPOptions& o, nn::parallel::CommHook hook = nullptr,
                          ScalarType dtype = kFloat64, nn::parallel::DDPStats* stats = nullptr,
                          bool zero_to_none = true) {
  DistributedDataParallel ddp(make_mlp(kSeed + 5 * static_cast<uint64_t>(rank()), dtype), o);
  if (hook) ddp.register_comm_hook(hook);
  optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad(zero_to_none);
    XY b = rows(global_batch(s, world() * kB, dtype), rank() * kB, kB);
    nn::functional::mse_loss(ddp(b.x), b.y).backward();
    opt.step();
  }
  if (stats) *stats = ddp.stats();
  return flat(ddp.parameters());
}

TEST(HalfCollectives, Float16AndBFloat16SumAndMaxOverRanks) {
  for (ScalarType dt : {kFloat16, kBFloat16}) {
    // rank r holds [r + 0.5, -1 - r, 1024 + r]: sums 2.0, -3, and 2049, which neither type holds:
    // rounded once to the nearest (even) neighbour, 2048. (bf16 already rounds 1025 to 1024.)
    Tensor t = from_vector(std::vector<double>{rank() + 0.5, -1.0 - rank(), 1024.0 + rank()}, {3}).to(dt);
    Tensor m = t.clone();
    dist::all_reduce(t, dist::ReduceOp::SUM);
    dist::all_reduce(m, dist::ReduceOp::MAX);
    EXPECT_EQ(t.dtype(), dt);
    const std::vector<double> s = t.to_vector<double>(), x = m.to_vector<double>();
    EXPECT_EQ(s[0], 2.0);
    EXPECT_EQ(s[1], -3.0);
    EXPECT_EQ(s[2], 2048.0);
    EXPECT_EQ(x[0], 1.5);
    EXPECT_EQ(x[1], -1.0);
    Tensor a = from_vector(std::vector<double>{rank() * 2.0}, {1}).to(dt);
    dist::all_reduce(a, dist::ReduceOp::AVG);
    EXPECT_EQ(a.item<double>(), 1.0);
  }
}

TEST(CommHooks, AllreduceHookIsThePlainPathBitwise) {
  nn::parallel::DDPStats plain, hooked;
  const auto a = train(DDPOptions(), nullptr, kFloat64, &plain);
  const auto b = train(DDPOptions(), nn::parallel::comm_hooks::allreduce_hook, kFloat64, &hooked);
  EXPECT_EQ(a, b);
  EXPECT_EQ(plain.comm_bytes, hooked.comm_bytes);
  EXPECT_GT(plain.comm_bytes, 0);
}

TEST(CommHooks, CompressionHalvesTheBytesAndStaysCloseInFloat32) {
  nn::parallel::DDPStats plain, fp16, bf16;
  const auto a = train(DDPOptions(), nullptr, kFloat32, &plain);
  const auto h = train(DDPOptions(), nn::parallel::comm_hooks::fp16_compress_hook, kFloat32, &fp16);
  const auto b = train(DDPOptions(), nn::parallel::comm_hooks::bf16_compress_hook, kFloat32, &bf16);
  EXPECT_EQ(fp16.comm_bytes * 2, plain.comm_bytes);
  EXPECT_EQ(bf16.comm_bytes * 2, plain.comm_bytes);
  const double dh = max_abs_diff(a, h), db = max_abs_diff(a, b);
  std::printf("rank %d: max |weights - plain| after %d steps: fp16 hook %.3g, bf16 hook %.3g\n",
              rank(), kSteps, dh, db);
  EXPECT_GT(dh, 0.0) << "the fp16 hook must round something";
  EXPECT_LT(dh, 1e-3);
  EXPECT_LT(db, 1e-2);
  EXPECT_GT(db, dh) << "bfloat16 keeps fewer mantissa bits than float16";
  auto all = gather(h);
  EXPECT_EQ(all[0], all[1]) << "every rank must decompress the same sums";
}

TEST(CommHooks, RegisteringTwiceOrAfterTrainingIsAnError) {
  DistributedDataParallel ddp(make_mlp(kSeed));
  ddp.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook);
  try {
    ddp.register_comm_hook(nn::parallel::comm_hooks::bf16_compress_hook);
    FAIL() << "a second hook must be refused";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a hook is registered already"));
  }
}

TEST(GradientAsBucketView, SameWeightsAndTheGradientsLiveInTheBuckets) {
  const auto plain = train(DDPOptions());
  const auto view = train(DDPOptions().gradient_as_bucket_view(true));
  const auto view_kept = train(DDPOptions().gradient_as_bucket_view(true), nullptr, kFloat64, nullptr,
                               /*zero_to_none=*/false);
  EXPECT_EQ(view, plain);
  EXPECT_EQ(view_kept, plain);
  // After a backward the .grads are views of one bucket buffer; the plain path's are not.
  auto grads_after_backward = [](bool as_view, size_t* bytes_held) {
    DistributedDataParallel ddp(make_mlp(kSeed), DDPOptions().gradient_as_bucket_view(as_view));
    XY b = rows(global_batch(0, world() * kB), rank() * kB, kB);
    const size_t before = memory::allocated();
    nn::functional::mse_loss(ddp(b.x), b.y).backward();
    *bytes_held = memory::allocated() - before;
    return ddp.parameters();
  };
  size_t held_plain = 0, held_view = 0;
  const auto pg = grads_after_backward(false, &held_plain);
  const auto vg = grads_after_backward(true, &held_view);
  for (size_t i = 1; i < vg.size(); ++i) {
    EXPECT_TRUE(vg[i].grad().is_same_storage(vg[0].grad())) << "parameter " << i;
    EXPECT_FALSE(pg[i].grad().is_same_storage(pg[0].grad())) << "parameter " << i;
  }
  int64_t param_bytes = 0;
  for (const Tensor& p : vg) param_bytes += p.numel() * 8;
  std::printf("rank %d: memory held after backward: plain %zu bytes, gradient_as_bucket_view %zu "
              "(parameters %lld bytes)\n", rank(), held_plain, held_view, static_cast<long long>(param_bytes));
  // One parameter-sized copy less (the separate .grad tensors), give or take allocator rounding.
  EXPECT_GE(static_cast<int64_t>(held_plain) - static_cast<int64_t>(held_view), param_bytes * 9 / 10);
}

// A model whose second branch never reaches the loss.
struct TwoHeads : nn::Module {
  TwoHeads() : nn::Module("TwoHeads") {
    manual_seed(kSeed);
    used = register_module("used", nn::Linear(4, 3));
    unused = register_module("unused", nn::Linear(4, 3));
    to(kFloat64);
  }
  Tensor forward(const Tensor& x) { return used->forward(x); }
  nn::Linear used{nullptr}, unused{nullptr};
};

TEST(StaticGraph, WalksTheGraphOnceAndMatchesFindUnusedParameters) {
  auto run = [](const DDPOptions& o, nn::parallel::DDPStats* st) {
    auto m = std::make_shared<TwoHeads>();
    DistributedDataParallel ddp(m, o);
    optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      XY b = rows(global_batch(s, world() * kB), rank() * kB, kB);
      nn::functional::mse_loss(ddp(b.x), b.y).backward();
      opt.step();
    }
    *st = ddp.stats();
    EXPECT_FALSE(m->unused->weight.grad().defined()) << "a parameter no rank used keeps no gradient";
    return flat(ddp.parameters());
  };
  nn::parallel::DDPStats fu, sg, both;
  const auto a = run(DDPOptions().find_unused_parameters(true), &fu);
  const auto b = run(DDPOptions().static_graph(true), &sg);
  const auto c = run(DDPOptions().static_graph(true).find_unused_parameters(true), &both);
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a);
  EXPECT_EQ(fu.graph_walks, kSteps);
  EXPECT_EQ(sg.graph_walks, 1);
  EXPECT_EQ(both.graph_walks, 1);
}

// Rank r has kSteps - r batches. The oracle: one process whose step s loss is
// sum over the ranks r still training of mse(rank r's rows) / divisor.
std::vector<double> uneven_single(bool divide_by_initial) {
  nn::Sequential m = make_mlp(kSeed);
  optim::SGD opt(m->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    XY b = global_batch(s, world() * kB);
    Tensor loss;
    int active = 0;
    for (int r = 0; r < world(); ++r) {
      if (s >= kSteps - r) continue;
      XY mine = rows(b, r * kB, kB);
      Tensor l = nn::functional::mse_loss(m->forward(mine.x), mine.y);
      loss = loss.defined() ? loss + l : l;
      ++active;
    }
    (loss / static_cast<double>(divide_by_initial ? world() : active)).backward();
    opt.step();
  }
  return flat(m->parameters());
}

TEST(Join, UnevenInputsFinishAndEqualOneProcess) {
  for (bool initial : {true, false}) {
    DistributedDataParallel ddp(make_mlp(kSeed + 5 * static_cast<uint64_t>(rank())),
                                DDPOptions().bucket_cap_mb(1e-3));
    optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
    {
      nn::parallel::Join join(ddp, initial);
      for (int s = 0; s < kSteps - rank(); ++s) {
        opt.zero_grad();
        XY b = rows(global_batch(s, world() * kB), rank() * kB, kB);
        nn::functional::mse_loss(ddp(b.x), b.y).backward();
        opt.step();
      }
      join.join();
    }
    // The rank that joined early took the final model of the rank that trained to the end.
    const double d = max_abs_diff(flat(ddp.parameters()), uneven_single(initial));
    std::printf("rank %d: Join (divide_by_initial_world_size %d): max |DDP - one process| %.3g, "
                "joined steps %lld\n", rank(), initial, d, static_cast<long long>(ddp.stats().joined_steps));
    EXPECT_LE(d, 1e-12);
    EXPECT_EQ(ddp.stats().joined_steps, rank());
  }
}

// Four equal layers: the greedy partition can give each of 2 ranks exactly half.
nn::Sequential make_deep(uint64_t seed) {
  manual_seed(seed);
  nn::Sequential m(nn::Linear(4, 16), nn::Tanh(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 16),
                   nn::Tanh(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 3));
  m->to(kFloat64);
  return m;
}

TEST(ZeroRedundancyOptimizer, BitwiseEqualToTheUnshardedOptimizerWithHalfTheState) {
  for (int kind = 0; kind < 2; ++kind) {
    auto run = [&](bool sharded, int64_t* state_bytes, StateDict* sd) {
      DistributedDataParallel ddp(make_deep(kSeed + 5 * static_cast<uint64_t>(rank())));
      std::unique_ptr<optim::Optimizer> plain;
      std::unique_ptr<dist::ZeroRedundancyOptimizerBase> zero;
      if (kind == 0) {
        if (sharded) zero = std::make_unique<dist::ZeroRedundancyOptimizer<optim::SGD>>(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
        else plain = std::make_unique<optim::SGD>(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
      } else {
        if (sharded) zero = std::make_unique<dist::ZeroRedundancyOptimizer<optim::Adam>>(ddp.parameters(), optim::AdamOptions(1e-2));
        else plain = std::make_unique<optim::Adam>(ddp.parameters(), optim::AdamOptions(1e-2));
      }
      for (int s = 0; s < kSteps; ++s) {
        if (sharded) zero->zero_grad();
        else plain->zero_grad();
        XY b = rows(global_batch(s, world() * kB), rank() * kB, kB);
        nn::functional::mse_loss(ddp(b.x), b.y).backward();
        if (sharded) zero->step();
        else plain->step();
      }
      if (sharded) {
        *state_bytes = zero->state_bytes();
        zero->consolidate_state_dict(0);
        if (rank() == 0) *sd = zero->state_dict();
        else EXPECT_THROW(zero->state_dict(), ValueError);
      } else {
        int64_t bytes = 0;
        for (const Tensor& p : plain->parameters())
          for (const auto& [n, t] : plain->state(p)) bytes += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
        *state_bytes = bytes;
        *sd = plain->state_dict();
      }
      return flat(ddp.parameters());
    };
    int64_t full_bytes = 0, shard_bytes = 0;
    StateDict full_sd, zero_sd;
    const auto a = run(false, &full_bytes, &full_sd);
    const auto b = run(true, &shard_bytes, &zero_sd);
    EXPECT_EQ(a, b) << (kind == 0 ? "SGD" : "Adam");
    const auto shards = gather({static_cast<double>(shard_bytes)});
    std::printf("rank %d: %s state bytes: unsharded %lld, this rank's shard %lld\n", rank(),
                kind == 0 ? "SGD" : "Adam", static_cast<long long>(full_bytes), static_cast<long long>(shard_bytes));
    EXPECT_EQ(shards[0][0] + shards[1][0], static_cast<double>(full_bytes));
    EXPECT_LE(shard_bytes, full_bytes * 6 / 10) << "about 1/N of the state per rank";
    if (rank() == 0) {
      ASSERT_EQ(zero_sd.keys(), full_sd.keys());
      for (const auto& [key, t] : full_sd)
        EXPECT_EQ(zero_sd.at(key).to_vector<double>(), t.to_vector<double>()) << key;
    }
  }
}

TEST(ZeroRedundancyOptimizer, LoadsAnUnshardedStateDictAndContinuesIdentically) {
  // Two steps, a checkpoint of the plain Adam, two more: a sharded optimizer loaded from the
  // checkpoint must end where the plain one does.
  DistributedDataParallel ddp(make_mlp(kSeed));
  optim::Adam plain(ddp.parameters(), optim::AdamOptions(1e-2));
  auto step = [&](int s, auto& opt) {
    opt.zero_grad();
    XY b = rows(global_batch(s, world() * kB), rank() * kB, kB);
    nn::functional::mse_loss(ddp(b.x), b.y).backward();
    opt.step();
  };
  step(0, plain);
  step(1, plain);
  StateDict ckpt;
  for (const auto& [k, t] : plain.state_dict()) ckpt.insert(k, t.clone());
  std::vector<Tensor> weights;
  for (const Tensor& p : ddp.parameters()) weights.push_back(p.detach().clone());
  step(2, plain);
  step(3, plain);
  const auto want = flat(ddp.parameters());
  {
    NoGradGuard ng;
    for (size_t i = 0; i < weights.size(); ++i) ddp.parameters()[i].copy_(weights[i]);
  }
  dist::ZeroRedundancyOptimizer<optim::Adam> zero(ddp.parameters(), optim::AdamOptions(1e-2));
  zero.load_state_dict(ckpt);
  step(2, zero);
  step(3, zero);
  EXPECT_EQ(flat(ddp.parameters()), want);
}

}  // namespace
}  // namespace gradlab
