// The table of invalid specs: tests/specs/invalid/NNN-name.yaml, each base.yaml with one
// mistake (tests/specs/make_invalid.py). Line 1 holds the expected first error:
//   # expect: CODE PATH LINE:COL
// Every file must fail with exactly that code, path and position; its message and hint
// must not be empty. RSL_UPDATE_EXPECTATIONS=1 rewrites lines that say `# expect: ?` (to be
// reviewed by hand before committing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/file.h"
#include "spec/parse.h"

namespace rsl::spec {
namespace {

namespace fs = std::filesystem;
const std::string kDir = std::string(RSL_SOURCE_DIR) + "/tests/specs/invalid";
constexpr int kMinCases = 80;

std::vector<fs::path> CaseFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kDir)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Actual(const Error& e) {
  return e.code + " " + (e.path.empty() ? "-" : e.path) + " " + std::to_string(e.pos.line) + ":" +
         std::to_string(e.pos.column);
}

TEST(InvalidSpecsTest, EveryCaseFailsWithTheExpectedError) {
  std::vector<fs::path> files = CaseFiles();
  ASSERT_GE(static_cast<int>(files.size()), kMinCases);
  bool update = std::getenv("RSL_UPDATE_EXPECTATIONS") != nullptr;
  std::set<std::string> codes_seen;
  for (const auto& path : files) {
    auto text = ReadFile(path.string());
    ASSERT_TRUE(text.ok());
    std::string first_line = text->substr(0, text->find('\n'));
    const std::string prefix = "# expect: ";
    ASSERT_EQ(first_line.rfind(prefix, 0), 0u) << path;
    std::string expected = first_line.substr(prefix.size());
    ParseResult r = ParseWorkload(*text, path.filename().string());
    std::string all;
    for (const auto& e : r.errors) all += "  " + e.ToString() + "\n";
    ASSERT_FALSE(r.errors.empty()) << path << " parsed without errors";
    const Error& e = r.errors.front();
    codes_seen.insert(e.code);
    if (expected == "?" && update) {
      std::string rest = text->substr(first_line.size());
      std::ofstream(path) << prefix << Actual(e) << rest;
      continue;
    }
    EXPECT_EQ(Actual(e), expected) << path << "\n" << all;
    EXPECT_FALSE(e.message.empty()) << path;
    EXPECT_FALSE(e.hint.empty()) << path << ": no hint\n" << all;
    EXPECT_EQ(e.pos.file, path.filename().string());
  }
  // The table covers all three codes the spec library reports.
  EXPECT_EQ(codes_seen,
            (std::set<std::string>{"SPEC_PARSE_ERROR", "SPEC_INVALID", "EXPRESSION_INVALID"}));
}

TEST(InvalidSpecsTest, ErrorsAreSortedAndAllReported) {
  // Three independent mistakes in one file: all reported, in file order.
  auto base = ReadFile(std::string(RSL_SOURCE_DIR) + "/tests/specs/base.yaml");
  ASSERT_TRUE(base.ok());
  std::string text = *base;
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("dependsOn: [train]", "dependsOn: [trian]");
  replace("cpu: \"16\"", "cpu: \"lots\"");
  replace("dtype: float32}", "dtype: f32}");
  ParseResult r = ParseWorkload(text, "three.yaml");
  std::string all;
  for (const auto& e : r.errors) all += e.ToString() + "\n";
  ASSERT_EQ(r.errors.size(), 3u) << all;
  EXPECT_EQ(r.errors[0].ToString(),
            "three.yaml:10:10: SPEC_INVALID spec.resources.cpu: invalid cpu \"lots\" (write cores "
            "(8, \"2.5\") or millicores (\"500m\"))");
  EXPECT_EQ(r.errors[1].path, "spec.model.signature.inputs[0].dtype");
  EXPECT_EQ(r.errors[2].ToString(),
            "three.yaml:59:21: SPEC_INVALID spec.pipeline.steps[2].dependsOn[0]: unknown step "
            "\"trian\" (did you mean 'train'?)");
}

}  // namespace
}  // namespace rsl::spec
