#include "store/id_index.h"

#include <cstdint>
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

IdIndex::Probe IdIndex::probe(const Segment& seg, uint64_t h, std::string_view sys_id) const {
  const auto tag = static_cast<uint32_t>(h);
  const size_t mask = seg.slots.size() - 1;
  size_t free = SIZE_MAX;
  for (size_t i = tag & mask;; i = (i + 1) & mask) {
    const Slot& s = seg.slots[i];
    if (s.row == kNone) return Probe{free == SIZE_MAX ? i : free, false};
    if (s.row == kGone) {
      if (free == SIZE_MAX) free = i;
    } else if (s.tag == tag && key_of_(s.row) == sys_id) {
      return Probe{i, true};
    }
  }
}

uint32_t IdIndex::find(std::string_view sys_id) const {
  const uint64_t h = hash(sys_id);
  const Segment& seg = segment(h);
  if (seg.slots.empty()) return kNone;
  const Probe p = probe(seg, h, sys_id);
  return p.found ? seg.slots[p.slot].row : kNone;
}

void IdIndex::insert(std::string_view sys_id, uint32_t row) { (void)insert_unique(sys_id, row); }

uint32_t IdIndex::insert_unique(std::string_view sys_id, uint32_t row) {
  const uint64_t h = hash(sys_id);
  Segment& seg = segment(h);
  if ((seg.used + seg.gone + 1) * 4 >= seg.slots.size() * 3) grow(seg);
  const Probe p = probe(seg, h, sys_id);
  Slot& s = seg.slots[p.slot];
  if (p.found) return s.row;
  if (s.row == kGone) --seg.gone;
  s = Slot{static_cast<uint32_t>(h), row};
  ++seg.used;
  ++used_;
  return kNone;
}

void IdIndex::erase(std::string_view sys_id) {
  const uint64_t h = hash(sys_id);
  Segment& seg = segment(h);
  if (seg.slots.empty()) return;
  const Probe p = probe(seg, h, sys_id);
  if (!p.found) return;
  seg.slots[p.slot].row = kGone;
  --seg.used;
  ++seg.gone;
  --used_;
}

void IdIndex::clear() {
  for (Segment& seg : segments_) seg = Segment{};
  used_ = 0;
}

void IdIndex::grow(Segment& seg) {
  std::vector<Slot> old = std::move(seg.slots);
  size_t n = 8;
  while (n * 3 <= (seg.used + 1) * 4 * 2) n *= 2;
  seg.slots.assign(n, Slot{});
  seg.gone = 0;
  const size_t mask = n - 1;
  for (const Slot& s : old) {
    if (s.row == kNone || s.row == kGone) continue;
    for (size_t i = s.tag & mask;; i = (i + 1) & mask) {
      if (seg.slots[i].row == kNone) {
        seg.slots[i] = s;
        break;
      }
    }
  }
}

}  // namespace flowrt
