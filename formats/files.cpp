#include <edo/error.hpp>
#include <edo/io/files.hpp>

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
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

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) EDO_FAIL("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    EDO_FAIL("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    EDO_FAIL("{}: is a directory", path);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      EDO_FAIL("{}: cannot map: {}", path, std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
    ::madvise(p, size_, MADV_SEQUENTIAL);
  }
  fd_ = fd;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read_at(uint64_t offset, void* out, size_t size) const {
  if (offset > size_ || size > size_ - offset) EDO_FAIL("{}: read past the end of the file", path_);
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) EDO_FAIL("{}: read failed: {}", path_, n < 0 ? std::strerror(errno) : "unexpected end of file");
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
  if (!data_ || offset >= size_ || length == 0) return;
  // Widened outward to 64 KiB: on a fault the kernel maps a cluster of file
  // pages around the address (fault-around), and a lone row read would
  // otherwise leave its neighbours resident. Dropping a page of a mapping is
  // always safe; the next touch maps it again from the page cache.
  constexpr uint64_t kCluster = uint64_t{64} << 10;
  const uint64_t first = offset / kCluster * kCluster;
  const uint64_t end = std::min(size_, (offset + length + kCluster - 1) / kCluster * kCluster);
  ::madvise(const_cast<uint8_t*>(data_) + first, end - first, MADV_DONTNEED);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string templ = dir + "." + name + ".tmp-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) EDO_FAIL("{}: cannot create output: {}", path, std::strerror(errno));
  temp_path_.assign(buf.data());
  cleanup_.arm(temp_path_);
  ::fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
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
      EDO_FAIL("{}: write failed: {}", path_, std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0 && errno != EINVAL) EDO_FAIL("{}: fsync failed: {}", path_, std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    EDO_FAIL("{}: close failed: {}", path_, std::strerror(errno));
  }
  fd_ = -1;
  // Disarmed first: a signal between the two leaves the temporary behind,
  // never removes the finished output.
  cleanup_.disarm();
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    EDO_FAIL("{}: cannot rename temporary into place: {}", path_, std::strerror(errno));
  committed_ = true;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace edo::io
