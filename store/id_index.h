// IdIndex: sys_id -> row of one table, without an allocation per record.
//
// Open addressing over 8-byte (tag, row) slots; the key itself is the record's own sys_id,
// read back through a callback, so nothing is copied. The slots are split into 64
// segments by the hash's top bits, each growing on its own: a table of a million records
// never stops to rehash all of them at once (a commit waits for at most one segment's
// rehash). A slot's tag is the low 32 bits of its key's hash: a slot's home position is
// the tag's low bits, so a segment grows without reading any key, and a probe reads a
// key only where the whole tag matches. Not synchronized; owned by its table.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace flowrt {

class IdIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Returns the sys_id of row `row`.
  using KeyOf = std::function<std::string_view(uint32_t row)>;

  explicit IdIndex(KeyOf key_of) : key_of_(std::move(key_of)) {}

  uint32_t find(std::string_view sys_id) const;
  // REQUIRES: sys_id is not in the index.
  void insert(std::string_view sys_id, uint32_t row);
  // Inserts sys_id -> row unless sys_id is in the index, in one probe: kNone when it
  // inserted, else the row that has it (and nothing changed). key_of(row) is not read.
  uint32_t insert_unique(std::string_view sys_id, uint32_t row);
  void erase(std::string_view sys_id);
  void clear();
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint32_t tag = 0;      // the low 32 bits of the key's hash
    uint32_t row = kNone;  // kNone: empty; kGone: erased
  };
  struct Segment {
    std::vector<Slot> slots;  // a power of two, or empty
    size_t used = 0;
    size_t gone = 0;
  };
  static constexpr uint32_t kGone = UINT32_MAX - 1;
  static constexpr int kSegmentBits = 6;
  static uint64_t hash(std::string_view s);
  const Segment& segment(uint64_t h) const { return segments_[h >> (64 - kSegmentBits)]; }
  Segment& segment(uint64_t h) { return segments_[h >> (64 - kSegmentBits)]; }
  static void grow(Segment& seg);
  // Where sys_id (hash h) is, or else where it would go: the first erased slot of its
  // probe, else the empty slot that ends it. REQUIRES: seg has slots.
  struct Probe {
    size_t slot;
    bool found;
  };
  Probe probe(const Segment& seg, uint64_t h, std::string_view sys_id) const;

  KeyOf key_of_;
  std::array<Segment, size_t{1} << kSegmentBits> segments_;
  size_t used_ = 0;
};

}  // namespace flowrt
