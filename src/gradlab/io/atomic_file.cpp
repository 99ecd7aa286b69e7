#include "gradlab/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
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
  const fs::path tmp =
      dir / (temp_prefix(path) + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  GRADLAB_CHECK(fd >= 0, IOError, "save",
                "cannot create a temporary file in '" + dir.string() + "': " + errno_text(),
                "a writable directory", "'" + tmp.string() + "'");
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
    const std::string rest = name.substr(tmp + 5);
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    if (rest.find_first_not_of("0123456789-") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atoll(rest.substr(0, dash).c_str()));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // alive (EPERM: another user's)
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace gradlab::io
