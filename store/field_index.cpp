#include "store/field_index.h"

#include <algorithm>
#include <cstring>

namespace flowrt {
namespace {

void insert_sorted(std::vector<uint32_t>& rows, uint32_t row) {
  if (rows.empty() || rows.back() < row) {
    rows.push_back(row);
    return;
  }
  rows.insert(std::lower_bound(rows.begin(), rows.end(), row), row);
}

void erase_sorted(std::vector<uint32_t>& rows, uint32_t row) {
  auto it = std::lower_bound(rows.begin(), rows.end(), row);
  if (it != rows.end() && *it == row) rows.erase(it);
}

}  // namespace

bool FieldIndex::key_of(const Value& v, std::string* key) {
  // One type tag byte, then the value: numbers by their double bits so that 1 == 1.0.
  key->clear();
  switch (v.type()) {
    case ValueType::kNull: *key = "n"; return true;
    case ValueType::kBool: *key = v.as_bool() ? "t" : "f"; return true;
    case ValueType::kInt:
    case ValueType::kDouble: {
      double d = v.as_double();
      if (d == 0) d = 0;  // -0 == 0
      char buf[1 + sizeof d];
      buf[0] = '#';
      std::memcpy(buf + 1, &d, sizeof d);
      key->assign(buf, sizeof buf);
      return true;
    }
    case ValueType::kString:
      key->reserve(v.as_string().size() + 1);
      key->push_back('s');
      key->append(v.as_string());
      return true;
    default: return false;
  }
}

void FieldIndex::add(const Value& field_value, uint32_t row) {
  std::string key;
  if (key_of(field_value, &key)) insert_sorted(buckets_[key], row);
  else insert_sorted(unindexed_, row);
}

void FieldIndex::remove(const Value& field_value, uint32_t row) {
  std::string key;
  if (!key_of(field_value, &key)) {
    erase_sorted(unindexed_, row);
    return;
  }
  auto it = buckets_.find(key);
  if (it == buckets_.end()) return;
  erase_sorted(it->second, row);
  if (it->second.empty()) buckets_.erase(it);
}

const std::vector<uint32_t>* FieldIndex::rows(const Value& v) const {
  std::string key;
  if (!key_of(v, &key)) return nullptr;
  auto it = buckets_.find(key);
  return it == buckets_.end() ? nullptr : &it->second;
}

}  // namespace flowrt
