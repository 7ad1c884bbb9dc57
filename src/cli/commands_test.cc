// Command functions called directly, without parsing a command line: what they print and how
// they end (Exit with the exit code; the error's code alone on the last line of stderr).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "cli/cli.h"
#include "cli/govern_cmd.h"
#include "cli/spec_cmd.h"

namespace rsl::cli {
namespace {

// Runs `body`; the exit code it ended with (0 if it returned) and what it printed.
struct Ran {
  int exit_code = 0;
  std::string out, err;
};

template <typename F>
Ran RunCaptured(F body) {
  Ran r;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  try {
    body();
  } catch (const Exit& e) {
    r.exit_code = e.exit_code;
  }
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

TEST(CommandsTest, ValidateReportsEachValidFile) {
  ValidateFlags flags;
  flags.files = {std::string(RSL_SOURCE_DIR) + "/tests/specs/valid/aiworkload-minimal.yaml"};
  Ran r = RunCaptured([&] { RunValidate(flags); });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("OK fraud-detection-finetune (", 0), 0u) << r.out;
}

TEST(CommandsTest, ValidateEndsWithTheFirstErrorsCode) {
  ValidateFlags flags;
  flags.files = {std::string(RSL_SOURCE_DIR) + "/tests/specs/invalid/009-unknown-top-field.yaml"};
  Ran r = RunCaptured([&] { RunValidate(flags); });
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("009-unknown-top-field.yaml:5:1: SPEC_INVALID"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - std::string("SPEC_INVALID\n").size()), "SPEC_INVALID\n");
}

TEST(CommandsTest, AdviseMemoryEmitNeedsOneStage) {
  AdviseMemoryFlags flags;
  flags.params = 7.5e9;
  flags.gpus = 8;
  flags.emit = "deepspeed";
  Ran r = RunCaptured([&] { RunAdviseMemory(flags); });
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--emit needs one stage"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("add --zero 2"), std::string::npos) << r.err;
}

TEST(CommandsTest, AdviseMemoryPrintsEveryStage) {
  AdviseMemoryFlags flags;
  flags.params = 7.5e9;
  flags.gpus = 8;
  Ran r = RunCaptured([&] { RunAdviseMemory(flags); });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("STAGE", 0), 0u) << r.out;
}

TEST(CommandsTest, RunSafelyTurnsMalformedInputIntoInvalidArgument) {
  Ran r = RunCaptured(
      [] { RunSafely([] { (void)nlohmann::json::parse("[1]").at("spec").get<std::string>(); }); });
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("malformed input"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - std::string("INVALID_ARGUMENT\n").size()),
            "INVALID_ARGUMENT\n");
}

TEST(CommandsTest, RegisterOnlyBindsTheFunction) {
  CLI::App app{"seedctl", "seedctl"};
  RegisterSpecCommands(app);
  const char* argv[] = {"seedctl", "version"};
  Ran r = RunCaptured([&] { app.parse(2, argv); });
  Ran direct = RunCaptured([] { RunVersion(); });
  EXPECT_EQ(r.out, direct.out);
  EXPECT_EQ(r.out.rfind("seedctl ", 0), 0u) << r.out;
}

TEST(CommandsTest, OutputHelpMarksTheDefault) {
  EXPECT_EQ(OutputHelp({"table", "json"}, "table"), "output format: table (default)|json");
  EXPECT_EQ(OutputHelp({"json", "wide"}, ""), "output format: json|wide");
  // Every govern command's -o help names its default.
  CLI::App app{"seedctl", "seedctl"};
  RegisterGovernCommands(app);
  for (const char* path : {"advise memory", "cost report", "cost compare", "policy list"}) {
    std::string first(path, std::string(path).find(' '));
    std::string second(std::string(path).substr(first.size() + 1));
    CLI::Option* o = app.get_subcommand(first)->get_subcommand(second)->get_option("--output");
    EXPECT_NE(o->get_description().find("table (default)"), std::string::npos) << path;
  }
}

}  // namespace
}  // namespace rsl::cli
