// The threads a rank computes on: its share of its host's cores. Work is cut
// into pieces by the caller from the problem's shape alone (never from the
// thread count), and each piece is computed whole by one thread, so results are
// bit-identical whatever the number of threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace engine::cpu {

class ThreadPool {
 public:
  // `threads` in all, the caller's included (1: no worker thread).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs piece(i) for i in [0, pieces), spread over the threads, and returns
  // when all are done (the first exception thrown by a piece is rethrown).
  // One job at a time: concurrent callers take turns.
  void run(std::int64_t pieces, const std::function<void(std::int64_t)>& piece);

 private:
  // One call of run: the pieces, taken in order by whoever comes first.
  struct Job {
    Job(const std::function<void(std::int64_t)>* p, std::int64_t n) : piece(p), pieces(n) {}
    const std::function<void(std::int64_t)>* piece;
    std::int64_t pieces;
    std::atomic<std::int64_t> next{0}, done{0};
    std::mutex error_mutex;
    std::exception_ptr error;
  };
  static void take_pieces(Job& job);
  void work();

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;      // guards job_ and stop_
  std::condition_variable wake_;
  Job* job_ = nullptr;
  bool stop_ = false;
  std::atomic<std::uint64_t> generation_{0};  // bumped for each job
  std::atomic<int> holding_{0};               // workers that took job_ and may still touch it
};

// block(first, count) for the blocks [first, first+count) of `per_block` items
// (the last one shorter) that cut [0, total), on `pool` (none: this thread).
void run_blocks(ThreadPool* pool, int total, int per_block, const std::function<void(int first, int count)>& block);

// The cores of this machine (at least 1).
int hardware_threads();

}  // namespace engine::cpu
