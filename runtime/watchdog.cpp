#include "runtime/watchdog.h"

#include <algorithm>
#include <exception>

#include "runtime/context.h"
#include "runtime/engine_log.h"

namespace flowrt {

Watchdog::Watchdog(std::function<double()> run_clock, OnAbandon on_abandon, double grace_ms, int period_ms)
    : run_clock_(std::move(run_clock)), on_abandon_(std::move(on_abandon)), grace_ms_(grace_ms), period_ms_(period_ms) {}

Watchdog::~Watchdog() { stop(); }

void Watchdog::start() {
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  exit_ = false;
  stop_deadline_.reset();
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::begin_stopping() {
  {
    MutexLock lock(mu_);
    if (!stop_deadline_) {
      stop_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double, std::milli>(grace_ms_));
    }
  }
  wake_.notify_all();
}

void Watchdog::stop() {
  begin_stopping();
  std::vector<std::pair<std::shared_ptr<Call>, Reason>> stuck;
  {
    MutexLock lock(mu_);
    const Clock::time_point until = *stop_deadline_;
    while (!calls_.empty() && Clock::now() < until) wake_.wait_until(mu_, until);
    for (std::shared_ptr<Call>& c : calls_) {
      if (c->abandon()) stuck.emplace_back(std::move(c), Reason::kStopping);
    }
    calls_.clear();
    exit_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  give_up(std::move(stuck));
}

std::shared_ptr<Watchdog::Call> Watchdog::begin(std::shared_ptr<Context> context, int64_t record, Value path,
                                                std::string action, std::vector<int64_t> open_records,
                                                double deadline_ms) {
  auto call = std::make_shared<Call>();
  call->context = std::move(context);
  call->record = record;
  call->path = std::move(path);
  call->action = std::move(action);
  call->open_records = std::move(open_records);
  call->deadline_ms = deadline_ms;
  call->worker = std::this_thread::get_id();
  bool first = false;
  {
    MutexLock lock(mu_);
    first = calls_.empty();
    calls_.push_back(call);
  }
  if (first) wake_.notify_all();
  return call;
}

void Watchdog::end(const std::shared_ptr<Call>& call) {
  bool last = false;
  {
    MutexLock lock(mu_);
    calls_.erase(std::remove(calls_.begin(), calls_.end(), call), calls_.end());
    last = calls_.empty() && stop_deadline_.has_value();
  }
  if (last) wake_.notify_all();  // stop() may be waiting for the last call
}

void Watchdog::note_cancel(const Context* context) {
  MutexLock lock(mu_);
  if (calls_.empty()) return;
  const double now = run_clock_();
  for (const std::shared_ptr<Call>& c : calls_) {
    if ((context == nullptr || c->context.get() == context) && c->cancel_seen_ms < 0) c->cancel_seen_ms = now;
  }
}

void Watchdog::loop() {
  while (true) {
    {
      MutexLock lock(mu_);
      while (!exit_ && calls_.empty()) wake_.wait(mu_);
      // A whole period, whatever else notifies meanwhile (a new call's begin): a call that
      // just began is not overdue, and only an exit ends the wait early.
      const auto until = Clock::now() + std::chrono::milliseconds(period_ms_);
      while (!exit_ && Clock::now() < until) wake_.wait_until(mu_, until);
      if (exit_) return;
    }
    check();
  }
}

void Watchdog::check() {
  std::vector<std::pair<std::shared_ptr<Call>, Reason>> overdue;
  {
    MutexLock lock(mu_);
    if (calls_.empty()) return;
    const double now = run_clock_();
    const bool stop_passed = stop_deadline_ && Clock::now() >= *stop_deadline_;
    for (auto it = calls_.begin(); it != calls_.end();) {
      Call& c = **it;
      const bool cancelled = c.context->cancel_requested();
      if (cancelled && c.cancel_seen_ms < 0) c.cancel_seen_ms = now;
      const bool quota = now > c.deadline_ms;
      const bool late = quota || (cancelled && now > c.cancel_seen_ms + grace_ms_) || stop_passed;
      if (late && c.abandon()) {
        overdue.emplace_back(*it, quota ? Reason::kQuota : (stop_passed ? Reason::kStopping : Reason::kCancelled));
        it = calls_.erase(it);
      } else {
        ++it;
      }
    }
  }
  give_up(std::move(overdue));
}

void Watchdog::give_up(std::vector<std::pair<std::shared_ptr<Call>, Reason>> calls) {
  // Outside mu_: ending a context takes the engine's locks.
  for (auto& [call, why] : calls) {
    call->close();  // from here on, the action's host methods are inert
    abandoned_.fetch_add(1, std::memory_order_relaxed);
    try {
      on_abandon_(*call, why);
    } catch (const std::exception& e) {
      engine_log().error("giving up on action '{}' failed: {}", call->action, e.what());
    }
  }
}

}  // namespace flowrt
