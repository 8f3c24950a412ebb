#include "runtime/journal.h"

#include <algorithm>
#include <chrono>

#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/perturb.h"
#include "runtime/stored_context.h"
#include "store/coalesce.h"

namespace flowrt {

namespace {
// A failing write is tried again after this, doubling up to the most.
constexpr int kFirstRetryMs = 10;
constexpr int kMaxRetryMs = 1000;
// Tries of a failing write once the journal is stopping, before what is left is given up.
constexpr int kTriesWhenStopping = 3;
}  // namespace

SyncMode sync_mode_of(Durability d) {
  switch (d) {
    case Durability::kFull: return SyncMode::kFull;
    case Durability::kNormal: return SyncMode::kNormal;
    case Durability::kOff: return SyncMode::kOff;
  }
  return SyncMode::kNormal;
}

Journal::Journal(EngineCore& core, Store& store, const StoreCounters& counters)
    : core_(core), store_(store), counters_(counters) {}

Journal::~Journal() { stop(); }

void Journal::start() {
  if (thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stopping_ = false;
    stopped_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void Journal::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    work_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  {
    MutexLock lock(mu_);
    stopped_ = true;
    wake_durable(UINT64_MAX);
    delivered_cv_.notify_all();
  }
  call_watchers(UINT64_MAX);
}

void Journal::wake_durable(uint64_t position) {
  const auto end = sleepers_.upper_bound(position);
  for (auto it = sleepers_.begin(); it != end; ++it) {
    it->second->woken = true;
    it->second->cv.notify_one();
  }
  sleepers_.erase(sleepers_.begin(), end);
}

uint64_t Journal::append(JournalEntry entry) {
  MutexLock lock(mu_);
  if (entry.has_counters) {
    StoreCounters& k = counters_;
    const StoreCounters& e = entry.counters;
    k.commit_seq = std::max(k.commit_seq, e.commit_seq);
    k.context_seq = std::max(k.context_seq, e.context_seq);
    k.fencing_token = std::max(k.fencing_token, e.fencing_token);
    k.sys_id_seed = e.sys_id_seed;
    k.sys_id_count = std::max(k.sys_id_count, e.sys_id_count);
  }
  if (!entry.wakes.empty()) {
    // Counted as work until delivered: see the class comment.
    core_.work_added(static_cast<int64_t>(entry.wakes.size()));
  }
  undelivered_.fetch_add(entry.pushes.size(), std::memory_order_acq_rel);
  pending_.push_back(std::move(entry));
  const uint64_t position = appended_.fetch_add(1, std::memory_order_acq_rel) + 1;
  work_cv_.notify_one();
  return position;
}

void Journal::release(const std::vector<uint64_t>& positions, std::optional<StoreChange> checkpoint) {
  if (positions.empty()) return;
  MutexLock lock(mu_);
  // A held entry stays in pending_ until released (run() takes entries up to the first
  // held one), so it is found there by its position.
  const uint64_t first = appended_.load(std::memory_order_acquire) - pending_.size() + 1;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < first) continue;  // written already (the journal was stopping)
    JournalEntry& e = pending_[positions[i] - first];
    const bool last = i + 1 == positions.size();
    if (last && checkpoint) e.changes.push_back(std::move(*checkpoint));
    e.held = false;
    e.continues = !last;
  }
  work_cv_.notify_one();
}

Status Journal::wait_durable(uint64_t position) {
  if (durable() >= position) return Status::ok();
  MutexLock lock(mu_);
  return *sleep_until_durable(position, std::nullopt);
}

std::optional<Status> Journal::wait_durable_until(uint64_t position, std::chrono::steady_clock::time_point deadline) {
  if (durable() >= position) return Status::ok();
  MutexLock lock(mu_);
  return sleep_until_durable(position, deadline);
}

std::optional<Status> Journal::sleep_until_durable(uint64_t position,
                                                   std::optional<std::chrono::steady_clock::time_point> deadline) {
  // The writer stores durable_ and wakes the sleepers under mu_: a sleeper added here
  // after the check is woken by the batch that reaches its position.
  auto before_deadline = [&] { return !deadline || std::chrono::steady_clock::now() < *deadline; };
  DurableSleeper me;
  while (durable() < position) {
    if (stopped_) return never_written();
    if (!before_deadline()) return std::nullopt;
    me.woken = false;
    const auto entry = sleepers_.emplace(position, &me);
    while (!me.woken && before_deadline()) {
      if (deadline) {
        me.cv.wait_until(mu_, *deadline);
      } else {
        me.cv.wait(mu_);
      }
    }
    if (!me.woken) sleepers_.erase(entry);  // the deadline came first: it is still there
  }
  return Status::ok();
}

std::optional<Status> Journal::reached(uint64_t position) {
  if (durable() >= position) return Status::ok();
  MutexLock lock(mu_);
  if (durable() >= position) return Status::ok();
  if (stopped_) return never_written();
  return std::nullopt;
}

void Journal::when_durable(uint64_t position, std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    // Checked under mu_: the writer stores durable_ and takes the watchers under it too, so
    // a watcher added here is either seen as reached now or called by the writer.
    if (durable() < position && !stopped_) {
      watchers_.emplace(position, std::move(fn));
      return;
    }
  }
  fn();
}

Status Journal::never_written() const {
  Status f = failure();
  if (gave_up_) return Error{"not written to the " + store_.describe() + ": " + f.message()};
  return Error{"not written to the " + store_.describe() + " before the engine stopped" +
               (f ? std::string() : ": " + f.message())};
}

void Journal::call_watchers(uint64_t position) {
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(mu_);
    const auto end = watchers_.upper_bound(position);
    for (auto it = watchers_.begin(); it != end; ++it) due.push_back(std::move(it->second));
    watchers_.erase(watchers_.begin(), end);
  }
  for (const auto& fn : due) fn();
}

void Journal::wait_delivered(uint64_t position) {
  if (delivered_.load(std::memory_order_acquire) >= position) return;
  MutexLock lock(mu_);
  while (delivered_.load(std::memory_order_acquire) < position && !stopped_) delivered_cv_.wait(mu_);
}

Status Journal::failure() const {
  MutexLock lock(fail_mu_);
  return failure_;
}

void Journal::set_failure(Status s) {
  MutexLock lock(fail_mu_);
  failure_ = std::move(s);
}

std::vector<JournalEntry>::iterator Journal::ready_end() {
  if (stopping_) return pending_.end();
  auto cut = std::find_if(pending_.begin(), pending_.end(), [](const JournalEntry& e) { return e.held; });
  // Not between the commits of one step.
  while (cut != pending_.begin() && std::prev(cut)->continues) --cut;
  return cut;
}

void Journal::run() {
  std::vector<JournalEntry> entries;
  // The batch written last, not finished yet (its waiters not woken, its contexts not
  // delivered): finished while the next batch is in the store's hands, or at once when
  // nothing is ready to follow it.
  std::vector<JournalEntry> written;
  uint64_t written_last = 0;
  bool unfinished = false;
  auto finish = [&] {
    if (!unfinished) return false;
    unfinished = false;
    finish_batch(written, written_last);
    written.clear();
    return true;
  };
  const std::function<void()> finish_while_writing = [&] {
    if (finish()) perturb(PerturbPoint::kPreviousBatchFinished);
  };
  while (true) {
    StoreCounters counters;
    uint64_t last = 0;
    bool next_ready;
    {
      MutexLock lock(mu_);
      next_ready = !pending_.empty() && ready_end() != pending_.begin();
    }
    if (!next_ready) finish();  // nothing to overlap it with
    {
      MutexLock lock(mu_);
      while ((pending_.empty() || ready_end() == pending_.begin()) && !stopping_) work_cv_.wait(mu_);
      if (pending_.empty()) return;  // stopping, and everything is written and finished
      const auto cut = ready_end();
      const uint64_t first = appended_.load(std::memory_order_acquire) - pending_.size() + 1;
      if (cut == pending_.end()) {
        entries.swap(pending_);
      } else {
        entries.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(cut));
        pending_.erase(pending_.begin(), cut);
      }
      last = first + entries.size() - 1;
      // The counters of entries appended after the cut are ahead of this batch: harmless,
      // they only grow, and a restart going on after them skips nothing it needs.
      counters = counters_;
    }
    const Written result = write(entries, counters, finish_while_writing);
    if (result == Written::kStoreLost) {
      // Nothing more is written or delivered: the waits for durability end with an error.
      {
        MutexLock lock(mu_);
        gave_up_ = true;
        stopped_ = true;
        wake_durable(UINT64_MAX);
        delivered_cv_.notify_all();
      }
      call_watchers(UINT64_MAX);
      drop_until_stopped(entries);
      return;
    }
    if (result == Written::kStopping) {
      engine_log().error("{}: {} journal entries were not written before the engine stopped; the changes they hold "
                         "are in memory only",
                         store_.describe(), entries.size());
      // Delivered all the same, so that nothing waits for them for ever.
      deliver(entries);
      entries.clear();
      MutexLock lock(mu_);
      delivered_.store(last, std::memory_order_release);
      delivered_cv_.notify_all();
      return;
    }
    written.swap(entries);
    written_last = last;
    unfinished = true;
  }
}

void Journal::finish_batch(std::vector<JournalEntry>& entries, uint64_t last) {
  {
    MutexLock lock(mu_);
    durable_.store(last, std::memory_order_release);
    wake_durable(last);
  }
  call_watchers(last);
  release(entries);
  deliver(entries);
  MutexLock lock(mu_);
  delivered_.store(last, std::memory_order_release);
  delivered_cv_.notify_all();
}

StoreBatch Journal::batch_of(std::vector<JournalEntry>& entries, const StoreCounters& counters) {
  StoreBatch batch;
  for (JournalEntry& e : entries) {
    batch.applied_op = std::max(batch.applied_op, e.operation);
    if (!e.operation_started.empty()) batch.operations_started.emplace_back(e.operation, std::move(e.operation_started));
    for (StoreChange& c : e.changes) batch.changes.push_back(std::move(c));
    e.changes.clear();
    for (const std::shared_ptr<Context>& ctx : e.queued) batch.changes.push_back(ContextPut{stored_row(*ctx)});
    for (const std::shared_ptr<Context>& ctx : e.started) {
      batch.changes.push_back(ContextUpdate{ctx->seq, "in_progress", ctx->summary().started, -1, Value(), Value()});
    }
  }
  // A context that starts and ends within the batch is one row write.
  coalesce_context_changes(batch);
  batch.counters = counters;
  batch.counters.clock = core_.clock.now();
  const EngineProperties& p = core_.props();
  if (p.history_max_age > 0 || p.history_max_count > 0) {
    HistoryPrune prune;
    if (p.history_max_age > 0) prune.ended_before = batch.counters.clock - p.history_max_age;
    prune.keep = p.history_max_count;
    batch.changes.push_back(prune);
  }
  return batch;
}

Journal::Written Journal::write(std::vector<JournalEntry>& entries, const StoreCounters& counters,
                                const std::function<void()>& meanwhile) {
  const SyncMode wanted = sync_mode_of(core_.props().durability);
  if (wanted != sync_) {
    if (Status s = store_.set_sync_mode(wanted); s) {
      sync_ = wanted;
    } else {
      engine_log().warn("{}: durability {} not set: {}", store_.describe(), sync_mode_name(wanted), s.message());
    }
  }
  StoreBatch batch = batch_of(entries, counters);
  int delay_ms = kFirstRetryMs;
  int tries_when_stopping = 0;
  const int64_t give_up_ms = core_.options.store_give_up_ms;
  std::chrono::steady_clock::time_point failing_since{};
  // `meanwhile` runs once: by the store while the first try is in its hands, or else
  // right after that try, so that a failing store does not hold it through the retries.
  bool meanwhile_called = false;
  const std::function<void()> once = [&] {
    if (meanwhile_called) return;
    meanwhile_called = true;
    meanwhile();
  };
  while (true) {
    perturb(PerturbPoint::kBeforeStoreWrite);
    Status s = store_.write_overlapped(batch, once);
    once();
    if (s) {
      batches_.fetch_add(1, std::memory_order_relaxed);
      if (!failure()) {
        engine_log().warn("{}: writing again after a failure", store_.describe());
        set_failure(Status::ok());
      }
      return Written::kYes;
    }
    failed_writes_.fetch_add(1, std::memory_order_relaxed);
    if (failure().is_ok()) engine_log().error("{} (retrying)", s.message());
    set_failure(s);
    const auto now = std::chrono::steady_clock::now();
    if (failing_since == std::chrono::steady_clock::time_point{}) failing_since = now;
    if (give_up_ms > 0 && now - failing_since >= std::chrono::milliseconds(give_up_ms)) {
      const std::string why = "its writes failed for " + std::to_string(give_up_ms) + " ms (" + s.message() + ")";
      engine_log().error("{}: the engine gives its store up: {}", store_.describe(), why);
      set_failure(Error{"the engine gave its store up: " + why});
      if (core_.options.on_store_lost) core_.options.on_store_lost(why);
      return Written::kStoreLost;
    }
    MutexLock lock(mu_);
    if (stopping_ && ++tries_when_stopping >= kTriesWhenStopping) return Written::kStopping;
    // The whole delay, whatever is appended meanwhile (an append notifies work_cv_: a
    // failing store was tried again at every entry); only the stop cuts it short, once.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms);
    const bool was_stopping = stopping_;
    while (stopping_ == was_stopping && std::chrono::steady_clock::now() < until) work_cv_.wait_until(mu_, until);
    delay_ms = std::min(delay_ms * 2, kMaxRetryMs);
  }
}

void Journal::drop_until_stopped(std::vector<JournalEntry>& entries) {
  while (true) {
    drop(entries);
    entries.clear();
    MutexLock lock(mu_);
    while (pending_.empty() && !stopping_) work_cv_.wait(mu_);
    if (pending_.empty()) return;
    entries.swap(pending_);
  }
}

void Journal::drop(std::vector<JournalEntry>& entries) {
  for (JournalEntry& e : entries) {
    // The contexts it would have queued never run, and the wakes never come: their work is
    // done, as far as settle() is concerned. Each push is a started context, counted as
    // work from its start (Dispatcher::Batch::reserve) until run_context ends its run;
    // each wake was counted when appended (append).
    if (!e.pushes.empty()) {
      undelivered_.fetch_sub(e.pushes.size(), std::memory_order_acq_rel);
      for (size_t i = 0; i < e.pushes.size(); ++i) core_.work_done();
    }
    for (size_t i = 0; i < e.wakes.size(); ++i) core_.work_done();
  }
}

void Journal::release(const std::vector<JournalEntry>& entries) {
  for (const JournalEntry& e : entries) {
    for (const std::shared_ptr<Context>& ctx : e.ended) {
      if (core_.options.measure_latency) core_.sample_latency(*ctx);
      core_.contexts.release(ctx->seq);
    }
    for (uint64_t seq : e.archived) core_.archive.remove(seq);
  }
}

void Journal::deliver(std::vector<JournalEntry>& entries) {
  for (JournalEntry& e : entries) {
    if (!e.pushes.empty()) {
      for (Context* ctx : e.pushes) core_.events.push(ctx);  // the one producer (class comment)
      undelivered_.fetch_sub(e.pushes.size(), std::memory_order_acq_rel);
      core_.workers.notify_events(e.pushes.size());
    }
    for (DeferredWake& w : e.wakes) {
      core_.wake(w.context, w.wait_id, std::move(w.wake));
      core_.work_done();  // counted when appended
    }
    for (const RestCandidate& r : e.rests) core_.rest_when(*r.context, Context::RestCondition::kDurable, r.wait_id);
  }
}

}  // namespace flowrt
