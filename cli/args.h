// A small argument reader for the subcommands: positional words and --name value options.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace flowrt::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  bool has(const std::string& name) const { return options.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

// Options take a value ("--name value" or "--name=value"), except `flags`, which stand
// alone ("--json" reads as "true"; "--json=false" is allowed). Unknown options are usage
// errors.
inline ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& known,
                             const std::set<std::string>& flags = {}) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (flags.count(name)) {
      value = "true";
    } else {
      if (!known.count(name)) throw UsageError{"unknown option --" + name};
      if (i + 1 >= args.size()) throw UsageError{"option --" + name + " needs a value"};
      value = args[++i];
    }
    if (!known.count(name) && !flags.count(name)) throw UsageError{"unknown option --" + name};
    if (flags.count(name) && value != "true" && value != "false") {
      throw UsageError{"--" + name + " takes no value (or =true / =false)"};
    }
    if (out.options.count(name)) throw UsageError{"option --" + name + " given twice"};
    out.options[name] = value;
  }
  return out;
}

}  // namespace flowrt::cli
