// IdIndex: sys_id -> row of one table, without an allocation per record.
//
// Open addressing over (hash, row) slots; the key itself is the record's own sys_id, read
// back through a callback, so nothing is copied. Not synchronized; owned by its table.
#pragma once

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
  static constexpr uint32_t kGone = UINT32_MAX - 1;
  static uint64_t hash(std::string_view s);
  void grow();

  KeyOf key_of_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
  size_t gone_ = 0;
};

}  // namespace flowrt
