// SPDX-License-Identifier: Apache-2.0
#include <edo/threads.hpp>
#include <edo/work_share.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

namespace edo {

namespace {

// One call's chunks. Helpers keep it alive through a shared_ptr: one that
// wakes after the call returned finds no chunk left and touches nothing else.
struct Job {
  std::atomic<size_t> next{0};
  std::atomic<uint32_t> unfinished{0};  // chunks claimed or not yet, that have not run
  size_t chunks = 0;
  const std::function<void(size_t)>* run = nullptr;  // valid while unfinished > 0
  std::mutex failure_lock;
  std::exception_ptr failure;
  size_t failed_chunk = std::numeric_limits<size_t>::max();

  void run_chunk(size_t chunk) {
    try {
      (*run)(chunk);
    } catch (...) {
      std::lock_guard lock(failure_lock);
      if (chunk < failed_chunk) failed_chunk = chunk, failure = std::current_exception();
    }
    if (unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) unfinished.notify_all();
  }
  // Runs chunks until none is left unclaimed; how many it ran.
  size_t drain() {
    size_t ran = 0;
    for (size_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks; ++ran) run_chunk(c);
    return ran;
  }
};

std::atomic<bool> helpers_held{false};
std::atomic<size_t> helper_chunks{0};

// Helper threads, started on first use and never stopped (they sleep on a
// condition variable between calls; a process exits with them asleep).
class Helpers {
 public:
  // Publishes `job` to the helpers unless another call holds them; false then.
  bool try_begin(const std::shared_ptr<Job>& job, int helpers) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    {
      std::lock_guard lock(lock_);
      while (static_cast<int>(started_) < helpers) std::thread([this] { serve(); }).detach(), ++started_;
      job_ = job;
      ++generation_;
    }
    wake_.notify_all();
    return true;
  }
  void end() {
    {
      std::lock_guard lock(lock_);
      job_.reset();
    }
    busy_.store(false, std::memory_order_release);
  }

 private:
  void serve() {
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(lock_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
      }
      if (!job) continue;
      while (helpers_held.load(std::memory_order_acquire) && job->next.load() < job->chunks)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      helper_chunks.fetch_add(job->drain(), std::memory_order_relaxed);
    }
  }

  std::mutex lock_;
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  uint64_t generation_ = 0;
  unsigned started_ = 0;
  std::atomic<bool> busy_{false};
};

// A forked child has none of the parent's threads: it starts helpers of its
// own (the parent's object is left behind, never touched again).
Helpers* helpers_instance = nullptr;
std::once_flag atfork_once;

Helpers& helpers() {
  std::call_once(atfork_once, [] { ::pthread_atfork(nullptr, nullptr, [] { helpers_instance = nullptr; }); });
  static std::mutex create;
  std::lock_guard lock(create);
  if (!helpers_instance) helpers_instance = new Helpers();  // deliberately never freed
  return *helpers_instance;
}

}  // namespace

int share_threads() {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
  return std::clamp(omp_get_max_threads(), 1, usable_cores());
#else
  return 1;  // a build without OpenMP (the fuzz targets) serves on the calling thread
#endif
}

void share_work(size_t chunks, const std::function<void(size_t)>& run) {
  const int threads = share_threads();
  if (chunks == 0) return;
  if (chunks == 1 || threads <= 1 || chunks > std::numeric_limits<uint32_t>::max()) {
    for (size_t c = 0; c < chunks; ++c) run(c);
    return;
  }
  auto job = std::make_shared<Job>();
  job->chunks = chunks;
  job->run = &run;
  job->unfinished.store(static_cast<uint32_t>(chunks), std::memory_order_relaxed);
  Helpers& pool = helpers();
  const bool shared = pool.try_begin(job, threads - 1);
  job->drain();
  if (shared) {
    // Only chunks a helper claimed and is still running are waited for.
    for (uint32_t left; (left = job->unfinished.load(std::memory_order_acquire)) != 0;)
      job->unfinished.wait(left, std::memory_order_acquire);
    pool.end();
  }
  if (job->failure) std::rethrow_exception(job->failure);
}

namespace detail {
void hold_helpers(bool held) { helpers_held.store(held, std::memory_order_release); }
size_t helper_chunks_run() { return helper_chunks.load(std::memory_order_relaxed); }
}  // namespace detail

}  // namespace edo
