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
  kShaped = 8,      // shape node (referenced), one value per key
  kReference = 9,   // node (referenced): the node's own type
  // A node referenced is written as the signed varint of its distance from the one before
  // (ValuePacker::node_reference), in units of the nodes' alignment.
  // Written against a template (value_as):
  kLike = 10,       // the template's constant
  kParts = 11,      // varint count, then each part against its own template
  kText = 12,       // varint count, then the text of each of the template's pills
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

// Nodes are at least this aligned: a reference's distance is written in these units.
constexpr unsigned kNodeAlignmentBits = 2;
static_assert(alignof(HeapNode) >= (1u << kNodeAlignmentBits));

void ValuePacker::node_reference(const void* node) {
  retain(static_cast<HeapNode*>(const_cast<void*>(node)));
  const auto at = reinterpret_cast<uintptr_t>(node);
  signed_varint(static_cast<int64_t>(at - last_node_) >> kNodeAlignmentBits);
  last_node_ = at;
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

void ValuePacker::parts(size_t n) {
  byte(kParts);
  varint(n);
}

bool ValuePacker::text_as(std::string_view s, const Template& t) {
  // Any split whose pieces, put back between the literal parts, give `s` again will do:
  // the first and last parts must be its ends, each literal between is found left to
  // right. The text of a pill that contains a literal part may so be split elsewhere than
  // it was rendered; the string read back is the same.
  const std::vector<Value>& literal = t.text_parts;
  const size_t n = t.pills.size();
  if (n == 0 || literal.size() != n + 1) return false;
  const std::string_view head = literal.front().as_string();
  const std::string_view tail = literal.back().as_string();
  if (s.size() < head.size() + tail.size() || !s.starts_with(head) || !s.ends_with(tail)) return false;
  std::string_view rest = s.substr(head.size(), s.size() - head.size() - tail.size());
  const size_t mark = size_;
  byte(kText);
  varint(n);
  for (size_t i = 1; i < n; ++i) {
    const std::string_view part = literal[i].as_string();
    const size_t at = rest.find(part);
    if (at == std::string_view::npos) {
      size_ = mark;  // only text was written: nothing to release
      return false;
    }
    text(rest.substr(0, at));
    rest.remove_prefix(at + part.size());
  }
  text(rest);
  return true;
}

void ValuePacker::value_as(const Value& v, const Template& t) {
  switch (t.kind) {
    case Template::Kind::kConstant:
      // The very value rendered (equal content in other storage could differ in type:
      // 1 and 1.0 compare equal).
      if (v.same_storage(t.constant)) return byte(kLike);
      break;
    case Template::Kind::kText:
      if (v.is_string() && text_as(v.as_string(), t)) return;
      break;
    case Template::Kind::kArray:
      if (v.is_array() && v.size() == t.children.size()) {
        parts(t.children.size());
        for (size_t i = 0; i < t.children.size(); ++i) value_as(v.items()[i], t.children[i]);
        return;
      }
      break;
    case Template::Kind::kObject:
      if (v.has_keys(t.keys)) {
        parts(t.children.size());
        size_t i = 0;
        for (const auto& m : v.members()) value_as(m.value, t.children[i++]);
        return;
      }
      break;
    case Template::Kind::kAbsent:
    case Template::Kind::kPill:
      break;
  }
  value(v);
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
  last_node_ += static_cast<uintptr_t>(signed_varint()) << kNodeAlignmentBits;
  return reinterpret_cast<void*>(last_node_);
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

bool PackedReader::parts(size_t* n) {
  assert(p_ < end_);
  if (*p_ != kParts) return false;
  ++p_;
  *n = varint();
  return true;
}

Value PackedReader::value_as(const Template& t) {
  assert(p_ < end_);
  switch (*p_) {
    case kLike:
      ++p_;
      return t.constant;
    case kParts: {
      ++p_;
      const size_t n = varint();
      assert(n == t.children.size());
      if (t.kind == Template::Kind::kArray) {
        ArrayBuilder items(n);
        for (size_t i = 0; i < n; ++i) items.add(value_as(t.children[i]));
        return items.build();
      }
      ObjectBuilder members(t.keys);
      for (size_t i = 0; i < n; ++i) members.add_value(value_as(t.children[i]));
      return members.build();
    }
    case kText: {
      ++p_;
      const size_t n = varint();
      assert(n + 1 == t.text_parts.size());
      thread_local std::string out;  // as render builds it
      out.clear();
      out.append(t.text_parts[0].as_string());
      for (size_t i = 0; i < n; ++i) {
        out.append(text());
        out.append(t.text_parts[i + 1].as_string());
      }
      return Value(std::string_view(out));
    }
    default:
      return value();
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
    case kParts: {
      const size_t n = varint();
      for (size_t i = 0; i < n; ++i) release_value();
      return;
    }
    case kText: {
      const size_t n = varint();
      for (size_t i = 0; i < n; ++i) (void)text();
      return;
    }
    default: return;  // null, false, true, kLike: nothing follows
  }
}

}  // namespace flowrt
