// c10d::FileStore (the port path's c10d face; see ProcessGroup.hpp). gradlab's ranks meet through
// the MPI launcher: the file is not used, and num_workers is checked against the launcher's world
// size when a process group is made over the store.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

namespace c10d {
class FileStore : public Store {
 public:
  FileStore(std::string path, int num_workers) : path_(std::move(path)), num_workers_(num_workers) {}
  const std::string& getPath() const noexcept { return path_; }
  int numWorkers() const noexcept { return num_workers_; }

 private:
  std::string path_;
  int num_workers_;
};
}  // namespace c10d
