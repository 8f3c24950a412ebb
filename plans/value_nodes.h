// The heap nodes behind Value (plans/value.h): reference-counted storage for long strings,
// arrays and objects. Private to plans/: value.cpp builds and frees them, value_pack.cpp
// encodes them. Nothing outside plans/ includes this header.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <unordered_map>

#include "plans/value.h"

namespace flowrt::detail {

// Reference-counted storage for long strings, arrays and objects. Immutable once shared.
// An immortal node (interned shapes and their keys) is never counted nor freed: its cache
// line is only ever read, so every core can keep a copy.
struct HeapNode {
  explicit HeapNode(ValueType t) : type(t) {}
  std::atomic<uint32_t> refs{1};
  ValueType type;
  bool shaped = false;    // objects only: see ObjectNode
  bool immortal = false;  // set before the node is shared, never changed after
};

struct StringNode : HeapNode {
  StringNode() : HeapNode(ValueType::kString) {}
  uint32_t size = 0;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }

  static StringNode* make(std::string_view s) {
    void* mem = ::operator new(sizeof(StringNode) + s.size());
    auto* node = new (mem) StringNode();
    node->size = static_cast<uint32_t>(s.size());
    if (!s.empty()) std::memcpy(node->data(), s.data(), s.size());
    return node;
  }
};

// Arrays and objects keep their elements inline, right after the node: one allocation
// each. `capacity` is what was allocated; `size` what is used.
struct ArrayNode : HeapNode {
  ArrayNode() : HeapNode(ValueType::kArray) {}
  uint32_t size = 0;
  uint32_t capacity = 0;
  Value* items() { return reinterpret_cast<Value*>(this + 1); }
  const Value* items() const { return reinterpret_cast<const Value*>(this + 1); }

  static ArrayNode* make(size_t capacity) {
    void* mem = ::operator new(sizeof(ArrayNode) + capacity * sizeof(Value));
    auto* node = new (mem) ArrayNode();
    node->capacity = static_cast<uint32_t>(capacity);
    return node;
  }
};

// Objects keep their members inline, right after the node, in one of two layouts:
// pairs (key, value, key, value, ...) or, when `shaped`, values only, their keys in a
// shared ArrayNode (the shape). Objects with many members as pairs get a hash index so
// that lookups stay O(1); shapes are only used up to that size.
struct ObjectNode : HeapNode {
  static constexpr size_t kIndexThreshold = 24;
  ObjectNode() : HeapNode(ValueType::kObject) {}
  uint32_t size = 0;
  uint32_t capacity = 0;
  union {
    std::unordered_map<std::string_view, uint32_t>* index = nullptr;  // pairs
    ArrayNode* keys;                                                  // shaped: counted
  };
  Member* members() { return reinterpret_cast<Member*>(this + 1); }
  const Member* members() const { return reinterpret_cast<const Member*>(this + 1); }
  Value* values() { return reinterpret_cast<Value*>(this + 1); }
  const Value* values() const { return reinterpret_cast<const Value*>(this + 1); }

  static ObjectNode* make(size_t capacity) {
    void* mem = ::operator new(sizeof(ObjectNode) + capacity * sizeof(Member));
    auto* node = new (mem) ObjectNode();
    node->capacity = static_cast<uint32_t>(capacity);
    return node;
  }
  // REQUIRES: `shape` has at least one and at most kIndexThreshold keys.
  static ObjectNode* make_shaped(ArrayNode* shape) {
    void* mem = ::operator new(sizeof(ObjectNode) + shape->size * sizeof(Value));
    auto* node = new (mem) ObjectNode();
    node->shaped = true;
    node->capacity = shape->size;
    if (!shape->immortal) shape->refs.fetch_add(1, std::memory_order_relaxed);
    node->keys = shape;
    return node;
  }
  void finish() {
    if (!shaped && size > kIndexThreshold && !index) {
      index = new std::unordered_map<std::string_view, uint32_t>();
      index->reserve(size);
      for (uint32_t i = 0; i < size; ++i) (*index)[members()[i].key.as_string()] = i;
    }
  }
  const Value& key_at(uint32_t i) const { return shaped ? keys->items()[i] : members()[i].key; }
  const Value& value_at(uint32_t i) const { return shaped ? values()[i] : members()[i].value; }
  // Position of `key` in members, or -1.
  long find_index(std::string_view key) const {
    if (!shaped && index) {
      auto it = index->find(key);
      return it == index->end() ? -1 : static_cast<long>(it->second);
    }
    // Keys nearly always differ in length or first byte: look at those before the bytes.
    const size_t n = key.size();
    for (uint32_t i = 0; i < size; ++i) {
      const std::string_view k = key_at(i).as_string();
      if (k.size() == n && (n == 0 || (k[0] == key[0] && std::memcmp(k.data() + 1, key.data() + 1, n - 1) == 0))) {
        return static_cast<long>(i);
      }
    }
    return -1;
  }
  const Value* find(std::string_view key) const {
    long i = find_index(key);
    return i < 0 ? nullptr : &value_at(static_cast<uint32_t>(i));
  }
  MemberRange range() const {
    if (shaped) return {keys->items(), values(), 1, size};
    // Pairs: keys and values alternate, so both advance two Values per member.
    return {&members()->key, &members()->value, 2, size};
  }
};

// Frees `node` and releases what it holds. REQUIRES: its count reached zero. Iterative
// (a worklist, no recursion): there is no depth limit on the values it frees.
void destroy(HeapNode* node) noexcept;

}  // namespace flowrt::detail
