// SPDX-License-Identifier: Apache-2.0
// Small POSIX file helpers: a read-only mapping and an output file that only
// appears under its final name once it is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edo::io {

// Where a MappedFile's bytes are served from.
enum class Placement : uint8_t {
  // The file mapped: open costs nothing, pages are shared with every process
  // that maps the file and evictable, but each is 4 KB, so random rows of a
  // big file miss the TLB and walk the page tables on most reads.
  mapped,
  // The file read once, at open, into private memory the kernel backs with
  // transparent huge pages where it can (2 MB: a TLB entry covers 512 times
  // the bytes), as numpy's big arrays are: faster random reads, at the cost
  // of reading the whole file at open and holding its bytes unshared.
  memory,
};
// "mapped" or "memory" (edo-lookup --placement, the Python module's
// placement=); anything else is a usage error naming the choices.
Placement parse_placement(std::string_view name);
const char* placement_name(Placement placement);

// A whole file mapped read-only. Empty files map to (nullptr, 0).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path, Placement placement = Placement::mapped);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept
      : fd_(other.fd_),
        path_(std::move(other.path_)),
        data_(other.data_),
        size_(other.size_),
        placement_(other.placement_) {
    other.fd_ = -1;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  MappedFile& operator=(MappedFile&&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Tells the kernel the pages around [offset, offset + length) are no
  // longer needed by this process, so streaming a big file, or reading
  // scattered rows, keeps resident memory bounded. The data stays valid (it
  // is mapped again on the next touch). Nothing for Placement::memory,
  // whose bytes are the only copy.
  void release(uint64_t offset, uint64_t length) const;
  // Copies [offset, offset + size) with pread, bypassing the mapping: for
  // scattered small reads, cheaper than faulting a page cluster per read.
  void read_at(uint64_t offset, void* out, size_t size) const;

 private:
  int fd_ = -1;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  Placement placement_ = Placement::mapped;
};

// Files removed if the process is ended by SIGINT, SIGTERM, SIGHUP or SIGPIPE
// once install_signal_cleanup() has run: the temporaries of AtomicFile, the
// stdin spool, intermediates. kill -9 cannot be caught; everything else
// leaves no file behind. A registration holds its path until it is dropped.
class CleanupOnSignal {
 public:
  CleanupOnSignal() = default;
  explicit CleanupOnSignal(const std::string& path) { arm(path); }
  ~CleanupOnSignal() { disarm(); }
  CleanupOnSignal(const CleanupOnSignal&) = delete;
  CleanupOnSignal& operator=(const CleanupOnSignal&) = delete;
  // Registers `path` (replacing any earlier one). Paths longer than PATH_MAX
  // or beyond the registry's slots are not registered.
  void arm(const std::string& path);
  // Forgets the path without removing it (the file was renamed or is kept).
  void disarm();

 private:
  int slot_ = -1;
};

// A file mapped for reading that shrinks underneath (truncated by another
// process) makes the next touch of its lost pages raise SIGBUS. After this
// call such a fault removes the registered temporaries, prints `line` (one
// line, e.g. "edo-lookup: t.edo: the file shrank while being served") on
// stderr and exits with status 1, instead of dying by the signal. Call again
// to change the line (at most 1023 bytes are kept).
void report_bus_errors_as(const std::string& line);

// "a FIFO", "a character device", ... for a stat mode that is no regular file.
const char* special_file_kind(unsigned mode);

// Refuses (an error naming `path`) an existing path that is not a regular
// file: opening a FIFO to read waits for a writer, forever if none comes.
// MappedFile makes the same check on its descriptor; readers that open by
// name through a library (libzip, HDF5) call this first. A missing path
// passes (its open says so).
void require_regular_file(const std::string& path);
// True when `path` exists and is a regular file (stat: never opens it). What
// a format sniffer checks before it opens a path to read its first bytes.
bool is_regular_file(const std::string& path);

// A file a model input names beside itself (a shard an index names, a .npy
// of a folder), checked before it is opened: a symbolic link whose target is
// not in `dir` is refused unless `follow_links_out` (--allow-external: a
// Hugging Face cache links its snapshots' files into blobs/). `named_by`
// says what named it, for the message. A missing file passes (its open says so).
void check_link_beside(const std::string& path, const std::string& dir, const std::string& named_by,
                       bool follow_links_out);

// Installs the handlers (signals the parent set to be ignored stay ignored).
// Each handler removes every registered file, then ends the process by the
// same signal, so the exit status still says how it ended. SIGXFSZ is
// ignored: a write past `ulimit -f` fails with EFBIG, reported as an error.
void install_signal_cleanup();

// Writes to "<dir>/.<name>.tmp-XXXXXX" and renames onto `path` in commit().
// The destructor removes the temporary when commit() was not reached.
//
// A rename would replace what is not a regular file, so a target that is a
// device, FIFO or socket (/dev/null, a named pipe), or a path naming an open
// descriptor (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), is
// written through instead: the output is spooled to "$TMPDIR/.edo-<name>.tmp-XXXXXX"
// (headers are patched after the payload, so it cannot stream) and copied
// onto the target in commit(). A failed run writes nothing to it.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  // Writes at an absolute offset (for headers patched after the payload).
  void pwrite(const void* data, size_t size, uint64_t offset);
  uint64_t position() const { return position_; }
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }
  // True when commit() copies onto a special file instead of renaming.
  bool writes_through() const { return through_fd_ >= 0 || !through_path_.empty(); }

 private:
  void copy_onto_target();
  std::string path_;
  std::string temp_path_;
  std::string through_path_;  // a device, FIFO or socket opened at commit
  int through_fd_ = -1;       // a descriptor named by /dev/stdout and the like
  int fd_ = -1;
  uint64_t position_ = 0;
  bool committed_ = false;
  CleanupOnSignal cleanup_;
};

// A run's outputs are kept only if the run succeeds. Between
// begin_output_transaction() and end_output_transaction(keep), an
// AtomicFile::commit() over an existing regular file first keeps the old
// file under a hard link beside it (".<name>.old-<pid>-<n>"); end(false)
// puts back what each output replaced and removes what was new, in reverse
// order; end(true) drops the old copies. Written-through outputs (devices,
// FIFOs, /dev/stdout) cannot be taken back; a file system without hard links
// keeps a replaced output. The tools open one transaction around their whole
// run (apps/cli_common.hpp).
void begin_output_transaction();
void end_output_transaction(bool keep);

// Refuses (an error naming `path`) to start an output of at least `bytes`
// bytes where its file system (the target's directory, or $TMPDIR for a
// written-through output) has less free: a full disk found at the end costs
// the whole run.
void check_free_space(const std::string& path, uint64_t bytes);

// True when the two paths name the same existing file (same device and inode).
bool same_file(const std::string& a, const std::string& b);

// The descriptor a path names without naming a file of its own: 1 for
// /dev/stdout, 2 for /dev/stderr, N for /dev/fd/N and /proc/self/fd/N; -1 otherwise.
int descriptor_alias(const std::string& path);

// True when `path` exists and is a device, FIFO or socket (following links),
// or names an open descriptor: what AtomicFile writes through, not renames over.
bool is_special_output(const std::string& path);

}  // namespace edo::io
