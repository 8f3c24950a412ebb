// ReplyWaker: lets the thread that has a deferred reply's answer (the cluster's answer
// thread, a worker ending a context) tell the HTTP server to poll the reply now, rather
// than at its next timer tick (Reply::waker).
//
// Contract: wake() before the server binds is remembered, and bind() then calls at once;
// every wake() after bind() calls the bound function; a wake after the reply was answered
// or dropped does whatever the bound function does then (the server's ignores it).
// Thread-safety: wake() from any thread; bind() once, from the server. Shared by the
// reply and whoever wakes it.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

namespace flowrt::server {

class ReplyWaker {
 public:
  void wake() {
    std::function<void()> fn;
    {
      std::lock_guard lock(mu_);
      if (!bound_) {
        woken_ = true;
        return;
      }
      fn = bound_;
    }
    fn();
  }
  void bind(std::function<void()> fn) {
    bool woken = false;
    {
      std::lock_guard lock(mu_);
      bound_ = fn;
      woken = woken_;
    }
    if (woken) fn();
  }

 private:
  std::mutex mu_;
  std::function<void()> bound_;  // guarded by mu_
  bool woken_ = false;           // guarded by mu_: woken before bind
};

}  // namespace flowrt::server
