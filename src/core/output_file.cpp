#include "core/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace xb {
namespace {

namespace fs = std::filesystem;

// What a symbolic link points to (followed to the end), else `path` itself.
std::string target_of(const std::string& path) {
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0 || !S_ISLNK(sb.st_mode)) return path;
  std::error_code ec;
  const fs::path t = fs::weakly_canonical(path, ec);
  return ec ? path : t.string();
}

std::string folder_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

// Writes all of `text` to `fd`; false with errno set on failure.
bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::atomic<unsigned> g_serial{0};  // temporary names of this process

// A new file beside `target`, hidden, created here (O_EXCL): its descriptor
// (-1 with errno) and its name in `name`. A name met already, a file that a
// killed run of an earlier process with this id left, is passed over.
int create_beside(const std::string& target, const char* what, mode_t mode, std::string& name) {
  for (int tries = 0;; ++tries) {
    name = fmt::format("{}/.{}.{}.{}.{}", folder_of(target), fs::path(target).filename().string(),
                       what, getpid(), g_serial.fetch_add(1));
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST || tries == 1000) return fd;
  }
}

// Whether a file can be created in `path`'s folder (the real test: access()
// says yes to root in /proc, and knows nothing of read-only mounts): "" or why.
std::string can_create_beside(const std::string& path) {
  std::string probe;
  const int fd = create_beside(path, "probe", 0600, probe);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

// `text` written over `path` in place (truncated first): the fallback for a
// file one may write in a folder one may not create files in.
std::string write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  const bool wrote = write_all(fd, text);
  const int err = errno;
  ::close(fd);
  return wrote ? "" : std::strerror(err);
}

}  // namespace

std::string output_problem(const std::string& path) {
  if (path.empty()) return "an empty name";
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return std::strerror(EISDIR);
    return ::access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  }
  if (errno != ENOENT) return std::strerror(errno);
  const std::string target = target_of(path);
  const std::string dir = folder_of(target);
  if (::stat(dir.c_str(), &sb) != 0) return std::strerror(errno);
  if (!S_ISDIR(sb.st_mode)) return std::strerror(ENOTDIR);
  return can_create_beside(target);
}

void check_output(const std::string& path) {
  if (const std::string why = output_problem(path); !why.empty())
    throw UsageError(fmt::format("cannot write -o {}: {}", path, why));
}

bool replaced_whole(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) != 0 || S_ISREG(sb.st_mode);
}

std::string replace_file(const std::string& path, const std::string& text) {
  const std::string target = target_of(path);
  struct stat old {};
  const bool existed = ::stat(target.c_str(), &old) == 0;
  std::string tmp;
  const int fd = create_beside(target, "tmp", 0666, tmp);
  if (fd < 0) {
    if (existed && (errno == EACCES || errno == EPERM || errno == EROFS))
      return write_in_place(target, text);  // the file is writable, its folder is not
    return std::strerror(errno);
  }
  if (existed) (void)::fchmod(fd, old.st_mode & 07777);  // best effort, as the old file was
  const bool wrote = write_all(fd, text);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  const bool renamed = wrote && closed && std::rename(tmp.c_str(), target.c_str()) == 0;
  if (renamed) return "";
  const int err = wrote ? errno : write_errno;  // close's or rename's, else write's
  ::unlink(tmp.c_str());
  return std::strerror(err);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace xb
