#include "base/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

namespace ff {

namespace {

std::mutex g_problem_mu;
bool g_problem_taken = false;
std::optional<std::string> g_problem;

void note_problem(const std::string& dir, const std::string& why) {
  std::lock_guard<std::mutex> lock(g_problem_mu);
  if (!g_problem && !g_problem_taken) g_problem = "cannot write the cache in " + dir + ": " + why;
}

}  // namespace

int open_cache_file(const std::string& path, size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  // Only a regular file of this user's (or root's), that nobody else may write: in a
  // shared cache folder another user could plant a well-formed cache (the checksums
  // guard against damage, not against a forger), as ssh refuses keys others can write.
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != ::geteuid() && st.st_uid != 0) ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    ::close(fd);
    return -1;
  }
  *size = static_cast<size_t>(st.st_size);
  return fd;
}

int write_file_atomically(const std::string& dir, const std::string& path,
                          std::initializer_list<std::string_view> pieces, bool readable, mode_t mode) {
  namespace fs = std::filesystem;
  // A hidden name that no prefix of a cache file matches, unique to this write.
  std::string tmp = (fs::path(dir) / (".tmp-" + fs::path(path).filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return errno;
  int err = 0;
  if (readable) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, mode & 0666 & ~mask) != 0) err = errno;
  }
  for (std::string_view p : pieces) {
    while (!p.empty() && err == 0) {
      const ssize_t n = ::write(fd, p.data(), p.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        break;
      }
      p.remove_prefix(static_cast<size_t>(n));
    }
  }
  if (::close(fd) != 0 && err == 0) err = errno;  // a full disk can show only here (NFS)
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  return err;
}

bool write_cache_file(const std::string& dir, const std::string& path, std::initializer_list<std::string_view> pieces) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (int err = write_file_atomically(dir, path, pieces, false); err != 0) {
    note_problem(dir, std::strerror(err));
    return false;
  }
  return true;
}

std::optional<std::string> take_cache_problem() {
  std::lock_guard<std::mutex> lock(g_problem_mu);
  g_problem_taken = true;
  return std::exchange(g_problem, std::nullopt);
}

void prune_cache(const std::string& dir, const std::string& prefix, std::string_view magic, size_t keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // Ours only: a regular file (not through a link) that begins with the magic.
    size_t size = 0;
    const int fd = open_cache_file(it->path().string(), &size);
    if (fd < 0) continue;
    std::string head(magic.size(), '\0');
    const bool ours = size >= magic.size() &&
                      ::pread(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) && head == magic;
    ::close(fd);
    if (ours) files.emplace_back(it->last_write_time(ec), it->path());
  }
  if (files.size() <= keep) return;
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = keep; i < files.size(); ++i) fs::remove(files[i].second, ec);
}

uint64_t cache_checksum(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;  // a word-wide multiply moves low bits up only: fold the high ones down
  }
  for (; i < data.size(); ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

}  // namespace ff
