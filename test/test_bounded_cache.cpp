// SPDX-License-Identifier: Apache-2.0
// ReaderOptions::max_resident: disk tiers read through a bounded page cache
// give the mapped reader's rows, keep the process's resident set within the
// budget on a file larger than it (pages evicted from the page cache first),
// and refuse a budget the resident tiers do not fit in.
#include "../lib/reader/page_cache.hpp"
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace edo;

namespace {

// The process's resident set now, from /proc (bytes).
uint64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Drops the file's pages from the kernel's page cache, so reads go to the disk path.
void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// 400,000 x 64 seeded rows: 1% fp16 on the host, the rest int8 on disk (26 MB).
struct BigPacked {
  test::TempDir dir;
  std::string path = dir.file("big.edo");
  static constexpr uint64_t kRows = 400000, kDim = 64;
  BigPacked() {
    {
      auto w = io::create_table(dir.file("t.npy"), kRows, kDim);
      std::vector<float> block(10000 * kDim);
      Rng rng(5);
      for (uint64_t b = 0; b < kRows; b += 10000) {
        for (auto& v : block) v = static_cast<float>(rng.uniform() - 0.5);
        w->write_f32(block.data(), 10000);
      }
      w->commit();
    }
    auto table = io::open_table(dir.file("t.npy"));
    PackOptions opt;
    opt.tiers = {parse_tier_spec("hot:rows=1%:fp16:host"), parse_tier_spec("cold:rest:int8:disk")};
    pack_to_edo(*table, path, opt);
  }
};

std::vector<int64_t> random_ids(uint64_t n, uint64_t rows, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng.below(rows));
  return ids;
}

}  // namespace

TEST_CASE("bounded cache: the rows of the mapped reader, resident set within the budget") {
  const BigPacked file;
  const uint64_t dim = BigPacked::kDim;
  const std::vector<int64_t> ids = random_ids(100000, BigPacked::kRows, 9);
  std::vector<float> mapped(ids.size() * dim), bounded(ids.size() * dim);
  std::memset(bounded.data(), 0, bounded.size() * sizeof(float));  // touched before measuring

  evict(file.path);
  ReaderOptions ro;
  ro.max_resident = 4 << 20;  // 4 MB against a 26 MB disk tier
  const Reader reader = Reader::open(file.path, ro);
  REQUIRE(reader.cache_capacity() > 0);
  const uint64_t before = resident_bytes();
  for (size_t begin = 0; begin < ids.size(); begin += 4096) {
    const size_t n = std::min<size_t>(4096, ids.size() - begin);
    reader.lookup(ids.data() + begin, n, bounded.data() + begin * dim);
  }
  const uint64_t grown = resident_bytes() - std::min(before, resident_bytes());
  const CacheCounts c = reader.cache_counts(1);
  CHECK(c.cached);
  CHECK(c.misses > 0);
  CHECK(c.bytes_read > 0);
  CHECK_FALSE(reader.cache_counts(0).cached);
  // The budget, plus slack for the lookup's own scratch (thread-local codes and indices).
  MESSAGE("resident growth with a 4 MB budget: ", grown / 1024, " KB");
  CHECK(grown <= ro.max_resident + (2u << 20));

  // The mapped reader touches the disk tier's pages as it goes: far more.
  const Reader plain = Reader::open(file.path);
  std::memset(mapped.data(), 0, mapped.size() * sizeof(float));
  const uint64_t plain_before = resident_bytes();
  plain.lookup(ids.data(), ids.size(), mapped.data());
  const uint64_t plain_grown = resident_bytes() - std::min(plain_before, resident_bytes());
  MESSAGE("resident growth mapped: ", plain_grown / 1024, " KB");
  CHECK(plain_grown > 3 * ro.max_resident);
  CHECK(std::memcmp(mapped.data(), bounded.data(), mapped.size() * sizeof(float)) == 0);

  // decode_rows (a scan, read past the cache) agrees too.
  std::vector<float> a(1000 * dim), b(1000 * dim);
  reader.decode_rows(123456, 1000, a.data());
  plain.decode_rows(123456, 1000, b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("bounded cache: a budget below the resident tiers is refused, saying what is needed") {
  const BigPacked file;
  ReaderOptions ro;
  ro.max_resident = 1 << 20;  // the host tier and the row map alone take more
  const std::string err = test::error_of([&] { Reader::open(file.path, ro); });
  CHECK(err.find("too small") != std::string::npos);
  CHECK(err.find("give at least") != std::string::npos);
  ro.max_resident = 8 << 20;
  ro.cache_page_bytes = 5000;
  CHECK(test::error_of([&] { Reader::open(file.path, ro); }).find("power of two") != std::string::npos);
}

TEST_CASE("page cache: reads equal the file's bytes, evicts to its capacity, fails cleanly on truncation") {
  test::TempDir dir;
  const std::string path = dir.file("bytes.bin");
  std::vector<uint8_t> bytes(1 << 20);
  Rng rng(2);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.next());
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  detail::PageCache cache(path, bytes.size(), 16 * 4096, 4096, 1);
  cache.keep(0, 8192);  // the first two pages stay once loaded
  std::vector<uint8_t> got(10000);
  for (int round = 0; round < 3; ++round)
    for (uint64_t offset : {uint64_t{0}, uint64_t{4000}, uint64_t{123457}, uint64_t{(1 << 20) - 10000}}) {
      cache.read(0, offset, got.size(), got.data());
      CHECK(std::memcmp(got.data(), bytes.data() + offset, got.size()) == 0);
    }
  const detail::PageCacheCounts c = cache.counts(0);
  // 12 reads of 10000 bytes, each over three or four pages; the rounds after the first hit.
  CHECK(c.misses + c.hits >= 36);
  CHECK(c.hits >= 24);
  // Sweep far more pages than fit; then the kept first page is still a hit.
  for (uint64_t offset = 8192; offset + 4096 <= bytes.size(); offset += 4096) cache.read(0, offset, 16, got.data());
  const uint64_t misses = cache.counts(0).misses;
  cache.read(0, 100, 16, got.data());
  CHECK(cache.counts(0).misses == misses);
  cache.read(0, 8192 * 3, 16, got.data());  // long evicted
  CHECK(cache.counts(0).misses == misses + 1);
  CHECK_THROWS(cache.read(0, bytes.size() - 4, 16, got.data()));  // beyond the file

  // Batches of spans, by pread and by io_uring: more pages than the cache
  // holds in one batch, spans across page edges, repeats.
  for (const auto io : {CacheIo::pread, CacheIo::io_uring, CacheIo::automatic}) {
    CAPTURE(static_cast<int>(io));
    detail::PageCache batch(path, bytes.size(), 8 * 4096, 4096, 1, io);
    std::vector<uint64_t> offsets;
    for (int k = 0; k < 300; ++k) offsets.push_back((rng.next() % (bytes.size() - 100)));
    offsets.push_back(4090);  // across a page edge
    offsets.push_back(offsets.front());
    std::vector<uint8_t> spans(offsets.size() * 100);
    try {
      batch.read_spans(0, offsets.data(), offsets.size(), 100, spans.data());
    } catch (const Error& e) {
      if (io == CacheIo::io_uring && std::string(e.what()).find("not available") != std::string::npos) {
        MESSAGE("io_uring skipped: ", e.what());
        continue;
      }
      throw;
    }
    for (size_t k = 0; k < offsets.size(); ++k)
      CHECK(std::memcmp(spans.data() + k * 100, bytes.data() + offsets[k], 100) == 0);
    CHECK(batch.counts(0).misses > 8);
  }
  REQUIRE(::truncate(path.c_str(), 1 << 19) == 0);
  const std::string err =
      test::error_of([&] { cache.read(0, 600000, 50, got.data()); });  // an evicted page past the new end
  CHECK(err.find("truncated while being served") != std::string::npos);
}
