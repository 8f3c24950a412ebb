// ContextPlaces: which table a context's row is in, as far as the PostgreSQL store's writer
// knows, so that a write sends the one statement that applies to it rather than one for
// each table it could be in.
//
// A context's row is live (table `contexts`) until it ends with its record, then in
// `history`, never in both. The writer knows where the rows it wrote went; of the others,
// it knows only that a seq above the highest seq either table held when the store opened
// is in neither unless it wrote it since. So a seq is:
//  - kLive: written live by this writer and not moved since;
//  - kNotLive: above that highest seq, and not written live since (or moved to history);
//  - kUnknown: anything else (rows from before the store opened, or a write whose outcome
//    the writer cannot tell): the store sends the statements for both tables, as when
//    nothing is known.
// A batch's notes are pending until the batch is written (commit) and are dropped when it
// fails (discard): a failed transaction changed no row.
//
// With a live row it may also keep the JSON of the row's ended trigger (ended_trigger in
// store/store.h), so that moving the row to history sends it rather than having the
// server compute it from the row's trigger (a JSON parse per context). At most
// kMaxTriggerBytes of them are kept; past that a row is noted without one, and the move
// has the server compute it, as for rows from before the open.
//
// Thread-safety: none; the store's writer alone uses it. Holds a seq per live context
// written since the store opened (a hash node each) and, within the cap, its ended
// trigger.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace flowrt {

class ContextPlaces {
 public:
  enum class Place { kLive, kNotLive, kUnknown };
  static constexpr std::size_t kMaxTriggerBytes = std::size_t{32} << 20;

  // `highest_at_open`: the highest seq in `contexts` or `history` when the store opened.
  explicit ContextPlaces(uint64_t highest_at_open = UINT64_MAX) : highest_at_open_(highest_at_open) {}

  // Where seq's row is, the current batch's notes included.
  Place place(uint64_t seq) const;
  // After the current batch, seq's row is at `place`; a live row's ended trigger with it
  // when given (kept within the cap).
  void note(uint64_t seq, Place place, std::string ended_trigger = {});
  // Whether no more ended triggers are kept (the cap is reached): a writer need not make one.
  bool full() const { return trigger_bytes_ + pending_bytes_ >= kMaxTriggerBytes; }
  // The ended trigger noted with seq's live row, or null when none is kept.
  const std::string* ended_trigger(uint64_t seq) const;
  // The current batch was written: its notes hold.
  void commit();
  // It was not: they are dropped.
  void discard() {
    pending_.clear();
    pending_bytes_ = 0;
  }

  std::size_t live() const { return live_.size(); }
  // The bytes of ended triggers kept for committed live rows.
  std::size_t trigger_bytes() const { return trigger_bytes_; }

 private:
  struct Note {
    Place place;
    std::string ended_trigger;  // empty: none kept
  };
  uint64_t highest_at_open_;
  std::unordered_map<uint64_t, std::string> live_;  // kLive, with its ended trigger or empty
  std::unordered_set<uint64_t> unknown_;            // kUnknown above highest_at_open_
  std::unordered_map<uint64_t, Note> pending_;
  std::size_t trigger_bytes_ = 0;  // of live_'s triggers
  std::size_t pending_bytes_ = 0;  // of pending_'s
};

}  // namespace flowrt
