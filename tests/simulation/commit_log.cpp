#include "tests/simulation/commit_log.h"

#include "runtime/clock.h"
#include "runtime/context.h"
#include "runtime/flow_slot.h"

namespace flowrt::sim {

const char* kind_name(CommitEntry::Kind k) {
  switch (k) {
    case CommitEntry::Kind::kInsert: return "insert";
    case CommitEntry::Kind::kUpdate: return "update";
    case CommitEntry::Kind::kDelete: return "delete";
    case CommitEntry::Kind::kEvent: return "event";
    case CommitEntry::Kind::kStart: return "start";
  }
  return "?";
}

CommitObserver CommitLog::observer() {
  return [this](const CommitEntry& e) { on_commit(e); };
}

void CommitLog::on_commit(const CommitEntry& e) {
  CommitRecord r;
  r.seq = e.seq;
  r.kind = e.kind;
  r.table = std::string(e.table);
  if (e.record) r.record = *e.record;
  if (e.previous) r.previous = *e.previous;
  if (e.event) r.event = *e.event;
  if (e.origin) r.origin = std::string(e.origin->id.as_string());
  r.at = clock_ ? clock_->now() : 0;
  std::lock_guard lock(mu_);
  // Which earlier record-triggered contexts had ended by this commit (run options).
  for (size_t i = 0; i < tracked_.size();) {
    const Context& c = *tracked_[i].context;
    Ends& ends = ends_[tracked_[i].id];
    if (c.finished()) {
      ends.ended_by = e.seq;
      tracked_[i] = std::move(tracked_.back());
      tracked_.pop_back();
      continue;
    }
    if (!threads_ || &c == e.origin || c.phase() != Context::Phase::kRunning) ends.alive_through = e.seq;
    ++i;
  }
  for (const Context* c : e.started) {
    r.started.push_back(
        CommitRecord::Started{std::string(c->id.as_string()), c->seq, c->commit_seq, c->flow->id, c->trigger.record});
    if (c->trigger.type == TriggerType::kRecord) {
      tracked_.push_back(Tracked{c->shared_from_this(), std::string(c->id.as_string())});
      ends_[std::string(c->id.as_string())].alive_through = e.seq;
    }
  }
  last_ = e.seq;
  pending_.push_back(std::move(r));
}

std::vector<CommitRecord> CommitLog::take() {
  std::lock_guard lock(mu_);
  return std::exchange(pending_, {});
}

uint64_t CommitLog::last() const {
  std::lock_guard lock(mu_);
  return last_;
}

CommitLog::Ends CommitLog::ends(const std::string& context_id) const {
  std::lock_guard lock(mu_);
  auto it = ends_.find(context_id);
  return it == ends_.end() ? Ends{} : it->second;
}

}  // namespace flowrt::sim
