// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the unit tests: scratch directories and raw file writing.
#pragma once

#include <doctest/doctest.h>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/io/table.hpp>
#include <edo/random.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace edo::test {

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "edo-test-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Number of entries in the directory (to check nothing was left behind).
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

template <class T>
std::string as_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// rows x dim values uniform in [-1, 1) from a seeded generator, written as .npy.
inline std::vector<float> write_random_npy(const std::string& path, uint64_t rows, uint64_t dim, uint64_t seed) {
  edo::Rng rng(seed);
  std::vector<float> x(rows * dim);
  for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  auto w = edo::io::create_table(path, rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
  return x;
}

// Zipf access counts: row r looked up 1 / (r + 1) times.
inline std::vector<double> zipf_counts(uint64_t rows) {
  std::vector<double> f(rows);
  for (uint64_t r = 0; r < rows; ++r) f[r] = 1.0 / static_cast<double>(r + 1);
  return f;
}

// Runs `fn` and returns the exit code of the edo::Error it throws (ok: none).
template <class Fn>
edo::ExitCode code_of(Fn&& fn) {
  try {
    fn();
  } catch (const edo::Error& e) {
    return e.code();
  }
  return edo::ExitCode::ok;
}

// Runs `fn` and returns the message of the edo::Error it must throw.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const edo::Error& e) {
    return e.what();
  }
  FAIL("expected edo::Error");
  return {};
}

inline std::string shared_data(const std::string& name) { return std::string(EDO_SHARED_DATA_DIR) + "/" + name; }
inline std::string sample_data(const std::string& name) { return std::string(EDO_SAMPLES_DIR) + "/" + name; }

// True (with a message saying so) when no CUDA GPU is present: GPU tests
// return early and pass here; scripts/gpu-check.sh runs them where one is.
inline bool skip_without_gpu() {
  if (cuda_available()) return false;
#ifdef EDO_HAVE_CUDA
  MESSAGE("skipped: no CUDA GPU (built with CUDA: yes)");
#else
  MESSAGE("skipped: no CUDA GPU (built with CUDA: no)");
#endif
  return true;
}

}  // namespace edo::test
