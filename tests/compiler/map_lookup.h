// MapLookup: a DefinitionLookup over a list of definitions, for the compiler's tests.
// Holds copies; not synchronized.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/compiler.h"

namespace flowrt::test_compiler {

class MapLookup : public DefinitionLookup {
 public:
  explicit MapLookup(const std::vector<Definition>& defs) {
    for (const Definition& d : defs) defs_[{d.type, d.id}] = d;
  }
  const Definition* find(UnitType type, std::string_view id) const override {
    auto it = defs_.find({type, std::string(id)});
    return it == defs_.end() ? nullptr : &it->second;
  }
  std::map<std::pair<UnitType, std::string>, Definition> defs_;
};

}  // namespace flowrt::test_compiler
