// OrderedReadAhead: makes the items 0, 1, ..., count - 1 on a few threads of its own and
// hands them to one consumer in that order, with at most `ahead` items made and not yet
// taken (so memory holds a bounded window). Recovery reads and parses the ranges of a
// store's contexts this way.
//
// The threads live as long as the object (not one per item): an item's memory is made
// and let go on threads whose allocator caches stay warm.
//
// An exception `make` throws for an item is thrown by next() in that item's place.
//
// Thread-safety: next() is for one consumer thread; `make` runs on the object's threads,
// concurrently with itself for different indexes. The destructor stops the threads (items
// not taken are dropped) and joins them. Owns the threads and the items not yet taken; mu_
// guards the counters and the items made.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {

template <class T>
class OrderedReadAhead {
 public:
  OrderedReadAhead(size_t count, size_t threads, size_t ahead, std::function<T(size_t)> make)
      : count_(count), ahead_(ahead < 1 ? 1 : ahead), make_(std::move(make)) {
    for (size_t t = 0; t < threads && t < count; ++t) threads_.emplace_back([this] { loop(); });
  }
  ~OrderedReadAhead() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  OrderedReadAhead(const OrderedReadAhead&) = delete;
  OrderedReadAhead& operator=(const OrderedReadAhead&) = delete;

  // The next item in index order, waiting until it is made; nullopt after the last.
  std::optional<T> next() EXCLUDES(mu_) {
    Made item;
    {
      MutexLock lock(mu_);
      if (taken_ == count_) return std::nullopt;
      auto it = made_.find(taken_);
      while (it == made_.end()) {
        changed_.wait(mu_);
        it = made_.find(taken_);
      }
      item = std::move(it->second);
      made_.erase(it);
      ++taken_;
    }
    changed_.notify_all();  // a thread may start the next item
    if (std::exception_ptr* failed = std::get_if<std::exception_ptr>(&item)) std::rethrow_exception(*failed);
    return std::optional<T>(std::move(std::get<T>(item)));
  }

 private:
  void loop() EXCLUDES(mu_) {
    for (;;) {
      size_t index = 0;
      {
        MutexLock lock(mu_);
        while (!stopping_ && next_ < count_ && next_ >= taken_ + ahead_) changed_.wait(mu_);
        if (stopping_ || next_ == count_) return;
        index = next_++;
      }
      Made item;
      try {
        item.template emplace<T>(make_(index));
      } catch (...) {
        item = std::current_exception();
      }
      {
        MutexLock lock(mu_);
        made_.emplace(index, std::move(item));
      }
      changed_.notify_all();
    }
  }

  using Made = std::variant<std::exception_ptr, T>;  // what make() gave, or threw

  const size_t count_;
  const size_t ahead_;
  const std::function<T(size_t)> make_;
  Mutex mu_;
  CondVar changed_;
  size_t next_ GUARDED_BY(mu_) = 0;   // the next index a thread makes
  size_t taken_ GUARDED_BY(mu_) = 0;  // items the consumer took
  bool stopping_ GUARDED_BY(mu_) = false;
  std::map<size_t, Made> made_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace flowrt
