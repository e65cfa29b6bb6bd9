// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace edo::io {

namespace {

// The registry a signal handler reads: fixed slots with their own path
// buffers, so the handler touches no heap memory and calls only unlink,
// which is async-signal-safe. A slot is free (0), being written (1) or armed
// (2); the handler removes armed slots' files only.
constexpr int kCleanupSlots = 64;
struct CleanupSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
CleanupSlot g_cleanup[kCleanupSlots];

extern "C" void edo_cleanup_and_reraise(int sig) {
  for (CleanupSlot& s : g_cleanup)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  // SA_RESETHAND restored the default action; the signal is blocked until
  // this handler returns, then ends the process as it would have.
  ::raise(sig);
}

char g_bus_line[1024];
std::atomic<size_t> g_bus_line_size{0};

std::atomic_flag g_bus_reported = ATOMIC_FLAG_INIT;

extern "C" void edo_report_bus_error(int) {
  // Several threads may fault at once: the first reports and exits, the
  // others wait for that exit.
  if (g_bus_reported.test_and_set()) {
    for (;;) ::pause();
  }
  for (CleanupSlot& s : g_cleanup)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  const size_t n = g_bus_line_size.load(std::memory_order_acquire);
  if (n > 0) (void)!::write(STDERR_FILENO, g_bus_line, n);
  ::_exit(1);
}

}  // namespace

const char* special_file_kind(unsigned mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    EDO_IO_FAIL("{}: is not a regular file ({}); give a file", path, special_file_kind(st.st_mode));
}

void check_link_beside(const std::string& path, const std::string& dir, const std::string& named_by,
                       bool follow_links_out) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // missing: the open that follows says so
  if (S_ISLNK(st.st_mode) && !follow_links_out) {
    std::error_code target_error, home_error;
    const std::filesystem::path target = std::filesystem::canonical(path, target_error);
    const std::filesystem::path home = std::filesystem::canonical(dir.empty() ? "." : dir, home_error);
    if (target_error || home_error || target.parent_path() != home)
      EDO_IO_FAIL(
          "{}: a symbolic link out of {} (named by {}); refused: pass --allow-external to follow links out of "
          "a model's directory",
          path, dir, named_by);
  }
}

void report_bus_errors_as(const std::string& line) {
  g_bus_line_size.store(0, std::memory_order_release);
  const std::string text = line.substr(0, sizeof g_bus_line - 2) + "\n";
  std::memcpy(g_bus_line, text.data(), text.size());
  g_bus_line_size.store(text.size(), std::memory_order_release);
  struct sigaction sa {};
  sa.sa_handler = edo_report_bus_error;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

void CleanupOnSignal::arm(const std::string& path) {
  disarm();
  if (path.empty() || path.size() >= PATH_MAX) return;
  for (int i = 0; i < kCleanupSlots; ++i) {
    int expected = 0;
    if (!g_cleanup[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(g_cleanup[i].path, path.c_str(), path.size() + 1);
    g_cleanup[i].state.store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

void CleanupOnSignal::disarm() {
  if (slot_ < 0) return;
  g_cleanup[slot_].state.store(0, std::memory_order_release);
  slot_ = -1;
}

void install_signal_cleanup() {
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, an error
  // the run reports and rolls back like any other, instead of the signal
  // ending the process with temporaries left and outputs half replaced.
  ::signal(SIGXFSZ, SIG_IGN);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = edo_cleanup_and_reraise;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

Placement parse_placement(std::string_view name) {
  if (name == "mapped") return Placement::mapped;
  if (name == "memory") return Placement::memory;
  EDO_USAGE_FAIL("placement '{}': expected mapped or memory", name);
}

const char* placement_name(Placement placement) { return placement == Placement::memory ? "memory" : "mapped"; }

MappedFile::MappedFile(const std::string& path, Placement placement) : path_(path), placement_(placement) {
  // O_NONBLOCK: opening a FIFO waits for a writer, forever if none comes;
  // such a file is refused below instead. A regular file ignores the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) EDO_IO_FAIL("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    EDO_IO_FAIL("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    EDO_IO_FAIL("{}: is a directory", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    EDO_IO_FAIL("{}: is not a regular file ({}); give a file", path, special_file_kind(st.st_mode));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  fd_ = fd;
  if (size_ > 0 && placement == Placement::memory) {
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fd_ = -1;
      EDO_FAIL("{}: cannot allocate {} bytes to hold the file: {}", path, size_, std::strerror(err));
    }
    ::madvise(p, size_, MADV_HUGEPAGE);  // a hint: the copy works without huge pages, only slower
    try {
      read_at(0, p, size_);
    } catch (...) {
      ::munmap(p, size_);
      ::close(fd);
      fd_ = -1;
      throw;
    }
    ::mprotect(p, size_, PROT_READ);
    data_ = static_cast<const uint8_t*>(p);
  } else if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fd_ = -1;
      EDO_IO_FAIL("{}: cannot map: {}", path, std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
    ::madvise(p, size_, MADV_SEQUENTIAL);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read_at(uint64_t offset, void* out, size_t size) const {
  if (offset > size_ || size > size_ - offset) EDO_CORRUPT_FAIL("{}: read past the end of the file", path_);
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) EDO_IO_FAIL("{}: read failed: {}", path_, n < 0 ? std::strerror(errno) : "unexpected end of file");
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
  if (!data_ || offset >= size_ || length == 0 || placement_ == Placement::memory) return;
  // Widened outward to 64 KiB: on a fault the kernel maps a cluster of file
  // pages around the address (fault-around), and a lone row read would
  // otherwise leave its neighbours resident. Dropping a page of a mapping is
  // always safe; the next touch maps it again from the page cache.
  constexpr uint64_t kCluster = uint64_t{64} << 10;
  const uint64_t first = offset / kCluster * kCluster;
  const uint64_t end = std::min(size_, (offset + length + kCluster - 1) / kCluster * kCluster);
  ::madvise(const_cast<uint8_t*>(data_) + first, end - first, MADV_DONTNEED);
}

namespace {

struct PublishedOutput {
  std::string path;
  std::string backup;  // the file it replaced, kept by a hard link; empty: there was none
  bool recorded = false;
  // A signal that ends the run removes the kept link, as it removes the
  // temporaries: the new output stays, nothing else is left behind.
  std::shared_ptr<CleanupOnSignal> backup_cleanup;
};

std::mutex g_transaction_mutex;
bool g_transaction_open = false;
std::vector<PublishedOutput> g_published;
uint64_t g_backup_serial = 0;

// Before `path` is replaced inside a transaction: what the transaction must
// remember to take the replacement back.
PublishedOutput keep_replaced_file(const std::string& path) {
  std::lock_guard lock(g_transaction_mutex);
  PublishedOutput out{path, {}, false, nullptr};
  if (!g_transaction_open) return out;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    out.recorded = errno == ENOENT;  // new: removed on failure
    return out;
  }
  if (!S_ISREG(st.st_mode)) return out;
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string backup = fmt::format("{}.{}.old-{}-{}", dir, name, ::getpid(), ++g_backup_serial);
  if (::link(path.c_str(), backup.c_str()) == 0) {
    out.backup = backup;
    out.recorded = true;
    out.backup_cleanup = std::make_shared<CleanupOnSignal>(backup);
  }
  return out;
}

void record_published(const PublishedOutput& p) {
  if (!p.recorded) return;
  std::lock_guard lock(g_transaction_mutex);
  if (g_transaction_open) g_published.push_back(p);
}

}  // namespace

void begin_output_transaction() {
  std::lock_guard lock(g_transaction_mutex);
  g_transaction_open = true;
  g_published.clear();
}

void end_output_transaction(bool keep) {
  std::lock_guard lock(g_transaction_mutex);
  for (auto it = g_published.rbegin(); it != g_published.rend(); ++it) {
    if (it->backup_cleanup) it->backup_cleanup->disarm();
    if (keep) {
      if (!it->backup.empty()) ::unlink(it->backup.c_str());
    } else if (it->backup.empty()) {
      ::unlink(it->path.c_str());
    } else {
      ::rename(it->backup.c_str(), it->path.c_str());
    }
  }
  g_published.clear();
  g_transaction_open = false;
}

int descriptor_alias(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string_view p(prefix);
    if (!path.starts_with(p) || path.size() == p.size() || path.size() > p.size() + 9) continue;
    int fd = 0;
    for (size_t i = p.size(); i < path.size(); ++i) {
      if (path[i] < '0' || path[i] > '9') return -1;
      fd = fd * 10 + (path[i] - '0');
    }
    return fd;
  }
  return -1;
}

bool is_special_output(const std::string& path) {
  if (descriptor_alias(path) >= 0) return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  const auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (const int alias = descriptor_alias(path); alias >= 0) {
    struct stat st {};
    if (::fstat(alias, &st) != 0) EDO_IO_FAIL("{}: descriptor {} is not open", path, alias);
    through_fd_ = alias;
  } else if (is_special_output(path)) {
    through_path_ = path;
  }
  if (writes_through()) {
    // Never a temporary inside /dev: the spool goes where temporaries belong.
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/";
    name = "edo-" + name;
  }
  std::string templ = dir + "." + name + ".tmp-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) EDO_IO_FAIL("{}: cannot create output: {}", path, std::strerror(errno));
  temp_path_.assign(buf.data());
  cleanup_.arm(temp_path_);
  ::fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  // A written-through output leaves its spool behind in no case.
  if ((!committed_ || writes_through()) && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  pwrite(data, size, position_);
  position_ += size;
}

void AtomicFile::pwrite(const void* data, size_t size, uint64_t offset) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      EDO_IO_FAIL("{}: write failed: {}", path_, std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFile::commit() {
  if (writes_through()) {
    copy_onto_target();
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0 && errno != EINVAL) EDO_IO_FAIL("{}: fsync failed: {}", path_, std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    EDO_IO_FAIL("{}: close failed: {}", path_, std::strerror(errno));
  }
  fd_ = -1;
  const PublishedOutput published = keep_replaced_file(path_);
  // Disarmed first: a signal between the two leaves the temporary behind,
  // never removes the finished output.
  cleanup_.disarm();
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    if (!published.backup.empty()) ::unlink(published.backup.c_str());
    EDO_IO_FAIL("{}: cannot rename temporary into place: {}", path_, std::strerror(err));
  }
  record_published(published);
  committed_ = true;
}

void AtomicFile::copy_onto_target() {
  int target = through_fd_;
  if (target < 0) {
    // A FIFO blocks here until a reader opens it, as `cat > fifo` does.
    target = ::open(through_path_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (target < 0) EDO_IO_FAIL("{}: cannot open for writing: {}", path_, std::strerror(errno));
  }
  std::vector<uint8_t> chunk(size_t{1} << 20);
  uint64_t offset = 0;
  std::string failure;
  while (failure.empty()) {
    const ssize_t got = ::pread(fd_, chunk.data(), chunk.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) failure = fmt::format("cannot read the spool {}: {}", temp_path_, std::strerror(errno));
    if (got <= 0) break;
    offset += static_cast<uint64_t>(got);
    for (ssize_t done = 0; done < got && failure.empty();) {
      const ssize_t n = ::write(target, chunk.data() + done, static_cast<size_t>(got - done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) failure = fmt::format("write failed: {}", n < 0 ? std::strerror(errno) : "no progress");
      done += std::max<ssize_t>(n, 0);
    }
  }
  if (through_fd_ < 0 && ::close(target) != 0 && failure.empty())
    failure = fmt::format("close failed: {}", std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (!failure.empty()) EDO_IO_FAIL("{}: {}", path_, failure);
}

void check_free_space(const std::string& path, uint64_t bytes) {
  std::string dir;
  if (is_special_output(path)) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp && *tmp ? tmp : "/tmp";
  } else {
    const auto slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  }
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return;  // the write itself reports a missing directory
  const uint64_t blocks = fs.f_bavail, block = fs.f_frsize ? fs.f_frsize : fs.f_bsize;
  const uint64_t free_bytes = block && blocks > UINT64_MAX / block ? UINT64_MAX : blocks * block;
  if (bytes > free_bytes)
    EDO_IO_FAIL("{}: the output needs at least {} bytes and {} has {} free", path, bytes, dir, free_bytes);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace edo::io
