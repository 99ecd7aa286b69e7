#include "gradlab/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gradlab/core/error.hpp"

namespace gradlab::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// ".<name>.tmp-": hidden, and never matched by a checkpoint listing.
std::string temp_prefix(const fs::path& path) {
  std::string s(".");  // NOTE: not "." + string&&: GCC 12 warns falsely (-Wrestrict) on that
  s += path.filename().string();
  s += ".tmp-";
  return s;
}

// The pid in "<pid>-<n>" (what follows the ".tmp-" of a temporary's name), or 0.
pid_t writer_pid(const std::string& rest) {
  const auto dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size()) return 0;
  if (rest.find_first_not_of("0123456789-") != std::string::npos) return 0;
  if (rest.find('-', dash + 1) != std::string::npos) return 0;
  return static_cast<pid_t>(std::atoll(rest.substr(0, dash).c_str()));
}

// Removes `tmp`, a temporary of writer `pid`, when that writer is dead: no process has the pid
// (kill(pid, 0) fails with ESRCH) and nobody holds the writer's lock on the file (a writer in
// another pid namespace has a pid we cannot see, but its flock is visible). Our own pid is
// never stale (another thread may be writing). Returns whether it removed the file.
bool remove_if_writer_dead(const fs::path& tmp, pid_t pid) {
  if (pid <= 0 || pid == ::getpid()) return false;
  if (::kill(pid, 0) == 0 || errno != ESRCH) return false;  // alive (EPERM: another user's)
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  // NOTE: unlink while holding the lock: a live writer cannot take it between check and unlink.
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  const bool removed = free && ::unlink(tmp.c_str()) == 0;
  ::close(fd);
  return removed;
}

// Temporaries that dead writers left for exactly `path` (".<name>.tmp-<pid>-<n>", nothing more).
void remove_dead_writers_temporaries(const fs::path& dir, const fs::path& path) {
  const std::string prefix = temp_prefix(path);
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() && name.starts_with(prefix))
      remove_if_writer_dead(it->path(), writer_pid(name.substr(prefix.size())));
  }
}

}  // namespace

void FileWriter::write(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IOError(error_message("save", "cannot write '" + shown_.string() + "' at offset " +
                                              std::to_string(offset_) + ": " + errno_text()));
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset_ += static_cast<size_t>(w);
  }
}

void write_file_atomic(const fs::path& path, const std::function<void(FileWriter&)>& fill,
                       bool durable) {
  static std::atomic<uint64_t> counter{0};
  GRADLAB_CHECK(!path.filename().empty(), IOError, "save", "no file name in the path",
                "a file path", "'" + path.string() + "'");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  remove_dead_writers_temporaries(dir, path);
  const fs::path tmp =
      dir / (temp_prefix(path) + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  GRADLAB_CHECK(fd >= 0, IOError, "save",
                "cannot create a temporary file in '" + dir.string() + "': " + errno_text(),
                "a writable directory", "'" + tmp.string() + "'");
  // Held until the process exits or closes fd: tells cleaners (above) that this writer lives.
  (void)::flock(fd, LOCK_EX | LOCK_NB);
  try {
    FileWriter w(fd, path);
    fill(w);
    if (durable && ::fsync(fd) != 0)
      throw IOError(
          error_message("save", "fsync of '" + tmp.string() + "' failed: " + errno_text()));
    if (::close(fd) != 0)
      throw IOError(
          error_message("save", "close of '" + tmp.string() + "' failed: " + errno_text()));
  } catch (...) {
    ::close(fd);  // harmless when already closed: EBADF
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw IOError(error_message(
        "save", "cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + why));
  }
  if (durable) {
    // NOTE: without this fsync the rename may be lost on power failure (the data would not).
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      const int rc = ::fsync(dfd);
      const std::string why = errno_text();
      ::close(dfd);
      GRADLAB_CHECK(rc == 0, IOError, "save",
                    "fsync of directory '" + dir.string() + "' failed: " + why);
    }
  }
}

size_t remove_stale_temporaries(const fs::path& dir, const std::string& name_prefix) {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
    // ".<target name>.tmp-<pid>-<n>"
    const std::string name = entry.path().filename().string();
    const auto tmp = name.rfind(".tmp-");
    if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos || tmp == 0) continue;
    if (!name.substr(1).starts_with(name_prefix)) continue;
    if (remove_if_writer_dead(entry.path(), writer_pid(name.substr(tmp + 5)))) ++removed;
  }
  return removed;
}

}  // namespace gradlab::io
