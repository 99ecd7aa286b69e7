// c10d::ProcessGroupGloo (the port path's c10d face; see ProcessGroup.hpp): joins gradlab's MPI
// process group (init_process_group("mpi")) and checks that the rank and size the program passes
// are the launcher's: start the program with `mpiexec -n <size>`. Options, devices and timeouts
// are accepted as LibTorch spells them; the devices are not used (MPI carries the data).
#pragma once

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gloo::transport {
/// A Gloo transport device (LibTorch's type); the face keeps the hostname only.
class Device {
 public:
  explicit Device(std::string hostname = "") : hostname(std::move(hostname)) {}
  std::string hostname;
};
}  // namespace gloo::transport

namespace c10d {

class ProcessGroupGloo : public ProcessGroup {
 public:
  struct Options {
    explicit Options(std::chrono::milliseconds t = std::chrono::minutes(30)) : timeout(t) {}
    static c10::intrusive_ptr<Options> create(std::chrono::milliseconds t = std::chrono::minutes(30)) {
      return c10::make_intrusive<Options>(t);
    }
    std::chrono::milliseconds timeout;
    std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
    int threads = 2;
  };
  static std::shared_ptr<::gloo::transport::Device> createDeviceForHostname(const std::string& hostname) {
    return std::make_shared<::gloo::transport::Device>(hostname);
  }
  static std::shared_ptr<::gloo::transport::Device> createDefaultDevice() {
    return std::make_shared<::gloo::transport::Device>();
  }

  ProcessGroupGloo(const c10::intrusive_ptr<Store>& store, int rank, int size,
                   c10::intrusive_ptr<Options> options = Options::create())
      : ProcessGroup(rank, size), store_(store), options_(std::move(options)) {
    namespace d = gradlab::distributed;
    if (!d::is_initialized()) d::init_process_group("mpi", options_ ? options_->timeout : d::kDefaultTimeout);
    GRADLAB_CHECK(rank == d::get_rank() && size == d::get_world_size(), d::DistributedError,
                  "c10d::ProcessGroupGloo",
                  "the rank and size passed differ from the launcher's (gradlab's c10d face runs "
                  "over its MPI process group)",
                  "rank " + std::to_string(d::get_rank()) + " of " +
                      std::to_string(d::get_world_size()),
                  "rank " + std::to_string(rank) + " of " + std::to_string(size),
                  "start the program with mpiexec -n " + std::to_string(size) +
                      " and take the rank from OMPI_COMM_WORLD_RANK");
    if (const auto* file = dynamic_cast<const FileStore*>(store_.get()))
      GRADLAB_CHECK(file->numWorkers() == size, d::DistributedError, "c10d::ProcessGroupGloo",
                    "the FileStore's num_workers differs from the group's size",
                    std::to_string(size), std::to_string(file->numWorkers()));
  }
  const c10::intrusive_ptr<Options>& getOptions() const { return options_; }

 private:
  c10::intrusive_ptr<Store> store_;
  c10::intrusive_ptr<Options> options_;
};

}  // namespace c10d
