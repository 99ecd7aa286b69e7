// Lesson 11: distributed data-parallel training.
//
// One process per device, each with a full replica of the model and 1/N of every batch; after
// backward the ranks average their gradients (one all-reduce), so every replica takes the same
// step. N ranks x batch B is then one process x batch N*B, which this lesson checks to 1e-12 in
// float64 on the digits MLP. Also: when to go distributed at all, why one process per device
// (DDP) scales and one process scattering to every device (DataParallel) does not, the
// DistributedSampler, the "module." prefix of a DDP state_dict, why single-device training
// must be right first, and what to reach for when plain DDP is not enough: ZeRO-1's sharded
// optimizer state and a gradient compression hook.
//
// It starts its own 2 ranks: run directly, it runs itself again under
// `mpirun -np 2 --oversubscribe`; only rank 0 prints, every claim is checked on every rank.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/lesson.hpp"
#include "common/util.hpp"

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace data = gradlab::data;
namespace dist = gradlab::distributed;
using nn::parallel::DistributedDataParallel;

namespace {

constexpr int64_t kB = 32;     // per-rank batch
constexpr int kSteps = 12;     // optimizer steps compared
constexpr uint64_t kSeed = 42; // loader seed and rank 0's initialization
const gl::TensorOptions kF64 = gl::TensorOptions().dtype(gl::kFloat64);

// True on every rank only when it is true on every rank: claims are decided together, so all
// ranks print (rank 0) and exit alike.
bool on_all_ranks(bool ok) {
  gl::Tensor bad = gl::full({1}, ok ? 0 : 1, gl::TensorOptions().dtype(gl::kInt64));
  dist::all_reduce(bad, dist::ReduceOp::MAX);
  return bad.item<int64_t>() == 0;
}

nn::Sequential make_mlp(uint64_t seed) {
  gl::manual_seed(seed);
  nn::Sequential m(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  m->to(gl::kFloat64);  // float64: the comparisons below are to 1e-12
  return m;
}

gl::optim::SGD make_sgd(const std::vector<gl::Tensor>& ps) {
  return gl::optim::SGD(ps, gl::optim::SGDOptions(0.05).momentum(0.9));
}

std::vector<double> flat(const std::vector<gl::Tensor>& ts) {
  std::vector<double> v;
  for (const gl::Tensor& t : ts)
    for (double x : t.to_vector<double>()) v.push_back(x);
  return v;
}

// This rank's vector from every rank.
std::vector<std::vector<double>> gather(const std::vector<double>& v) {
  gl::Tensor mine = gl::empty({static_cast<int64_t>(v.size())}, kF64);
  std::copy(v.begin(), v.end(), mine.data_ptr<double>());
  std::vector<gl::Tensor> all(static_cast<size_t>(dist::get_world_size()));
  dist::all_gather(all, mine);
  std::vector<std::vector<double>> out;
  for (const gl::Tensor& t : all) out.push_back(t.to_vector<double>());
  return out;
}

bool replicas_identical(const std::vector<gl::Tensor>& params) {
  auto all = gather(flat(params));
  for (const auto& v : all)
    if (v != all[0]) return false;
  return true;
}

// The batches of step s for every rank together: what one process with batch N*B would take.
gl::Tensor global_indices(size_t n, int world, uint64_t epoch, int step) {
  std::vector<int64_t> idx;
  for (int r = 0; r < world; ++r) {
    auto mine = data::DistributedSampler(r, world).indices(n, kSeed, epoch);
    for (int64_t j = step * kB; j < (step + 1) * kB; ++j) idx.push_back(mine[static_cast<size_t>(j)]);
  }
  gl::Tensor t = gl::empty({static_cast<int64_t>(idx.size())}, gl::TensorOptions().dtype(gl::kInt64));
  std::copy(idx.begin(), idx.end(), t.data_ptr<int64_t>());
  return t;
}

struct Digits {
  gl::Tensor x, y;
  size_t n() const { return static_cast<size_t>(x.size(0)); }
};

// One process, batch N*B, on exactly the samples the ranks see together. `zero_grad` false plants
// the classic bug of section 6.
std::vector<double> train_single(const Digits& d, int world, bool zero_grad = true) {
  nn::Sequential m = make_mlp(kSeed);
  auto opt = make_sgd(m->parameters());
  for (int s = 0; s < kSteps; ++s) {
    if (zero_grad) opt.zero_grad();
    gl::Tensor idx = global_indices(d.n(), world, 0, s);
    nn::functional::cross_entropy(m->forward(d.x.index_select(0, idx)), d.y.index_select(0, idx)).backward();
    opt.step();
  }
  return flat(m->parameters());
}

// N ranks, batch B each, through DistributedSampler + DataLoader + DDP.
std::vector<double> train_ddp(const Digits& d, bool zero_grad = true) {
  // Each rank initializes differently on purpose: DDP broadcasts rank 0's weights.
  DistributedDataParallel ddp(make_mlp(kSeed + 1000 * static_cast<uint64_t>(dist::get_rank())));
  auto opt = make_sgd(ddp.parameters());
  data::DataLoader loader(data::TensorDataset(d.x, d.y),
                          data::DataLoaderOptions(kB).seed(kSeed).sampler(std::make_shared<data::DistributedSampler>(
                              dist::get_rank(), dist::get_world_size())));
  int s = 0;
  for (data::Batch& b : loader) {
    if (zero_grad) opt.zero_grad();
    nn::functional::cross_entropy(ddp(b.data), b.target).backward();
    opt.step();
    if (++s == kSteps) break;
  }
  return flat(ddp.parameters());
}

// Section 7's compression run: float32 DDP on the digits for `epochs` epochs through `hook`
// (nullptr: the plain all-reduce); test accuracy in %, and the bytes all-reduced per step.
struct HookRun {
  double accuracy = 0;
  int64_t bytes = 0;
};
HookRun train_with_hook(const gl::data::DigitsSplit& split, nn::parallel::CommHook hook) {
  gl::manual_seed(kSeed);
  nn::Sequential m(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  DistributedDataParallel ddp(m);
  if (hook) ddp.register_comm_hook(hook);
  auto opt = make_sgd(ddp.parameters());
  data::DataLoader loader(data::TensorDataset(split.train.data(), split.train.targets()),
                          data::DataLoaderOptions(kB).seed(kSeed).sampler(std::make_shared<data::DistributedSampler>(
                              dist::get_rank(), dist::get_world_size())));
  for (int epoch = 0; epoch < 3; ++epoch)
    for (data::Batch& b : loader) {
      opt.zero_grad();
      nn::functional::cross_entropy(ddp(b.data), b.target).backward();
      opt.step();
    }
  gl::NoGradGuard ng;
  const gl::Tensor pred = m->forward(split.test.data()).argmax(1);
  const double correct = pred.eq(split.test.targets()).to(gl::kFloat64).sum().item<double>();
  return {100.0 * correct / static_cast<double>(split.test.targets().numel()), ddp.stats().comm_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  // NOTE: Open MPI refuses to start as root unless both variables are set, and the containers
  // this course runs in are root; the library never allows it by itself, so the lesson says so
  // here (a value the user already set is kept).
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  // Not under mpirun: start 2 ranks of this same program and report their exit status.
  if (auto rc = dist::relaunch_with_mpirun(2, argc, argv)) return *rc;
  dist::init_process_group("mpi", std::chrono::seconds(120));
  const int rank = dist::get_rank(), world = dist::get_world_size();
  if (rank != 0) std::cout.setstate(std::ios::badbit);  // one voice: rank 0 prints

  lesson::Lesson L("11", "distributed data parallel", argc, argv,
                   {{"no_sync_left_on", "a no_sync() guard from gradient-accumulation code is still alive at backward",
                     "every rank holds every parameter and the same averaged gradient"},
                    {"chunk_losses_summed", "the chunks' mean losses are summed instead of one mean over the gathered outputs",
                     "scatter/gather in one process gives the full-batch gradient"},
                    {"imbalance_no_sync", "section 2's imbalance run steps under no_sync(): no all-reduce, so no rank waits",
                     "the fast rank waits for the slow one at the all-reduce"},
                    {"one_bucket", "DDP keeps its default bucket_cap_mb (25 MB) on a 77 KB model: one bucket",
                     "at least one bucket's all-reduce started before backward finished"},
                    {"seed_per_rank", "each rank's loader is seeded with seed + rank: the shards no longer partition the data",
                     "per epoch the ranks' shards are disjoint and cover the data"},
                    {"load_non_strict", "the bare model loads the DDP dict with strict = false: nothing matches, nothing is said",
                     "a bare model rejects them, and the error says how to remap"}});
  return L.run([&] {
    // NOTE: a rank that throws must take the job down (the others would wait in their next
    // collective); abort_job prints the error with the rank.
    try {
      gl::data::DigitsSplit split = gl::data::load_digits_split();
      const Digits d{split.train.data().to(gl::kFloat64), split.train.targets()};
      const int64_t nparams = make_mlp(kSeed)->num_parameters();

      L.section("1. when to go distributed: memory or time");
      L.say("go distributed when one device is too slow (time) or too small (memory).");
      L.say("data parallelism buys time: every rank holds the whole model and 1/N of each batch.");
      const double state_mb = 4.0 * static_cast<double>(nparams) * 8 / 1e6;  // params, grads, 2 Adam moments
      L.say("this MLP: " + std::to_string(nparams) + " parameters; weights + grads + Adam state in float64: " +
            lesson::fmt(state_mb, 2) + " MB per rank, the same on every rank.");
      {
        // One synchronized backward on this rank's own batch: measured, every rank then holds a
        // gradient for every parameter, and the same one (the average over the ranks).
        DistributedDataParallel probe(make_mlp(kSeed));
        gl::Tensor idx = global_indices(d.n(), world, 0, 0).narrow(0, rank * kB, kB);
        {
          std::optional<nn::parallel::DistributedDataParallelBase::NoSyncGuard> left_on;
          if (L.bug("no_sync_left_on")) left_on.emplace(probe);  // as `auto guard = ddp.no_sync();`
          nn::functional::cross_entropy(probe(d.x.index_select(0, idx)), d.y.index_select(0, idx)).backward();
        }
        int64_t with_grad = 0;
        std::vector<gl::Tensor> grads;
        for (const gl::Tensor& p : probe.parameters())
          if (p.grad().defined()) with_grad += p.numel(), grads.push_back(p.grad());
        const auto all_grads = gather(flat(grads));
        bool same = true;
        for (const auto& g : all_grads) same = same && g == all_grads[0];
        L.say("after one backward: " + std::to_string(with_grad) + " of " + std::to_string(nparams) +
              " parameters hold a gradient on this rank; the ranks' gradients " + (same ? "agree" : "differ"));
        L.check(on_all_ranks(with_grad == nparams && same),
                "every rank holds every parameter and the same averaged gradient: DDP divides the data, not the "
                "model's memory");
      }
      const auto per_rank = data::DistributedSampler(rank, world).num_samples(d.n());
      L.say("samples per epoch: " + std::to_string(d.n()) + " in one process, " + std::to_string(per_rank) +
            " per rank with " + std::to_string(world) + " ranks.");
      L.check(on_all_ranks(per_rank == (d.n() + 1) / 2), "each rank computes on half the data: up to 2x less time");
      L.say("a model too big for one device needs model/pipeline/sharded parallelism: not this lesson.");

      L.section("2. DataParallel (one process) vs DistributedDataParallel (one process per device)");
      L.say("DataParallel: one process copies the weights to every device, scatters the batch,");
      L.say("gathers the outputs on device 0, and reduces the gradients back there, every step.");
      L.say("its replicas run in Python threads of that one process, and a thread runs Python code only");
      L.say("while it holds the interpreter lock (the GIL): the replicas' Python work takes turns.");
      L.say("below, its steps in one process: N replicas in N threads, each holding a \"GIL\" mutex for its forward.");
      {
        // One DataParallel step: replicate, scatter, parallel_apply (threads), gather, one loss,
        // backward through the replicas, reduce their gradients into the master. Correct, but all
        // of it runs (and is copied) in this one process, and every step copies the weights again.
        nn::Sequential master = make_mlp(kSeed);
        gl::Tensor idx = global_indices(d.n(), world, 0, 0);
        gl::Tensor x = d.x.index_select(0, idx), y = d.y.index_select(0, idx);
        nn::functional::cross_entropy(master->forward(x), y).backward();
        const auto whole = flat({master->parameters()[0].grad()});
        master->zero_grad();
        std::vector<nn::Sequential> replicas;
        int64_t copied = 0;
        for (int c = 0; c < world; ++c) {  // replicate: the weights copied to every device, this step
          replicas.push_back(make_mlp(kSeed + 77));
          gl::NoGradGuard ng;
          for (size_t i = 0; i < master->parameters().size(); ++i) {
            replicas.back()->parameters()[i].copy_(master->parameters()[i]);
            copied += master->parameters()[i].numel();
          }
        }
        std::mutex gil;
        int inside = 0, most_inside = 0;
        std::vector<gl::Tensor> outs(static_cast<size_t>(world));
        std::vector<std::thread> threads;
        for (int c = 0; c < world; ++c)
          threads.emplace_back([&, c] {
            std::lock_guard<std::mutex> hold(gil);  // the replica's Python code needs the GIL
            most_inside = std::max(most_inside, ++inside);
            outs[static_cast<size_t>(c)] = replicas[static_cast<size_t>(c)]->forward(x.narrow(0, c * kB, kB));
            --inside;
          });
        for (std::thread& t : threads) t.join();
        if (L.bug("chunk_losses_summed")) {  // each chunk's mean loss, summed: the gradient x N
          gl::Tensor loss = gl::zeros({}, kF64);
          for (int64_t c = 0; c < world; ++c)
            loss = loss + nn::functional::cross_entropy(outs[static_cast<size_t>(c)], y.narrow(0, c * kB, kB));
          loss.backward();
        } else {
          nn::functional::cross_entropy(gl::cat(outs, 0), y).backward();  // gather on device 0, one loss
        }
        {  // reduce: the replicas' gradients summed into the master's, on device 0
          gl::NoGradGuard ng;
          for (size_t i = 0; i < master->parameters().size(); ++i) {
            gl::Tensor g = gl::zeros_like(master->parameters()[i]);
            for (const nn::Sequential& r : replicas) g = g + r->parameters()[i].grad();
            master->parameters()[i].mutable_grad() = g;
          }
        }
        const double dp = lesson::max_abs_diff(flat({master->parameters()[0].grad()}), whole);
        L.say(std::to_string(world) + " replicas in " + std::to_string(world) + " threads; at most " +
              std::to_string(most_inside) + " ran its forward at a time (the GIL); weights copied this step: " +
              std::to_string(copied) + " numbers (" + std::to_string(world) + " x " + std::to_string(nparams) +
              "), and again at every step");
        L.check(on_all_ranks(dp <= 1e-12),
                "scatter/gather in one process gives the full-batch gradient (max diff " +
                    lesson::relation(dp, 1e-15) + ")");  // rounding noise (~1e-17) prints as noise
      }
      {
        DistributedDataParallel probe(make_mlp(kSeed));
        int64_t in_buckets = 0;
        for (const auto& bucket : probe.bucket_indices())
          for (int64_t i : bucket) in_buckets += probe.parameters()[static_cast<size_t>(i)].numel();
        L.say("DDP: each rank runs its own forward and backward; only gradients travel: " +
              std::to_string(in_buckets) + " numbers per step, whatever the batch size,");
        L.say("in buckets whose all-reduce starts during backward, on every rank at once.");
        L.check(on_all_ranks(in_buckets == nparams), "DDP's buckets hold exactly the parameters' gradients, once");
        // 77 KB of gradients fill one bucket of the default 25 MB: nothing could start before
        // backward ends. With 0.02 MB buckets (about 20 KB) there are several, and the first one,
        // the last layer's gradients (buckets go in reverse order), starts while backward still
        // computes the first layer's.
        const double cap = L.bug("one_bucket") ? 25.0 : 0.02;
        DistributedDataParallel small(make_mlp(kSeed), nn::parallel::DDPOptions().bucket_cap_mb(cap));
        gl::Tensor idx = global_indices(d.n(), world, 0, 0).narrow(0, rank * kB, kB);
        nn::functional::cross_entropy(small(d.x.index_select(0, idx)), d.y.index_select(0, idx)).backward();
        const auto& st = small.stats();
        L.say("bucket_cap_mb(" + lesson::fmt(cap, 2) + "): " + std::to_string(st.buckets) + " buckets, " +
              std::to_string(st.launched_during_backward) + " of them all-reduced while backward still ran");
        L.check(on_all_ranks(st.buckets >= 2 && st.launched_during_backward >= 1),
                "with small buckets, at least one bucket's all-reduce started before backward finished (the overlap)");
        L.say("so the work per rank stays constant as ranks are added: that is why DDP scales.");
      }
      {
        // Load imbalance: the all-reduce inside backward waits for every rank, so each step ends
        // when the slowest rank's gradients arrive. The last rank sleeps 40 ms per step (standing
        // for a slower GPU, a slower loader, more tokens in its batch); the other does not.
        constexpr int kDelayMs = 40;
        DistributedDataParallel ddp(make_mlp(kSeed));
        auto opt = make_sgd(ddp.parameters());
        std::vector<double> ms;
        for (int s = 0; s < 6; ++s) {
          gl::Tensor idx = global_indices(d.n(), world, 0, s).narrow(0, rank * kB, kB);
          gl::Tensor xb = d.x.index_select(0, idx), yb = d.y.index_select(0, idx);
          dist::barrier();  // every step starts together
          const auto t0 = std::chrono::steady_clock::now();
          opt.zero_grad();
          if (rank == world - 1) std::this_thread::sleep_for(std::chrono::milliseconds(kDelayMs));  // planted
          {
            std::optional<nn::parallel::DistributedDataParallelBase::NoSyncGuard> local;
            if (L.bug("imbalance_no_sync")) local.emplace(ddp);  // no all-reduce: nobody waits
            nn::functional::cross_entropy(ddp(xb), yb).backward();
          }
          opt.step();
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        const auto medians = gather({0.5 * (ms[2] + ms[3])});  // median of 6 steps, per rank
        const double fast = medians[0][0], slow = medians[static_cast<size_t>(world - 1)][0];
        L.say("load imbalance: rank " + std::to_string(world - 1) + " sleeps " + std::to_string(kDelayMs) +
              " ms per step before its forward; median step time: rank 0 " + lesson::fmt(fast, 1) + " ms, rank " +
              std::to_string(world - 1) + " " + lesson::fmt(slow, 1) + " ms");
        L.check(on_all_ranks(slow >= 0.9 * kDelayMs && fast >= 0.5 * slow),
                "the fast rank waits for the slow one at the all-reduce: its median step is at least half the "
                "slow rank's (rank 0 alone would take a few ms)");
        L.say("so a step takes as long as the slowest rank's: balance the work (same batch sizes, sequence");
        L.say("lengths bucketed, equal devices) or the fast ranks idle at every all-reduce.");
      }

      L.section("3. init_process_group + DistributedDataParallel + DistributedSampler");
      L.say("rank " + std::to_string(rank) + " of " + std::to_string(world) + ", backend " + dist::get_backend());
      {
        nn::Sequential mine = make_mlp(kSeed + 1000 * static_cast<uint64_t>(rank));
        const bool differ = !replicas_identical(mine->parameters());
        DistributedDataParallel ddp(mine);
        L.check(on_all_ranks(differ && replicas_identical(mine->parameters())),
                "the ranks initialized differently; DDP's constructor broadcast rank 0's weights to all");
        auto ids = data::DistributedSampler(rank, world).indices(d.n(), kSeed, 0);
        std::vector<double> as_double(ids.begin(), ids.end());
        auto all = gather(as_double);
        std::set<double> seen;
        size_t total = 0;
        for (const auto& v : all) {
          seen.insert(v.begin(), v.end());
          total += v.size();
        }
        L.say("DistributedSampler: " + std::to_string(d.n()) + " samples -> " + std::to_string(all[0].size()) +
              " per rank (" + std::to_string(total - d.n()) + " repeated to even out the ranks)");
        L.check(on_all_ranks(seen.size() == d.n() && total - d.n() < static_cast<size_t>(world)),
                "together the shards cover every sample; fewer than N are repeated (the padding)");
        // Through the DataLoader, as training sees it: loader.set_epoch(e) at the start of each
        // epoch, every rank's sample indices gathered and compared.
        data::DataLoader loader(
            data::TensorDataset(d.x, d.y),
            data::DataLoaderOptions(kB).seed(L.bug("seed_per_rank") ? kSeed + static_cast<uint64_t>(rank) : kSeed)
                .sampler(std::make_shared<data::DistributedSampler>(rank, world)));
        std::vector<std::vector<std::vector<double>>> per_epoch;  // [epoch][rank] -> indices
        for (uint64_t e = 0; e < 2; ++e) {
          loader.set_epoch(e);
          std::vector<double> got;
          for (data::Batch& b : loader) got.insert(got.end(), b.indices.begin(), b.indices.end());
          per_epoch.push_back(gather(got));
        }
        bool partition = true, reshuffled = true;
        for (int e = 0; e < 2; ++e) {
          std::set<double> u;
          size_t tot = 0;
          for (const auto& v : per_epoch[static_cast<size_t>(e)]) u.insert(v.begin(), v.end()), tot += v.size();
          partition = partition && u.size() == d.n() && tot - d.n() < static_cast<size_t>(world);
        }
        for (int r = 0; r < world; ++r) reshuffled = reshuffled && per_epoch[0][static_cast<size_t>(r)] != per_epoch[1][static_cast<size_t>(r)];
        L.say("loader.set_epoch(0), set_epoch(1): rank 0's first indices " +
              lesson::fmt(per_epoch[0][0][0], 0) + ", " + lesson::fmt(per_epoch[0][0][1], 0) + " then " +
              lesson::fmt(per_epoch[1][0][0], 0) + ", " + lesson::fmt(per_epoch[1][0][1], 0));
        L.check(on_all_ranks(partition && reshuffled),
                "per epoch the ranks' shards are disjoint and cover the data (set_epoch), and each rank's shard "
                "changes from epoch to epoch");
      }

      L.section("4. N ranks x batch B == one process x batch N*B");
      const auto single = train_single(d, world);
      const auto ddp = train_ddp(d);
      const double diff = lesson::max_abs_diff(ddp, single);
      L.say(std::to_string(world) + " ranks x batch " + std::to_string(kB) + ", " + std::to_string(kSteps) +
            " SGD steps vs 1 process x batch " + std::to_string(world * kB) + ":");
      // NOTE: rounding noise below 1e-15 (8.3e-17 with one BLAS kernel, 5.6e-17 with another).
      L.say("max |weight difference| " + lesson::relation(diff, 1e-15));
      L.check(on_all_ranks(diff <= 1e-12), "the same weights, to 1e-12: DDP averages the ranks' gradients");
      const auto replicas = gather(ddp);
      L.check(on_all_ranks(replicas.front() == replicas.back()), "and every replica holds bit-identical weights");
      L.check(on_all_ranks(lesson::max_abs_diff(single, flat(make_mlp(kSeed)->parameters())) > 1e-3),
              "(the weights did move: the comparison is not between two untouched models)");

      L.section("5. the module. prefix of a DDP state_dict");
      {
        DistributedDataParallel wrapped(make_mlp(kSeed));
        gl::StateDict sd = wrapped.state_dict();
        L.say("DDP keys: " + lesson::join(sd.keys()));
        nn::Sequential bare = make_mlp(7);
        std::string why;
        try {
          bare->load_state_dict(sd, /*strict=*/!L.bug("load_non_strict"));
        } catch (const std::exception& e) {
          why = e.what();
        }
        const std::string first = why.substr(0, why.find('\n'));
        L.say(why.empty() ? std::string("         (no exception was thrown)")
                          : "         error: " + first + (first.size() < why.size() ? " ..." : ""));
        L.check(on_all_ranks(why.find("io::strip_prefix(dict, \"module.\")") != std::string::npos),
                "a bare model rejects them, and the error says how to remap (lesson 09), on every rank");
        L.check(on_all_ranks(bare->load_state_dict(io::strip_prefix(sd, "module.")).ok() &&
                             flat(bare->parameters()) == flat(wrapped.parameters())),
                "io::strip_prefix(dict, \"module.\") loads them into the bare model");
        const auto path = lesson::output_dir() / "lesson11_ddp.safetensors";
        if (rank == 0) gl::save(wrapped.state_dict(), path);  // one writer
        dist::barrier();                                     // the file is complete
        DistributedDataParallel fresh(make_mlp(5 + static_cast<uint64_t>(rank)));
        fresh.load_state_dict(gl::load(path));
        L.check(on_all_ranks(flat(fresh.parameters()) == flat(wrapped.parameters())),
                "rank 0 saves, barrier, every rank loads: all replicas hold the saved weights");
      }

      L.section("6. get single-device training right first");
      L.say("a bug in the training step runs on every rank alike: forgetting zero_grad() here.");
      const auto single_bug = train_single(d, world, /*zero_grad=*/false);
      const auto ddp_bug = train_ddp(d, /*zero_grad=*/false);
      L.check(on_all_ranks(lesson::max_abs_diff(ddp_bug, single_bug) <= 1e-12),
              "DDP reproduces the one-process bug exactly: it neither hides nor fixes it");
      L.check(on_all_ranks(lesson::max_abs_diff(single_bug, single) > 1e-3),
              "and the buggy run differs from the correct one");
      L.say("so debug on one device (lessons 03-10: gradcheck, overfit a batch, resume), where runs");
      L.say("are cheap and deterministic; then distribute, and check N x B == N*B as above.");

      L.section("7. when DDP is not enough: ZeRO-1 and gradient compression");
      L.say("every DDP rank keeps the whole optimizer state (Adam: two moments per weight).");
      L.say("ZeroRedundancyOptimizer (ZeRO stage 1) gives each parameter one owner rank that keeps its state");
      L.say("and updates it; the owners then broadcast the new weights.");
      {
        // Four 64 x 64 layers: tensors of equal size, which the owners can split evenly.
        auto make_deep = [] {
          gl::manual_seed(kSeed);
          nn::Sequential m(nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 64),
                           nn::ReLU(), nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 10));
          m->to(gl::kFloat64);
          return m;
        };
        auto adam_run = [&](bool sharded, int64_t* state_bytes) {
          DistributedDataParallel ddp(make_deep());
          std::unique_ptr<gl::optim::Adam> plain;
          std::unique_ptr<dist::ZeroRedundancyOptimizer<gl::optim::Adam>> zero;
          if (sharded) zero = std::make_unique<dist::ZeroRedundancyOptimizer<gl::optim::Adam>>(ddp.parameters(), gl::optim::AdamOptions(1e-3));
          else plain = std::make_unique<gl::optim::Adam>(ddp.parameters(), gl::optim::AdamOptions(1e-3));
          for (int s = 0; s < 4; ++s) {
            if (sharded) zero->zero_grad();
            else plain->zero_grad();
            gl::Tensor idx = global_indices(d.n(), world, 0, s).narrow(0, rank * kB, kB);
            nn::functional::cross_entropy(ddp(d.x.index_select(0, idx)), d.y.index_select(0, idx)).backward();
            if (sharded) zero->step();
            else plain->step();
          }
          int64_t bytes = 0;
          if (sharded) {
            bytes = zero->state_bytes();
          } else {
            for (const gl::Tensor& p : plain->parameters())
              for (const auto& [n, t] : plain->state(p)) bytes += t.numel() * 8;
          }
          *state_bytes = bytes;
          return flat(ddp.parameters());
        };
        int64_t full = 0, shard = 0;
        const auto a = adam_run(false, &full);
        const auto b = adam_run(true, &shard);
        const auto shards = gather({static_cast<double>(shard)});
        L.say("a 64-64-64-64-64-10 MLP, Adam state per rank: " + std::to_string(full) + " bytes unsharded, " +
              lesson::fmt(shards[0][0], 0) + " and " + lesson::fmt(shards[1][0], 0) + " bytes on the two ranks with ZeRO-1");
        L.check(on_all_ranks(a == b), "ZeRO-1 trains to bit-identical weights: the same Adam updates, split by owner");
        L.check(on_all_ranks(shards[0][0] + shards[1][0] == static_cast<double>(full) &&
                             static_cast<double>(shard) <= 0.6 * static_cast<double>(full)),
                "each rank holds about half of the state (together, exactly the unsharded state)");
        // The split is per parameter tensor: section 1's MLP has one 128 x 64 weight of its 9610.
        DistributedDataParallel mlp(make_mlp(kSeed));
        dist::ZeroRedundancyOptimizer<gl::optim::SGD> z(mlp.parameters(), gl::optim::SGDOptions(0.1));
        int64_t biggest = 0;
        for (size_t i = 0; i < mlp.parameters().size(); ++i)
          if (z.owner(i) == z.owner(0)) biggest += mlp.parameters()[i].numel();
        L.say("but the unit is a parameter tensor: section 1's MLP puts " + std::to_string(biggest) + " of its " +
              std::to_string(nparams) + " weights on one rank (its 128 x 64 matrix alone is 8192)");
        L.check(on_all_ranks(biggest >= 8192), "a tensor is never split: ZeRO-1 evens out only many similar tensors");
      }
      L.say("a compression hook sends each gradient bucket as 16-bit floats: half the bytes, rounded gradients.");
      {
        const HookRun plain = train_with_hook(split, nullptr);
        const HookRun fp16 = train_with_hook(split, nn::parallel::comm_hooks::fp16_compress_hook);
        const HookRun bf16 = train_with_hook(split, nn::parallel::comm_hooks::bf16_compress_hook);
        L.say("3 epochs, float32 MLP, test accuracy: plain " + lesson::fmt(plain.accuracy, 1) + "%, fp16 hook " +
              lesson::fmt(fp16.accuracy, 1) + "%, bf16 hook " + lesson::fmt(bf16.accuracy, 1) + "%");
        L.say("bytes all-reduced per rank and step: " + std::to_string(plain.bytes) + " plain, " +
              std::to_string(fp16.bytes) + " compressed");
        L.check(on_all_ranks(2 * fp16.bytes == plain.bytes && 2 * bf16.bytes == plain.bytes),
                "the hooks halve the bytes on the wire");
        L.check(on_all_ranks(std::abs(fp16.accuracy - plain.accuracy) <= 1.5 && std::abs(bf16.accuracy - plain.accuracy) <= 1.5),
                "and cost this model at most 1.5 points of test accuracy");
        L.check(on_all_ranks(plain.accuracy > 90.0), "(the plain run learned the digits: above 90%)");
      }
      L.say("whether that pays is a measurement: it does where the network is the bottleneck; on one");
      L.say("machine's shared memory the conversions can cost more than the bytes save (bench_distributed, hook/*).");
    } catch (const std::exception& e) {
      dist::abort_job(std::string("lesson 11: ") + e.what());
    }
  });
}
