// c10d::Store (the port path's c10d face; see ProcessGroup.hpp): the rendezvous a process group
// is built on. gradlab's ranks meet through the MPI launcher, so a store only records its name.
#pragma once

#include <string>

namespace c10d {
class Store {
 public:
  virtual ~Store() = default;
};
}  // namespace c10d
