// The demo flow as a test (label `demo`): scripts/demo.sh on its host-environment path
// (DEMO_HOST_ENV=1; the container-image path is demo_image_test.cc) against this build's
// binaries, on a smaller day (100,000 transactions) in a temporary directory, without
// installing or building. It starts rsl-controller, registers everything, submits, watches,
// and exits 0 only if the workload SUCCEEDED; the test also checks what the demo printed and
// that the model was committed to the "ceph://models" directory.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "e2e_util.h"

namespace rsl::e2e {
namespace {

constexpr char kRows[] = "100000";

CmdResult RunDemo(const TempDir& dir, bool pattern) {
  std::map<std::string, std::string> env = {{"SKIP_DEPS", "1"},
                                            {"SKIP_BUILD", "1"},
                                            {"BIN_DIR", BinaryDir() + "/bin"},
                                            {"ROWS", kRows},
                                            {"DEMO_DIR", dir.Sub("demo")},
                                            // The host-environment path (the image path:
                                            // demo_image_test.cc).
                                            {"DEMO_HOST_ENV", "1"}};
  if (!pattern) env["NO_PATTERN"] = "1";
  return RunCmd({"/bin/bash", SourceDir() + "/scripts/demo.sh"}, env);
}

TEST(Demo, RunsTheFraudWorkloadToSucceededThroughTheController) {
  TempDir dir;
  CmdResult r = RunDemo(dir, /*pattern=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ID: wl-"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": SUCCEEDED (submit to finished: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sha256:"), std::string::npos) << "no fingerprint printed\n" << r.output;
  // The outputs were committed under ceph://models/fraud-v2.1.7/<step>/.
  std::vector<std::string> files = ListFiles(dir.Sub("demo/ceph-models"));
  bool model = false, prob = false;
  for (const auto& f : files) {
    model |= f.find("train/model.safetensors") != std::string::npos;
    prob |= f.find("validate/fraud_prob.npy") != std::string::npos;
  }
  EXPECT_TRUE(model && prob) << r.output;
  // The token (rsl_ + 48 hex, api/auth.h) is never printed.
  EXPECT_FALSE(std::regex_search(r.output, std::regex("rsl_[0-9a-f]{48}"))) << r.output;
}

TEST(Demo, WithoutThePatternValidateIsSkippedAndTheRunStillSucceeds) {
  TempDir dir;
  CmdResult r = RunDemo(dir, /*pattern=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SKIPPED"), std::string::npos) << r.output;
  std::vector<std::string> files = ListFiles(dir.Sub("demo/ceph-models"));
  for (const auto& f : files) {
    EXPECT_EQ(f.find("validate/"), std::string::npos) << "skipped step published " << f;
  }
}

}  // namespace
}  // namespace rsl::e2e
