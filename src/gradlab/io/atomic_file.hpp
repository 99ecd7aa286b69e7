#pragma once
// Crash-safe file writes: a process killed (or a machine losing power) at any point leaves
// either the old file or the complete new one under `path`, never a mix.
//
// How: write everything to a temporary file in the same directory (".<name>.tmp-<pid>-<n>"),
// fsync it, rename() it over `path` (atomic within one file system), then fsync the directory
// so the rename itself is on disk. A crash before the rename leaves the old file plus a stale
// temporary: the next write of the same `path` removes those of dead writers (a writer holds an
// flock on its temporary; one is dead when its pid is gone and the lock is free), and
// remove_stale_temporaries() cleans up a whole directory.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

namespace gradlab::io {

/// Sequential writer handed to write_file_atomic's callback.
class FileWriter {
 public:
  FileWriter(int fd, std::filesystem::path shown) : fd_(fd), shown_(std::move(shown)) {}
  /// Writes all `n` bytes (throws IOError naming the file on failure, e.g. disk full).
  void write(const void* data, size_t n);
  /// Bytes written so far.
  size_t offset() const { return offset_; }

 private:
  int fd_;
  std::filesystem::path shown_;
  size_t offset_ = 0;
};

/// Writes `path` through `fill`, crash-safely as described above, first removing the
/// temporaries that dead writers left for the same `path` (one directory listing). `durable =
/// false` skips the fsyncs (faster, still atomic against a killed process, not against a power
/// loss).
void write_file_atomic(const std::filesystem::path& path,
                       const std::function<void(FileWriter&)>& fill, bool durable = true);

/// Deletes the temporaries that write_file_atomic left in `dir` when its process was killed,
/// for target files whose names start with `name_prefix` (all when empty); files of processes
/// still running are kept. Returns how many were removed.
size_t remove_stale_temporaries(const std::filesystem::path& dir,
                                const std::string& name_prefix = {});

}  // namespace gradlab::io
