// FieldIndex: record rows of one table grouped by the value of one field, for equality
// lookups (look_up_record where field eq value). Rows are kept in insertion order.
// Not synchronized; owned by its Table, guarded like it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "plans/value.h"

namespace flowrt {

class FieldIndex {
 public:
  // A value's key; false for values that are not indexed (arrays, objects).
  static bool key_of(const Value& v, std::string* key);

  void add(const Value& field_value, uint32_t row);
  void remove(const Value& field_value, uint32_t row);
  // Rows whose field equals `v`, ascending; nullptr when none. REQUIRES: key_of(v) is true.
  const std::vector<uint32_t>* rows(const Value& v) const;
  // Rows whose field holds an array or object (always candidates for a scan).
  const std::vector<uint32_t>& unindexed() const { return unindexed_; }

 private:
  std::unordered_map<std::string, std::vector<uint32_t>> buckets_;
  std::vector<uint32_t> unindexed_;
};

}  // namespace flowrt
