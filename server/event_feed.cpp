#include "server/event_feed.h"

#include <algorithm>
#include <chrono>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "server/context_summary.h"

namespace flowrt::server {
namespace {

constexpr uint64_t kMaxNewPerPoll = 500;  // a burst larger than this: only its newest
constexpr size_t kMaxOpen = 2000;         // contexts not ended that the feed follows
// The reason of the reset that tells a look left started contexts unannounced.
constexpr std::string_view kNotAnnounced = "contexts started and not announced";

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What tells one look at a context from the next: its status and how many steps it has.
std::string progress_of(const Value& record) {
  return std::string(record["status"].as_string()) + "/" + std::to_string(record["steps"].size());
}

}  // namespace

EventFeed::EventFeed(Engine& engine, int64_t period_ms, size_t capacity)
    : engine_(engine), period_ms_(period_ms), capacity_(capacity) {
  seen_seq_ = engine_.stats().contexts_started;
  // Ids go on across restarts: they start from the wall clock (in microseconds, within
  // JavaScript's exact integers), so a client resuming with an id of the last process
  // is told to reload instead of being given unrelated events.
  next_id_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
}

EventFeed::~EventFeed() { stop(); }

void EventFeed::start() {
  std::lock_guard lock(run_mu_);
  if (running_) return;
  running_ = true;
  thread_ = std::thread([this] {
    std::unique_lock l(run_mu_);
    while (running_) {
      l.unlock();
      poll();
      l.lock();
      run_cv_.wait_for(l, std::chrono::milliseconds(period_ms_), [this] { return !running_; });
    }
  });
}

void EventFeed::stop() {
  {
    std::lock_guard lock(run_mu_);
    if (!running_) return;
    running_ = false;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t EventFeed::subscribe() {
  std::lock_guard poll_lock(poll_mu_);
  if (subscribers_.fetch_add(1) == 0) begin_watching();
  return last_id();
}

void EventFeed::unsubscribe() { subscribers_.fetch_sub(1); }

void EventFeed::begin_watching() {
  // Follow every context not ended (recovered ones, those started while no one watched),
  // as it is now, so that its next change is sent; those that start after are announced
  // by poll as they start.
  // One pass that tells ended from not ended: a context that moved from waiting to
  // in_progress between a read of each status would be followed by neither.
  const uint64_t started = engine_.stats().contexts_started;
  open_.clear();
  for (const ContextRecord& r : engine_.unfinished_contexts(started + 1, kMaxOpen)) {
    if (!is_final_status(r.status())) open_[static_cast<uint64_t>(r.seq())] = progress_of(r.value());
  }
  seen_seq_ = started;
  locks_ = lock_states();  // as now: a change in the gap is the reset's, not an event after it
  // Nothing was read while no one watched: whatever a client saw before is stale, and one
  // resuming from before this point must reload. A reset marks the gap (every gap gets its
  // own: a client that resumed to the last one and went away again must reload again),
  // the first one too: a client that watched while nothing changed has the id the feed
  // began with, and is told to reload like any other.
  std::lock_guard lock(mu_);
  ring_.push_back(FeedEvent{next_id_++, "reset", "{\"reason\":\"changes while no client watched\"}"});
  while (ring_.size() > capacity_) ring_.pop_front();
}

std::map<std::string, std::string> EventFeed::lock_states() const {
  std::map<std::string, std::string> out;
  const Value locks = engine_.locks();
  for (const Value& l : locks.items()) {
    std::string text;
    write_json(l, text);
    out.emplace(std::string(l["name"].as_string()), std::move(text));
  }
  return out;
}

void EventFeed::publish(std::string type, const Value& data) {
  std::string text;
  write_json(data, text);
  std::lock_guard lock(mu_);
  ring_.push_back(FeedEvent{next_id_++, std::move(type), std::move(text)});
  while (ring_.size() > capacity_) ring_.pop_front();
}

std::vector<FeedEvent> EventFeed::after(uint64_t after, size_t max) const {
  std::lock_guard lock(mu_);
  std::vector<FeedEvent> out;
  if (after + 1 == next_id_) return out;
  // Ids it no longer holds, or never gave (another process's): the client must reload.
  if (after >= next_id_ || ring_.empty() || ring_.front().id > after + 1) {
    // Some of what the client missed is gone: it must reload, then follow from here.
    out.push_back(missed_reset(next_id_ - 1));
    return out;
  }
  return held_events_after(ring_, after, max);
}

uint64_t EventFeed::held_after() const {
  std::lock_guard lock(mu_);
  return ring_.empty() ? next_id_ - 1 : ring_.front().id - 1;
}

uint64_t EventFeed::last_id() const {
  std::lock_guard lock(mu_);
  return next_id_ - 1;
}

EventFeed::Figures EventFeed::figures() const {
  std::lock_guard lock(mu_);
  Figures f;
  if (rate_.size() >= 2 && rate_.back().first > rate_.front().first) {
    f.contexts_per_s = static_cast<double>(rate_.back().second - rate_.front().second) * 1000.0 /
                       static_cast<double>(rate_.back().first - rate_.front().first);
  }
  return f;
}

void EventFeed::poll() {
  std::lock_guard poll_lock(poll_mu_);
  const uint64_t started = engine_.stats().contexts_started;
  {
    std::lock_guard lock(mu_);
    rate_.emplace_back(steady_ms(), started);
    while (rate_.size() > 2 && rate_.back().first - rate_.front().first > 5000) rate_.pop_front();
  }
  if (subscribers_.load() == 0) {
    // Nothing is read while no one watches (a busy engine pays nothing for the feed); the
    // next subscriber begins watching afresh (begin_watching).
    open_.clear();
    seen_seq_ = started;
    return;
  }
  if (started > seen_seq_) {
    const uint64_t first = std::max(seen_seq_ + 1, started > kMaxNewPerPoll ? started - kMaxNewPerPoll + 1 : 1);
    // More started since the last look than one look announces: the older ones get no
    // event, and the client must be told so (a reset, before the newest ones' events) to
    // read them from GET /api/contexts, since nothing else shows they are missing.
    if (first > seen_seq_ + 1) publish("reset", Value::object({{"reason", Value(kNotAnnounced)}}));
    for (uint64_t seq = first; seq <= started; ++seq) {
      std::optional<ContextRecord> r = engine_.context("ctx-" + std::to_string(seq));
      if (!r) continue;
      const Value summary = context_summary(r->value());
      publish("context", Value::object({{"change", Value("started")}, {"context", summary}}));
      if (is_final_status(r->status())) {
        publish("context", Value::object({{"change", Value("ended")}, {"context", summary}}));
      } else if (open_.size() < kMaxOpen) {
        open_[seq] = progress_of(r->value());
      }
    }
    seen_seq_ = started;
  }
  // Contexts followed: what changed since the last look.
  for (auto it = open_.begin(); it != open_.end();) {
    std::optional<ContextRecord> r = engine_.context("ctx-" + std::to_string(it->first));
    if (!r) {
      it = open_.erase(it);
      continue;
    }
    const std::string progress = progress_of(r->value());
    if (progress == it->second) {
      ++it;
      continue;
    }
    it->second = progress;
    const std::string status = r->status();
    const std::string_view change = is_final_status(status) ? "ended" : status == "waiting" ? "waiting" : "step_ended";
    publish("context", Value::object({{"change", Value(change)}, {"context", context_summary(r->value())}}));
    if (is_final_status(status)) {
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
  // Locks: one event per lock whose state changed (or that is no longer held or waited for).
  std::map<std::string, std::string> now = lock_states();
  for (const auto& [name, state] : now) {
    auto old = locks_.find(name);
    if (old == locks_.end() || old->second != state) publish("lock", Value::object({{"name", Value(name)}}));
  }
  for (const auto& [name, state] : locks_) {
    if (!now.count(name)) publish("lock", Value::object({{"name", Value(name)}, {"released", Value(true)}}));
  }
  locks_ = std::move(now);
}

}  // namespace flowrt::server
