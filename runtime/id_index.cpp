#include "runtime/id_index.h"

#include <cstring>

namespace flowrt {

uint64_t IdIndex::hash(std::string_view s) {
  // Eight bytes at a time, then a final mix: sys_ids are 32 characters.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

uint32_t IdIndex::find(std::string_view sys_id) const {
  if (slots_.empty()) return kNone;
  const uint64_t h = hash(sys_id);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.row == kNone) return kNone;
    if (s.row != kGone && s.hash == h && key_of_(s.row) == sys_id) return s.row;
  }
}

void IdIndex::insert(std::string_view sys_id, uint32_t row) {
  if ((used_ + gone_ + 1) * 4 >= slots_.size() * 3) grow();
  const uint64_t h = hash(sys_id);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.row == kNone || s.row == kGone) {
      if (s.row == kGone) --gone_;
      s = Slot{h, row};
      ++used_;
      return;
    }
  }
}

void IdIndex::erase(std::string_view sys_id) {
  if (slots_.empty()) return;
  const uint64_t h = hash(sys_id);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.row == kNone) return;
    if (s.row != kGone && s.hash == h && key_of_(s.row) == sys_id) {
      s.row = kGone;
      --used_;
      ++gone_;
      return;
    }
  }
}

void IdIndex::clear() {
  slots_.clear();
  used_ = 0;
  gone_ = 0;
}

void IdIndex::grow() {
  std::vector<Slot> old = std::move(slots_);
  size_t n = 16;
  while (n * 3 <= (used_ + 1) * 4 * 2) n *= 2;
  slots_.assign(n, Slot{});
  gone_ = 0;
  const size_t mask = n - 1;
  for (const Slot& s : old) {
    if (s.row == kNone || s.row == kGone) continue;
    for (size_t i = s.hash & mask;; i = (i + 1) & mask) {
      if (slots_[i].row == kNone) {
        slots_[i] = s;
        break;
      }
    }
  }
}

}  // namespace flowrt
