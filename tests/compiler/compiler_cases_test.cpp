// Data-driven compiler cases: every file in tests/compiler/cases holds definitions and what
// compiling them must give, either success or the exact list of errors (JSON pointer and a
// part of the message), and optionally a "config" (as config.json: properties, lock
// limits) to compile them with. One parameterised test reads them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/run_config.h"

namespace flowrt {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> case_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(FLOWRT_SOURCE_DIR) / "tests/compiler/cases")) {
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class CompilerCaseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CompilerCaseTest, CompilesAsExpected) {
  std::ifstream in(fs::path(FLOWRT_SOURCE_DIR) / "tests/compiler/cases" / GetParam());
  std::stringstream buf;
  buf << in.rdbuf();
  Result<Value> c = parse_json(buf.str());
  ASSERT_TRUE(c.is_ok()) << c.message();
  // "text" is raw definition text (for syntax errors); "definitions" an array of them.
  const std::string text = (*c)["text"].is_string() ? std::string((*c)["text"].as_string())
                                                    : (*c)["definitions"].to_json();
  EngineOptions options;
  if (const Value* config = c->find("config")) {
    Result<EngineOptions> read = run_config_from_value(*config, "config");
    ASSERT_TRUE(read.is_ok()) << read.message();
    options = std::move(*read);
  }
  Engine engine(std::move(options));
  Diagnostics diags = engine.load_text(text, "case.json");
  const Value& expected = (*c)["errors"];
  std::string got;
  for (const Diagnostic& d : diags.list()) got += "\n  " + d.describe();
  ASSERT_EQ(diags.size(), expected.size()) << (*c)["description"].as_string() << "\ngot:" << got;
  for (const Value& want : expected.items()) {
    const std::string_view pointer = want["pointer"].as_string();
    const std::string_view message = want["message"].as_string();
    const bool found = std::any_of(diags.list().begin(), diags.list().end(), [&](const Diagnostic& d) {
      return d.file == "case.json" && d.pointer == pointer && d.message.find(message) != std::string::npos;
    });
    EXPECT_TRUE(found) << "expected case.json: " << pointer << ": ..." << message << "...\ngot:" << got;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CompilerCaseTest, ::testing::ValuesIn(case_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param.substr(0, p.param.size() - 5);
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace flowrt
