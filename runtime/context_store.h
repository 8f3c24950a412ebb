// ContextStore: every context the engine started (by seq), and every skipped start.
//
// Owns the contexts (shared): a context is kept live (its Context) while it runs, and with
// a memory store, once it finished, frozen (runtime/frozen_context.h: its record packed in
// one allocation); with a durable store a finished one stays live until its final record
// is durable (release). A context whose action the watchdog gave up on stays live: its
// execution state is the stuck thread's. Contexts are added in seq order under the commit
// lock; readers may list and look them up at any time. With a retention limit
// (context_retention), at most that many finished contexts are kept: when one more
// finishes, the finished one that started first (lowest seq) is dropped and counted, in
// O(log n); an unfinished context is never dropped; at most that many skipped starts are
// kept too (the oldest dropped and counted). Memory is bounded by the unfinished contexts
// plus what retention keeps, whatever the number of contexts ever started:
//  - recent contexts sit in a window indexed by seq (seq = first_seq_ + index), where a
//    dropped one leaves a hole;
//  - holes at the window's front are popped; when an unfinished context keeps the front
//    (a context parked for days), the front entries move, a few per finish, into a map of
//    stragglers, so holes never pile up behind it.
// Each slot of the window and the stragglers is one word (ContextSlot, below): 0 for a hole,
// a frozen context's FrozenContext pointer, or for a live one a pointer to a box holding its
// shared_ptr; readers get a KeptContext built from it (find, and the listing's copies).
// With a durable store (set_finished_elsewhere), a finished context leaves once its final
// record is durable (release, called by the journal), the store keeps it, and retention
// limits only the skipped starts: memory is bounded by the unfinished contexts and those
// whose final record is being written.
// Readers never hold the lock for long: listing copies at most kBatch references per
// acquisition, so a reader of a million contexts never holds up the commit path.
// Thread-safety: every method takes mu_ (a SpinMutex: short sections that the commit path
// and readers share). Lock order: the commit lock, then mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/intrusive_ptr.hpp>

#include "plans/value.h"
#include "runtime/context.h"
#include "runtime/frozen_context.h"
#include "base/thread_annotations.h"

namespace flowrt {

// A start that a runtime rule prevented (SPEC section 9).
struct SkippedStart {
  Value flow;
  Value reason;  // run_once, already_running, direct_recursion, indirect_recursion_limit
  Value event;   // the trigger event, as in a record's "trigger"
  Value cause;   // {"context", "flow"} or null
};

// One context as the store keeps it: live, frozen, or none (not kept). A small value that
// shares ownership of what it names; copies are cheap.
class KeptContext {
 public:
  KeptContext() = default;
  explicit KeptContext(std::shared_ptr<Context> live) : live_(std::move(live)) {}
  explicit KeptContext(boost::intrusive_ptr<const FrozenContext> frozen) : frozen_(std::move(frozen)) {}

  explicit operator bool() const { return live_ || frozen_; }
  // The Context, while the store keeps it live; null once frozen.
  const std::shared_ptr<Context>& live() const { return live_; }
  const FrozenContext* frozen() const { return frozen_.get(); }
  // REQUIRES (these four): *this.
  uint64_t seq() const { return live_ ? live_->seq : frozen_->seq(); }
  bool finished() const { return !live_ || live_->finished(); }
  const FlowSlot* flow() const { return live_ ? live_->flow : frozen_->flow(); }
  uint64_t commit_seq() const { return live_ ? live_->commit_seq : frozen_->commit_seq(); }

 private:
  std::shared_ptr<Context> live_;
  boost::intrusive_ptr<const FrozenContext> frozen_;
};

// One context as ContextStore's window and stragglers keep it, in one word (24 bytes as a
// KeptContext, of which a frozen one, by far the most kept, needs 8): the word is
//  - 0: a hole (none kept);
//  - a FrozenContext* (low bit 0), owning one reference to it (intrusive_ptr_release'd once
//    when the slot lets go);
//  - a LiveBox* | 1: a heap box owning the std::shared_ptr<Context> of a live context (the
//    few running, parked, or not yet frozen or released).
// Copies take a reference of their own (a new box for a live one); moves hand the word over
// and leave a hole; reset and the destructor drop what the slot owns, once. kept() builds
// the public KeptContext, sharing ownership, for a reader to keep past the store's lock.
// Thread-safety: none of its own; ContextStore touches its slots under its mu_.
class ContextSlot {
 public:
  ContextSlot() = default;
  explicit ContextSlot(std::shared_ptr<Context> live)
      : word_(live ? reinterpret_cast<uintptr_t>(new LiveBox{std::move(live)}) | kLiveTag : 0) {}
  explicit ContextSlot(boost::intrusive_ptr<const FrozenContext> frozen)
      : word_(reinterpret_cast<uintptr_t>(frozen.detach())) {}
  ContextSlot(const ContextSlot& o) : word_(o.copy_word()) {}
  ContextSlot(ContextSlot&& o) noexcept : word_(std::exchange(o.word_, 0)) {}
  ContextSlot& operator=(const ContextSlot& o) {
    if (this != &o) reset(o.copy_word());
    return *this;
  }
  ContextSlot& operator=(ContextSlot&& o) noexcept {
    if (this != &o) reset(std::exchange(o.word_, 0));
    return *this;
  }
  ~ContextSlot() { reset(0); }

  explicit operator bool() const { return word_ != 0; }
  // The kept context, sharing ownership (none for a hole).
  KeptContext kept() const {
    if (const LiveBox* box = live_box()) return KeptContext(box->ctx);
    if (const FrozenContext* f = frozen()) return KeptContext(boost::intrusive_ptr<const FrozenContext>(f));
    return KeptContext();
  }
  // The live Context, without a reference taken; null for a frozen one or a hole.
  const Context* live() const {
    const LiveBox* box = live_box();
    return box ? box->ctx.get() : nullptr;
  }
  // REQUIRES (these two): *this.
  uint64_t seq() const { return is_live() ? live_box()->ctx->seq : frozen()->seq(); }
  bool finished() const { return !is_live() || live_box()->ctx->finished(); }
  // Drops what the slot owns: a hole from now on.
  void reset() { reset(0); }

 private:
  struct LiveBox {
    std::shared_ptr<Context> ctx;
  };
  static constexpr uintptr_t kLiveTag = 1;
  static_assert(alignof(FrozenContext) > kLiveTag && alignof(LiveBox) > kLiveTag,
                "the low bit of either pointer must be free for the tag");

  bool is_live() const { return (word_ & kLiveTag) != 0; }
  const LiveBox* live_box() const {
    return is_live() ? reinterpret_cast<const LiveBox*>(word_ & ~kLiveTag) : nullptr;
  }
  const FrozenContext* frozen() const {
    return is_live() ? nullptr : reinterpret_cast<const FrozenContext*>(word_);
  }
  // A word owning what this one owns, once more.
  uintptr_t copy_word() const {
    if (const LiveBox* box = live_box()) return reinterpret_cast<uintptr_t>(new LiveBox{box->ctx}) | kLiveTag;
    if (const FrozenContext* f = frozen()) intrusive_ptr_add_ref(f);
    return word_;
  }
  // Takes `word` (owned) in place of the current one, which is dropped.
  void reset(uintptr_t word) {
    const uintptr_t old = std::exchange(word_, word);
    if (old & kLiveTag) {
      delete reinterpret_cast<LiveBox*>(old & ~kLiveTag);
    } else if (old != 0) {
      intrusive_ptr_release(reinterpret_cast<const FrozenContext*>(old));
    }
  }

  uintptr_t word_ = 0;
};
static_assert(sizeof(ContextSlot) == sizeof(void*));

class ContextStore {
 public:
  // References copied per lock acquisition when listing.
  static constexpr size_t kBatch = 256;

  // Appends a context; its seq must be the next one. REQUIRES: the commit lock (seq order).
  void add(std::shared_ptr<Context> ctx) EXCLUDES(mu_);
  // A store's state: before any add, the first seq this engine gives (the stored last
  // one + 1), and the contexts from the store that are still to run, each below it.
  void start_at(uint64_t first_seq) EXCLUDES(mu_);
  void restore(std::shared_ptr<Context> ctx) EXCLUDES(mu_);
  // The context with that id ("ctx-<seq>") or seq, as kept; none when not kept.
  KeptContext find(std::string_view id) const EXCLUDES(mu_);
  KeptContext find(uint64_t seq) const EXCLUDES(mu_);
  // The same, when it is kept live (running, parked, or with a durable store not yet
  // released); null otherwise.
  std::shared_ptr<Context> find_live(std::string_view id) const EXCLUDES(mu_) { return find(id).live(); }
  std::shared_ptr<Context> find_live(uint64_t seq) const EXCLUDES(mu_) { return find(seq).live(); }
  // Every context kept, in seq order: `visit` is called outside the lock.
  void for_each(const std::function<void(const KeptContext&)>& visit) const EXCLUDES(mu_);
  // The contexts kept with a seq below `below`, newest first, until `visit` returns false:
  // a page of the newest costs the page, not the whole store. Batched as for_each.
  void for_each_newest_first(uint64_t below, const std::function<bool(const KeptContext&)>& visit) const
      EXCLUDES(mu_);
  std::vector<KeptContext> all() const EXCLUDES(mu_);
  // Every context kept that has not finished, in seq order.
  std::vector<std::shared_ptr<Context>> unfinished() const EXCLUDES(mu_);
  // Contexts kept (finished or not).
  size_t size() const EXCLUDES(mu_);

  void add_skipped(SkippedStart s) EXCLUDES(mu_);
  std::vector<SkippedStart> skipped() const EXCLUDES(mu_);

  // Keep at most `n` finished contexts and `n` skipped starts (0 = all).
  void set_retention(size_t n) EXCLUDES(mu_);
  // A durable store keeps finished contexts: from now on they leave through release(), and
  // set_retention limits the skipped starts only. Before any context finishes.
  void set_finished_elsewhere() EXCLUDES(mu_);
  // Finished context `seq` is durable in the store: it leaves (not counted as dropped).
  void release(uint64_t seq) EXCLUDES(mu_);
  // `ctx` has just finished (called once per context).
  void on_finished(const Context& ctx) EXCLUDES(mu_);
  // `frozen`, the frozen record of finished `ctx`, replaces the live form, if the store still
  // keeps that (retention may have dropped it). The memory store only.
  void freeze(const Context& ctx, boost::intrusive_ptr<const FrozenContext> frozen) EXCLUDES(mu_);
  uint64_t dropped() const EXCLUDES(mu_);
  uint64_t dropped_skipped() const EXCLUDES(mu_);

  // The sizes of the structures, for tests that memory stays bounded.
  struct Footprint {
    size_t window_slots = 0;  // slots of the seq window, holes included
    size_t holes = 0;
    size_t stragglers = 0;
    size_t retained_finished = 0;
    size_t skipped = 0;
  };
  Footprint footprint() const EXCLUDES(mu_);

 private:
  ContextSlot* slot(uint64_t seq) REQUIRES(mu_);
  void trim() REQUIRES(mu_);
  // Pops holes at the window's front, and moves a few front entries to the stragglers
  // while holes outnumber the live entries.
  void compact() REQUIRES(mu_);

  mutable SpinMutex mu_;
  std::deque<ContextSlot> window_ GUARDED_BY(mu_);  // window_[i] has seq first_seq_ + i
  uint64_t first_seq_ GUARDED_BY(mu_) = 1;
  size_t holes_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, ContextSlot> stragglers_ GUARDED_BY(mu_);  // seqs below first_seq_
  // With a retention limit: the seqs of the finished contexts kept, lowest on top.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> finished_ GUARDED_BY(mu_);
  std::deque<SkippedStart> skipped_ GUARDED_BY(mu_);
  std::atomic<size_t> retention_{0};  // written under mu_; read without it on the hot path
  bool finished_elsewhere_ GUARDED_BY(mu_) = false;
  size_t skipped_retention_ GUARDED_BY(mu_) = 0;  // the skipped starts' limit, when finished_elsewhere_
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  uint64_t dropped_skipped_ GUARDED_BY(mu_) = 0;
};

}  // namespace flowrt
