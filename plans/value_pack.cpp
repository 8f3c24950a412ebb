#include "plans/value_pack.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "plans/value_nodes.h"

namespace flowrt {
namespace {

using detail::ArrayNode;
using detail::HeapNode;
using detail::ObjectNode;
using detail::StringNode;

// One byte before each value says what follows.
enum Tag : uint8_t {
  kNull = 0,
  kFalse = 1,
  kTrue = 2,
  kInt = 3,         // zigzag varint
  kDouble = 4,      // 8 bytes
  kString = 5,      // varint length, bytes
  kArray = 6,       // varint count, items
  kPairs = 7,       // varint count, (key text, value) per member
  kShaped = 8,      // shape node pointer (referenced), one value per key
  kReference = 9,   // node pointer (referenced): the node's own type
};

// Whether `node` stays in place, referenced, rather than written out: it lives on anyway
// (immortal), or something besides the value being packed holds it. A count read while
// another thread changes it only moves a node between the two forms.
bool keep_by_reference(const HeapNode* node) {
  return node->immortal || node->refs.load(std::memory_order_relaxed) > 1;
}

void retain(HeapNode* node) {
  if (!node->immortal) node->refs.fetch_add(1, std::memory_order_relaxed);
}

void release(HeapNode* node) {
  if (!node->immortal && node->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) detail::destroy(node);
}

}  // namespace

void ValuePacker::grow(size_t n) { buffer_.resize(std::max(buffer_.size() * 2, size_ + n)); }

void ValuePacker::text(std::string_view s) {
  varint(s.size());
  if (!s.empty()) append(s.data(), s.size());  // an empty view's data may be null
}

void ValuePacker::node_reference(const void* node) {
  retain(static_cast<HeapNode*>(const_cast<void*>(node)));
  append(&node, sizeof node);
}

void ValuePacker::value(const Value& v) {
  if (v.is_heap() && keep_by_reference(v.node())) {
    byte(kReference);
    node_reference(v.node());
    return;
  }
  switch (v.type()) {
    case ValueType::kNull: byte(kNull); return;
    case ValueType::kBool: byte(v.as_bool() ? kTrue : kFalse); return;
    case ValueType::kInt: byte(kInt); signed_varint(v.as_int()); return;
    case ValueType::kDouble: byte(kDouble); f64(v.as_double()); return;
    case ValueType::kString: byte(kString); text(v.as_string()); return;
    case ValueType::kArray:
      byte(kArray);
      varint(v.size());
      for (const Value& item : v.items()) value(item);
      return;
    case ValueType::kObject: {
      if (v.is_heap() && v.node()->shaped) {
        byte(kShaped);
        node_reference(static_cast<const ObjectNode*>(v.node())->keys);
        for (const auto& m : v.members()) value(m.value);
        return;
      }
      byte(kPairs);
      varint(v.size());
      for (const auto& m : v.members()) {
        text(m.key.as_string());
        value(m.value);
      }
      return;
    }
  }
}

uint64_t PackedReader::varint() {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    assert(p_ < end_);
    const uint8_t b = *p_++;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (b < 0x80) return v;
  }
}

double PackedReader::f64() {
  double d;
  std::memcpy(&d, p_, sizeof d);
  p_ += sizeof d;
  return d;
}

std::string_view PackedReader::text() {
  const size_t n = varint();
  std::string_view s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

void* PackedReader::node_pointer() {
  void* node;
  std::memcpy(&node, p_, sizeof node);
  p_ += sizeof node;
  return node;
}

Value PackedReader::value() {
  assert(p_ < end_);
  switch (byte()) {
    case kNull: return Value();
    case kFalse: return Value(false);
    case kTrue: return Value(true);
    case kInt: return Value(static_cast<long long>(signed_varint()));
    case kDouble: return Value(f64());
    case kString: return Value(text());
    case kArray: {
      const size_t n = varint();
      if (n == 0) return Value::empty_array();
      ArrayBuilder items(n);
      for (size_t i = 0; i < n; ++i) items.add(value());
      return items.build();
    }
    case kPairs: {
      const size_t n = varint();
      if (n == 0) return Value::empty_object();
      ObjectBuilder members(n);
      for (size_t i = 0; i < n; ++i) {
        Value key(text());
        members.add(std::move(key), value());
      }
      return members.build();
    }
    case kShaped: {
      auto* keys = static_cast<ArrayNode*>(node_pointer());
      Value shape;
      shape.set_node(ValueType::kArray, keys);
      shape.retain();
      ObjectBuilder values(shape);
      for (uint32_t i = 0; i < keys->size; ++i) values.add_value(value());
      return values.build();
    }
    case kReference: {
      auto* node = static_cast<HeapNode*>(node_pointer());
      Value v;
      v.set_node(node->type, node);
      v.retain();
      return v;
    }
    default:
      assert(false && "not a ValuePacker's bytes");
      return Value();
  }
}

void PackedReader::release_value() {
  switch (byte()) {
    case kInt: (void)varint(); return;
    case kDouble: p_ += sizeof(double); return;
    case kString: (void)text(); return;
    case kArray: {
      const size_t n = varint();
      for (size_t i = 0; i < n; ++i) release_value();
      return;
    }
    case kPairs: {
      const size_t n = varint();
      for (size_t i = 0; i < n; ++i) {
        (void)text();
        release_value();
      }
      return;
    }
    case kShaped: {
      auto* keys = static_cast<ArrayNode*>(node_pointer());
      const uint32_t n = keys->size;  // read before the shape may go
      for (uint32_t i = 0; i < n; ++i) release_value();
      release(keys);
      return;
    }
    case kReference: release(static_cast<HeapNode*>(node_pointer())); return;
    default: return;  // null, false, true: nothing follows
  }
}

}  // namespace flowrt
