// IdIndex: sys_id -> row of one table, without an allocation per record.
//
// Open addressing over (hash, row) slots; the key itself is the record's own sys_id, read
// back through a callback, so nothing is copied. The slots are split into 64 segments by
// the hash's top bits, each growing on its own: a table of a million records never stops
// to rehash all of them at once (a commit waits for at most one segment's rehash).
// Not synchronized; owned by its table.
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
  void erase(std::string_view sys_id);
  void clear();
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint64_t hash = 0;
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

  KeyOf key_of_;
  std::array<Segment, size_t{1} << kSegmentBits> segments_;
  size_t used_ = 0;
};

}  // namespace flowrt
