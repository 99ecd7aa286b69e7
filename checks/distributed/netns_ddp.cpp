// DDP across two "hosts" (network namespaces joined by a veth pair; checks/distributed/
// netns_hosts.sh sets them up and starts this program with mpirun and a hostfile):
//
//   netns_ddp train --out F [--ckpt DIR [--resume]] [--pause-at E:S --pause-dir P]
//                   [--timeout-s T] [--expect-hosts H]
//   netns_ddp compare A B
//
// train: kEpochs epochs of kSteps steps, kB rows per rank and step, a float64 MLP, SGD with
// momentum. With --ckpt, rank 0 saves a checkpoint after every epoch (io::CheckpointManager:
// temporary file + rename) and --resume continues from the newest one. At the end every rank
// checks that its weights equal one process trained on the concatenated batches from the start
// (to 1e-12) and that the replicas agree; rank 0 writes the final weights to F.
// --pause-at E:S (0-based): before step S of epoch E every rank writes P/paused.<rank> and waits
// for P/go, so the fixture can take a host down mid-epoch at a known point; from there on the
// group's timeout is T seconds (--timeout-s; 60 before, so that a loaded machine's start-up
// does not trip it).
// --expect-hosts H: the ranks must sit on H hosts (host names), the same number on each.
// compare: max |A - B| over the weights of two final files; exit 1 above 1e-12.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gradlab/gradlab.hpp>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/ddp_common.hpp"

namespace {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace io = gradlab::io;
namespace dist = gradlab::distributed;
namespace fs = std::filesystem;
using gl::checks::flat;
using gl::checks::gather;
using gl::checks::max_abs_diff;

constexpr int kEpochs = 3, kSteps = 4;
constexpr int64_t kB = 3;
constexpr uint64_t kSeed = 7;
const gl::TensorOptions kF64 = gl::TensorOptions().dtype(gl::kFloat64);

nn::Sequential make_mlp(uint64_t seed) {
  gl::manual_seed(seed);
  nn::Sequential m(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 8), nn::Tanh(), nn::Linear(8, 3));
  m->to(gl::kFloat64);
  return m;
}
gl::optim::SGD make_sgd(const std::vector<gl::Tensor>& ps) {
  return gl::optim::SGD(ps, gl::optim::SGDOptions(0.1).momentum(0.9));
}

struct XY {
  gl::Tensor x, y;
};
// The global batch of (epoch, step), the same on every rank; rows [r B, (r + 1) B) are rank r's.
XY global_batch(int epoch, int step, int64_t rows) {
  gl::Generator g(1000 + 100 * static_cast<uint64_t>(epoch) + static_cast<uint64_t>(step));
  return {gl::randn({rows, 4}, kF64, &g), gl::randn({rows, 3}, kF64, &g)};
}

// The oracle: one process, batch world * B, every epoch from the start.
std::vector<double> train_single(int world) {
  nn::Sequential m = make_mlp(kSeed);
  gl::optim::SGD opt = make_sgd(m->parameters());
  for (int e = 0; e < kEpochs; ++e)
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      XY b = global_batch(e, s, world * kB);
      nn::functional::mse_loss(m->forward(b.x), b.y).backward();
      opt.step();
    }
  return flat(m->parameters());
}

// Every rank's host name, in rank order.
std::vector<std::string> host_names() {
  constexpr int64_t kWords = 8;  // 63 characters and a NUL
  gl::Tensor mine = gl::zeros({kWords}, gl::TensorOptions().dtype(gl::kInt64));
  char name[kWords * 8] = {};
  ::gethostname(name, sizeof name - 1);
  std::memcpy(mine.data_ptr<int64_t>(), name, sizeof name);
  std::vector<gl::Tensor> all(static_cast<size_t>(dist::get_world_size()));
  dist::all_gather(all, mine);
  std::vector<std::string> out;
  for (const gl::Tensor& t : all)
    out.emplace_back(reinterpret_cast<const char*>(t.data_ptr<int64_t>()));
  return out;
}

// True on every rank only when it is true on every rank (all ranks exit alike).
bool on_all_ranks(bool ok) {
  gl::Tensor bad = gl::full({1}, ok ? 0 : 1, gl::TensorOptions().dtype(gl::kInt64));
  dist::all_reduce(bad, dist::ReduceOp::MAX);
  return bad.item<int64_t>() == 0;
}

struct Args {
  std::string out, ckpt, pause_dir;
  bool resume = false;
  int pause_epoch = -1, pause_step = -1, timeout_s = 60, expect_hosts = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("netns_ddp: " + k + " needs a value");
      return argv[++i];
    };
    if (k == "--out")
      a.out = value();
    else if (k == "--ckpt")
      a.ckpt = value();
    else if (k == "--resume")
      a.resume = true;
    else if (k == "--pause-dir")
      a.pause_dir = value();
    else if (k == "--timeout-s")
      a.timeout_s = std::stoi(value());
    else if (k == "--expect-hosts")
      a.expect_hosts = std::stoi(value());
    else if (k == "--pause-at") {
      const std::string v = value();
      const size_t colon = v.find(':');
      if (colon == std::string::npos)
        throw std::invalid_argument("netns_ddp: --pause-at takes E:S, got " + v);
      a.pause_epoch = std::stoi(v.substr(0, colon));
      a.pause_step = std::stoi(v.substr(colon + 1));
    } else {
      throw std::invalid_argument("netns_ddp: unknown option " + k);
    }
  }
  if (a.out.empty()) throw std::invalid_argument("netns_ddp train: --out FILE is required");
  if (a.resume && a.ckpt.empty())
    throw std::invalid_argument("netns_ddp train: --resume needs --ckpt DIR");
  if (a.pause_epoch >= 0 && a.pause_dir.empty())
    throw std::invalid_argument("netns_ddp train: --pause-at needs --pause-dir DIR");
  return a;
}

// Writes P/paused.<rank>, then waits (at most a minute) for P/go.
void pause_until_go(const Args& a, int rank) {
  { std::ofstream(fs::path(a.pause_dir) / ("paused." + std::to_string(rank))) << "paused\n"; }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!fs::exists(fs::path(a.pause_dir) / "go")) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("netns_ddp: no " + (fs::path(a.pause_dir) / "go").string() +
                               " within a minute");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int train(const Args& a) {
  dist::init_process_group("mpi", std::chrono::seconds(60));
  const int rank = dist::get_rank(), world = dist::get_world_size();
  bool ok = true;

  const std::vector<std::string> hosts = host_names();
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < world; ++r) by_host[hosts[static_cast<size_t>(r)]].push_back(r);
  if (rank == 0) {
    std::printf("%d ranks on %zu hosts:", world, by_host.size());
    for (const auto& [h, rs] : by_host) {
      std::printf(" %s (ranks", h.c_str());
      for (int r : rs) std::printf(" %d", r);
      std::printf(")");
    }
    std::printf("\n");
  }
  if (a.expect_hosts > 0) {
    bool even = static_cast<int>(by_host.size()) == a.expect_hosts;
    for (const auto& [h, rs] : by_host)
      even = even && static_cast<int>(rs.size()) * a.expect_hosts == world;
    if (!even && rank == 0)
      std::printf("FAIL: expected %d hosts with %d ranks each\n", a.expect_hosts,
                  world / a.expect_hosts);
    ok = ok && even;
  }

  using nn::parallel::DistributedDataParallel;
  DistributedDataParallel ddp(make_mlp(kSeed + 17 * static_cast<uint64_t>(rank)));
  gl::optim::SGD opt = make_sgd(ddp.parameters());
  int first_epoch = 0;
  std::optional<io::CheckpointManager> manager;
  if (!a.ckpt.empty()) manager.emplace(a.ckpt, "ckpt", 0);
  if (a.resume) {
    std::optional<io::Checkpoint> c = manager->load_latest();
    if (!c) throw std::runtime_error("netns_ddp: --resume but no checkpoint in " + a.ckpt);
    ddp.load_state_dict(c->model);
    opt.load_state_dict(c->optimizer);
    first_epoch = static_cast<int>(c->epoch);
    if (rank == 0)
      std::printf("resumed from the checkpoint after epoch %d (step %lld)\n", first_epoch - 1,
                  static_cast<long long>(c->step));
  }

  for (int e = first_epoch; e < kEpochs; ++e) {
    for (int s = 0; s < kSteps; ++s) {
      if (e == a.pause_epoch && s == a.pause_step) {
        if (rank == 0) std::printf("paused before epoch %d step %d\n", e, s);
        std::fflush(stdout);
        pause_until_go(a, rank);
        dist::set_timeout(std::chrono::seconds(a.timeout_s));
      }
      opt.zero_grad();
      XY g = global_batch(e, s, world * kB);
      gl::Tensor x = g.x.narrow(0, rank * kB, kB), y = g.y.narrow(0, rank * kB, kB);
      nn::functional::mse_loss(ddp(x), y).backward();  // the gradients' all_reduce
      opt.step();
    }
    if (manager) {
      if (rank == 0) {
        io::Checkpoint c;
        c.model = ddp.state_dict();
        c.optimizer = opt.state_dict();
        c.epoch = e + 1;  // epochs done
        c.step = static_cast<int64_t>(e + 1) * kSteps;
        const fs::path p = manager->save(c);
        std::printf("epoch %d: rank 0 saved %s\n", e, p.filename().c_str());
        std::fflush(stdout);
      }
      dist::barrier();  // the file is complete before any rank goes on
    }
  }

  const std::vector<double> mine = flat(ddp.parameters());
  const double d = max_abs_diff(mine, train_single(world));
  const double moved = max_abs_diff(mine, flat(make_mlp(kSeed)->parameters()));
  bool agree = true;
  for (const auto& other : gather(mine)) agree = agree && other == mine;
  std::printf("rank %d: max |DDP - single process| after %d epochs: %.3g\n", rank, kEpochs, d);
  ok = ok && d <= 1e-12 && moved > 1e-3 && agree;
  if (!agree) std::printf("FAIL: rank %d: the replicas differ\n", rank);
  if (moved <= 1e-3) std::printf("FAIL: rank %d: the weights did not move\n", rank);
  ok = on_all_ranks(ok);
  if (rank == 0 && ok) {
    io::Checkpoint c;
    c.model = ddp.state_dict();
    c.epoch = kEpochs;
    io::save_checkpoint(c, a.out);
    std::printf("training finished: %s\n", a.out.c_str());
  }
  return ok ? 0 : 1;
}

int compare(const std::string& a, const std::string& b) {
  const io::Checkpoint x = io::load_checkpoint(a), y = io::load_checkpoint(b);
  if (x.model.size() != y.model.size() || x.model.empty()) {
    std::printf("FAIL: %zu vs %zu tensors\n", x.model.size(), y.model.size());
    return 1;
  }
  double d = 0;
  bool bitwise = true;
  for (const auto& [k, t] : x.model) {
    if (!y.model.contains(k)) {
      std::printf("FAIL: %s is missing from %s\n", k.c_str(), b.c_str());
      return 1;
    }
    const std::vector<double> p = t.to_vector<double>(), q = y.model.at(k).to_vector<double>();
    d = std::max(d, max_abs_diff(p, q));
    bitwise = bitwise && p.size() == q.size() &&
              std::memcmp(p.data(), q.data(), p.size() * sizeof(double)) == 0;
  }
  std::printf("max |%s - %s| = %.3g (bitwise equal: %s)\n", fs::path(a).filename().c_str(),
              fs::path(b).filename().c_str(), d, bitwise ? "yes" : "no");
  return d <= 1e-12 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "compare" && argc == 4) return compare(argv[2], argv[3]);
  if (cmd == "train") {
    Args a;
    try {
      a = parse(argc, argv);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    return train(a);  // from here an exception ends the whole job with its message
  }
  std::fprintf(stderr, "usage: netns_ddp train --out FILE [...] | netns_ddp compare A B\n");
  return 2;
}
