#include "runtime/context_store.h"
#include "store/store.h"


namespace flowrt {

namespace {
// Front entries moved to the stragglers per finish, at most, while holes outnumber them.
constexpr size_t kCompactStep = 64;
// A window this small is never worth compacting.
constexpr size_t kSmallWindow = 1024;
}  // namespace

void ContextStore::add(std::shared_ptr<Context> ctx) {
  ContextSlot live(std::move(ctx));  // its box allocated before the lock
  SpinMutexLock lock(mu_);
  window_.push_back(std::move(live));
}

void ContextStore::start_at(uint64_t first_seq) {
  SpinMutexLock lock(mu_);
  if (window_.empty()) first_seq_ = first_seq;
}

void ContextStore::restore(std::shared_ptr<Context> ctx) {
  const uint64_t seq = ctx->seq;
  ContextSlot live(std::move(ctx));
  SpinMutexLock lock(mu_);
  stragglers_.emplace(seq, std::move(live));
}

ContextSlot* ContextStore::slot(uint64_t seq) {
  if (seq >= first_seq_) {
    const uint64_t i = seq - first_seq_;
    return i < window_.size() ? &window_[i] : nullptr;
  }
  auto it = stragglers_.find(seq);
  return it == stragglers_.end() ? nullptr : &it->second;
}

KeptContext ContextStore::find(uint64_t seq) const {
  SpinMutexLock lock(mu_);
  if (seq >= first_seq_) {
    const uint64_t i = seq - first_seq_;
    return i < window_.size() ? window_[i].kept() : KeptContext();
  }
  auto it = stragglers_.find(seq);
  return it == stragglers_.end() ? KeptContext() : it->second.kept();
}

KeptContext ContextStore::find(std::string_view id) const {
  const std::optional<uint64_t> seq = context_seq_of(id);
  return seq ? find(*seq) : KeptContext();
}

void ContextStore::for_each_newest_first(uint64_t below, const std::function<bool(const KeptContext&)>& visit) const {
  uint64_t next_below = below;  // seqs below this are not visited yet
  std::vector<KeptContext> batch;
  batch.reserve(kBatch);
  while (next_below > 0) {
    batch.clear();
    {
      SpinMutexLock lock(mu_);
      // The window (seqs from first_seq_ up), then the stragglers below it.
      if (next_below > first_seq_) {
        for (uint64_t i = std::min<uint64_t>(next_below - first_seq_, window_.size()); i > 0 && batch.size() < kBatch;) {
          --i;
          if (window_[i]) batch.push_back(window_[i].kept());
        }
      }
      if (batch.size() < kBatch) {
        const uint64_t bound = std::min(next_below, first_seq_);
        for (auto it = std::make_reverse_iterator(stragglers_.lower_bound(bound));
             it != stragglers_.rend() && batch.size() < kBatch; ++it) {
          batch.push_back(it->second.kept());
        }
      }
    }
    if (batch.empty()) return;
    next_below = batch.back().seq();
    for (const KeptContext& c : batch) {
      if (!visit(c)) return;
    }
  }
}

void ContextStore::for_each(const std::function<void(const KeptContext&)>& visit) const {
  uint64_t next = 0;  // the lowest seq not visited yet
  std::vector<KeptContext> batch;
  batch.reserve(kBatch);
  while (true) {
    batch.clear();
    {
      SpinMutexLock lock(mu_);
      for (auto it = stragglers_.lower_bound(next); it != stragglers_.end() && batch.size() < kBatch; ++it) {
        batch.push_back(it->second.kept());
      }
      const uint64_t from = std::max(next, first_seq_);
      for (uint64_t i = from - first_seq_; i < window_.size() && batch.size() < kBatch; ++i) {
        if (window_[i]) batch.push_back(window_[i].kept());
      }
    }
    if (batch.empty()) return;
    next = batch.back().seq() + 1;
    for (const KeptContext& c : batch) visit(c);
  }
}

std::vector<KeptContext> ContextStore::all() const {
  std::vector<KeptContext> out;
  for_each([&](const KeptContext& c) { out.push_back(c); });
  return out;
}

std::vector<std::shared_ptr<Context>> ContextStore::unfinished() const {
  std::vector<std::shared_ptr<Context>> out;
  for_each([&](const KeptContext& c) {
    if (!c.finished()) out.push_back(c.live());
  });
  return out;
}

size_t ContextStore::size() const {
  SpinMutexLock lock(mu_);
  return window_.size() - holes_ + stragglers_.size();
}

void ContextStore::add_skipped(SkippedStart s) {
  SpinMutexLock lock(mu_);
  skipped_.push_back(std::move(s));
  const size_t retention = finished_elsewhere_ ? skipped_retention_ : retention_.load(std::memory_order_relaxed);
  while (retention > 0 && skipped_.size() > retention) {
    skipped_.pop_front();
    ++dropped_skipped_;
  }
}

std::vector<SkippedStart> ContextStore::skipped() const {
  SpinMutexLock lock(mu_);
  return std::vector<SkippedStart>(skipped_.begin(), skipped_.end());
}

void ContextStore::set_retention(size_t n) {
  SpinMutexLock lock(mu_);
  // Finished contexts are tracked only while a limit is set: collect them afresh.
  finished_ = {};
  if (finished_elsewhere_) {
    // Finished contexts leave through release(): the limit is for skipped starts only.
    retention_.store(0, std::memory_order_release);
    skipped_retention_ = n;
  } else {
    retention_.store(n, std::memory_order_release);
  }
  if (n == 0) return;
  if (!finished_elsewhere_) {
    for (const auto& [seq, c] : stragglers_) {
      if (c.finished()) finished_.push(seq);
    }
    for (const auto& c : window_) {
      if (c && c.finished()) finished_.push(c.seq());
    }
    trim();
  }
  while (skipped_.size() > n) {
    skipped_.pop_front();
    ++dropped_skipped_;
  }
}

void ContextStore::freeze(const Context& ctx, boost::intrusive_ptr<const FrozenContext> frozen) {
  if (!frozen) return;
  // The live form's reference from here goes after the lock is let go (declared first):
  // freeing a context is not the store's to do under its lock.
  ContextSlot was;
  SpinMutexLock lock(mu_);
  ContextSlot* c = slot(ctx.seq);
  if (c && c->live() == &ctx) was = std::exchange(*c, ContextSlot(std::move(frozen)));
}

void ContextStore::on_finished(const Context& ctx) {
  // Without a retention limit there is nothing to count: no lock on the hot path.
  if (retention_.load(std::memory_order_acquire) == 0) return;
  SpinMutexLock lock(mu_);
  if (retention_.load(std::memory_order_relaxed) == 0) return;
  finished_.push(ctx.seq);
  trim();
}

void ContextStore::set_finished_elsewhere() {
  SpinMutexLock lock(mu_);
  if (finished_elsewhere_) return;
  finished_elsewhere_ = true;
  skipped_retention_ = retention_.load(std::memory_order_relaxed);
  retention_.store(0, std::memory_order_release);
  finished_ = {};
}

void ContextStore::release(uint64_t seq) {
  SpinMutexLock lock(mu_);
  ContextSlot* c = slot(seq);
  if (!c || !*c) return;
  if (seq < first_seq_) {
    stragglers_.erase(seq);
  } else {
    c->reset();
    ++holes_;
  }
  compact();
}

uint64_t ContextStore::dropped() const {
  SpinMutexLock lock(mu_);
  return dropped_;
}

uint64_t ContextStore::dropped_skipped() const {
  SpinMutexLock lock(mu_);
  return dropped_skipped_;
}

void ContextStore::trim() {
  const size_t retention = retention_.load(std::memory_order_relaxed);
  while (finished_.size() > retention) {
    const uint64_t seq = finished_.top();
    finished_.pop();
    ContextSlot* c = slot(seq);
    if (!c || !*c) continue;
    ++dropped_;
    if (seq < first_seq_) {
      stragglers_.erase(seq);
    } else {
      c->reset();
      ++holes_;
    }
  }
  compact();
}

void ContextStore::compact() {
  while (!window_.empty() && !window_.front()) {
    window_.pop_front();
    ++first_seq_;
    --holes_;
  }
  // An unfinished context at the front keeps the holes behind it: move it (and the few
  // after it) out of the window while holes are the greater part of it.
  for (size_t moved = 0; moved < kCompactStep && window_.size() > kSmallWindow && holes_ * 2 > window_.size();) {
    ContextSlot& front = window_.front();
    if (front) {
      stragglers_.emplace(first_seq_, std::move(front));
      ++moved;
    } else {
      --holes_;
    }
    window_.pop_front();
    ++first_seq_;
  }
}

ContextStore::Footprint ContextStore::footprint() const {
  SpinMutexLock lock(mu_);
  Footprint f;
  f.window_slots = window_.size();
  f.holes = holes_;
  f.stragglers = stragglers_.size();
  f.retained_finished = finished_.size();
  f.skipped = skipped_.size();
  return f;
}

}  // namespace flowrt
