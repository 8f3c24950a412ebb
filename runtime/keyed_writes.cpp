#include "runtime/keyed_writes.h"

#include "plans/value.h"
#include "runtime/clock.h"
#include "runtime/journal.h"

namespace flowrt {
namespace {
thread_local KeyedWrites::Scope* t_scope = nullptr;  // the calling thread's live Scope
constexpr DurationMs kPruneEveryMs = 60 * 1000;
constexpr DurationMs kForcedPruneEveryMs = 1000;
}  // namespace

size_t KeyedWrites::cost(const std::string& caller, const std::string& key, const Kept& k) {
  // The map's node (its links and the pair in place) and every string's characters.
  constexpr size_t kNode = 4 * sizeof(void*) + sizeof(std::pair<const std::pair<std::string, std::string>, Kept>);
  return kNode + caller.size() + key.size() + k.request.size() + k.headers.size() + k.body.size();
}

void KeyedWrites::set_journal(Journal* journal) {
  MutexLock lock(mu_);
  journal_ = journal;
}

void KeyedWrites::restore(std::vector<KeyedWritePut> kept) {
  MutexLock lock(mu_);
  for (KeyedWritePut& k : kept) {
    auto [it, added] = kept_.try_emplace({std::move(k.caller), std::move(k.key)});
    if (!added) bytes_ -= cost(it->first.first, it->first.second, it->second);
    it->second = Kept{std::move(k.request), k.status, std::move(k.headers), std::move(k.body), k.at};
    bytes_ += cost(it->first.first, it->first.second, it->second);
  }
}

KeyedWrites::Claim KeyedWrites::claim(const std::string& caller, const std::string& key, const std::string& request) {
  const TimeMs now = clock_.now();
  MutexLock lock(mu_);
  prune_locked(now, /*force=*/false);
  auto it = kept_.find({caller, key});
  if (it == kept_.end()) {
    Kept fresh{request, -1, "", "", now};
    const size_t c = cost(caller, key, fresh);
    if (bytes_ + c > limit_bytes_) {
      prune_locked(now, /*force=*/true);
      if (bytes_ + c > limit_bytes_) return Claim{Found::kFull, {}};
    }
    kept_.emplace(std::make_pair(caller, key), std::move(fresh));
    bytes_ += c;
    return Claim{};
  }
  const Kept& k = it->second;
  Claim c;
  if (k.request != request) {
    c.found = Found::kOtherRequest;
  } else if (k.status < 0) {
    c.found = Found::kInFlight;
  } else if (k.status == 0) {
    c.found = Found::kAppliedUnanswered;
    c.answer.body = k.body;
  } else {
    c.found = Found::kAnswered;
    c.answer = Answer{k.status, k.headers, k.body};
  }
  return c;
}

uint64_t KeyedWrites::finish(const std::string& caller, const std::string& key, std::optional<Answer> answer,
                             bool committed, std::string started) {
  const TimeMs now = clock_.now();
  MutexLock lock(mu_);
  auto it = kept_.find({caller, key});
  if (it == kept_.end() || it->second.status >= 0) return 0;  // not claimed
  Kept& k = it->second;
  if (!answer) {
    if (!committed) {
      bytes_ -= cost(it->first.first, it->first.second, k);
      kept_.erase(it);  // nothing was applied: the key is free again
      return 0;
    }
    // Its mark is journaled already, with the write's first commit; what it started is
    // journaled beside it (the same key's row, replaced), when there is something to tell
    // beyond what the mark keeps.
    bytes_ -= cost(it->first.first, it->first.second, k);
    k.status = 0;
    const bool marked = started.empty() || started == k.body;
    if (!started.empty()) k.body = std::move(started);
    k.at = now;
    bytes_ += cost(it->first.first, it->first.second, k);
    if (journal_ && !marked) {
      JournalEntry e;
      e.changes.push_back(KeyedWritePut{caller, key, k.request, 0, "", k.body, k.at});
      journal_->append(std::move(e));
    }
    return 0;
  }
  bytes_ -= cost(it->first.first, it->first.second, k);
  k.status = answer->status;
  k.headers = std::move(answer->headers);
  k.body = std::move(answer->body);
  k.at = now;
  bytes_ += cost(it->first.first, it->first.second, k);
  if (!journal_) return 0;
  JournalEntry e;
  e.changes.push_back(KeyedWritePut{caller, key, k.request, k.status, k.headers, k.body, k.at});
  return journal_->append(std::move(e));
}

void KeyedWrites::note_marked_started(const std::string& caller, const std::string& key, std::string marked_started) {
  MutexLock lock(mu_);
  auto it = kept_.find({caller, key});
  if (it == kept_.end() || it->second.status >= 0) return;  // not claimed, or finished already
  bytes_ -= cost(it->first.first, it->first.second, it->second);
  it->second.body = std::move(marked_started);
  bytes_ += cost(it->first.first, it->first.second, it->second);
}

size_t KeyedWrites::size() const {
  MutexLock lock(mu_);
  return kept_.size();
}

size_t KeyedWrites::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

void KeyedWrites::set_limit_bytes(size_t limit) {
  MutexLock lock(mu_);
  limit_bytes_ = limit;
}

size_t KeyedWrites::limit_bytes() const {
  MutexLock lock(mu_);
  return limit_bytes_;
}

void KeyedWrites::prune_locked(TimeMs now, bool force) {
  if (now - last_prune_ < (force ? kForcedPruneEveryMs : kPruneEveryMs)) return;
  last_prune_ = now;
  const TimeMs before = now - kKeepMs;
  const size_t had = kept_.size();
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->second.status >= 0 && it->second.at < before) {
      bytes_ -= cost(it->first.first, it->first.second, it->second);
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
  if (journal_ && kept_.size() != had) {
    JournalEntry e;
    e.changes.push_back(KeyedWritePrune{before});
    journal_->append(std::move(e));
  }
}

KeyedWrites::Scope::Scope(KeyedWrites& writes, std::string caller, std::string key, std::string request)
    : writes_(writes), previous_(t_scope) {
  mark_ = KeyedWritePut{std::move(caller), std::move(key), std::move(request), 0, "", "", writes.clock_.now()};
  t_scope = this;
}

KeyedWrites::Scope::~Scope() {
  t_scope = previous_;
  if (!marked_started_.empty()) {
    // The mark went to the journal with its key; the key is read back from it.
    writes_.note_marked_started(marked_caller_, marked_key_, std::move(marked_started_));
  }
}

void KeyedWrites::note_starts_context() {
  if (t_scope) t_scope->starts_context_ = true;
}

void KeyedWrites::note_commit(std::vector<StoreChange>* changes, std::string_view first_queued) {
  Scope* s = t_scope;
  if (!s || s->committed_) return;
  s->committed_ = true;
  if (changes && s->mark_) {
    if (s->starts_context_ && !first_queued.empty()) {
      // The same text as what the server keeps when it finishes the write unanswered.
      KeyedWritePut& mark = std::get<KeyedWritePut>(*s->mark_);
      mark.body = Value::object({{"context_id", Value(first_queued)}}).to_json();
      s->marked_started_ = mark.body;
      s->marked_caller_ = mark.caller;
      s->marked_key_ = mark.key;
    }
    changes->push_back(std::move(*s->mark_));
  }
  s->mark_.reset();
}

}  // namespace flowrt
