#pragma once
// A watcher of host reads of tensor values (Tensor::item, to_vector). jit::trace installs one:
// a value read on the host can steer the traced function's control flow, which a trace cannot
// record (it sees one path). Outside a trace a read pays one relaxed load.

#include <atomic>

namespace gradlab::detail {

/// Number of watchers installed in the process (jit/trace.cpp); zero outside jit::trace.
extern std::atomic<int> host_read_watchers;
/// Called with what was read ("item", "to_vector").
using HostReadHook = void (*)(void* watcher, const char* what);
/// Installs (or, with null, removes) this thread's watcher.
void set_host_read_hook(HostReadHook hook, void* watcher);
/// Tells this thread's watcher, if any, about a read.
void notify_host_read(const char* what);

}  // namespace gradlab::detail
