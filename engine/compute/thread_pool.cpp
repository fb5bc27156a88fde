#include "engine/compute/thread_pool.hpp"

#include <algorithm>
#include <chrono>

namespace engine::cpu {

namespace {
// How long an idle worker sleeps before it looks again: a missed wake-up costs
// at most this, and no worker waits unbounded.
constexpr auto kIdleCheck = std::chrono::milliseconds(50);
// How long a worker keeps looking for the next job before it sleeps: a decode
// step runs a matrix product every few hundred microseconds, and waking a
// sleeping thread costs tens of them.
constexpr auto kSpin = std::chrono::microseconds(300);
}  // namespace

int hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::take_pieces(Job& job) {
  for (std::int64_t i; (i = job.next.fetch_add(1)) < job.pieces;) {
    try {
      (*job.piece)(i);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    job.done.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::work() {
  std::uint64_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until)
      std::this_thread::yield();
    Job* job;
    {
      std::unique_lock lock(mutex_);
      while (!stop_ && generation_.load() == seen) wake_.wait_for(lock, kIdleCheck);
      if (stop_) return;
      seen = generation_.load();
      job = job_;
      if (job) holding_.fetch_add(1);
    }
    if (!job) continue;  // that job has ended already
    take_pieces(*job);
    holding_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(std::int64_t pieces, const std::function<void(std::int64_t)>& piece) {
  if (pieces <= 0) return;
  if (workers_.empty() || pieces == 1) {
    for (std::int64_t i = 0; i < pieces; ++i) piece(i);
    return;
  }
  std::lock_guard one_job(run_mutex_);
  Job job(&piece, pieces);
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  take_pieces(job);
  // Every piece is taken: the others only finish computing theirs, which
  // cannot block, so these waits end.
  while (job.done.load(std::memory_order_acquire) < pieces) std::this_thread::yield();
  {
    std::lock_guard lock(mutex_);
    job_ = nullptr;
  }
  while (holding_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  if (job.error) std::rethrow_exception(job.error);
}

void run_blocks(ThreadPool* pool, int total, int per_block, const std::function<void(int first, int count)>& block) {
  const std::int64_t blocks = (total + per_block - 1) / per_block;
  auto one = [&](std::int64_t b) {
    const int first = static_cast<int>(b * per_block);
    block(first, std::min(per_block, total - first));
  };
  if (pool)
    pool->run(blocks, one);
  else
    for (std::int64_t b = 0; b < blocks; ++b) one(b);
}

}  // namespace engine::cpu
