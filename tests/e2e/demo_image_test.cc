// The demo's container-image path as a test (labels `demo` and `image`): scripts/demo.sh with
// DEMO_HOST_ENV=0 against this build's binaries, on a smaller day (100,000 transactions). The
// demo builds the step image from Debian packages (scripts/demo_images.sh: mmdebstrap, umoci;
// the first build downloads from the Debian mirror, later ones reuse <build>/demo-images),
// pushes it under the example's four names to a docker-registry it starts on loopback, runs
// the workload with every step in its image (runc) and checks each step's Started event and log.
// Needs root, runc, mmdebstrap, umoci, skopeo and docker-registry (scripts/deps/image.txt and
// demo.txt); without them the demo refuses DEMO_HOST_ENV=0 and this test fails, it never skips.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <string>

#include "e2e_util.h"

namespace rsl::e2e {
namespace {

TEST(DemoImage, EveryStepRunsInItsContainerImageFromTheLoopbackRegistry) {
  TempDir dir;
  std::map<std::string, std::string> env = {{"SKIP_DEPS", "1"},
                                            {"SKIP_BUILD", "1"},
                                            {"BIN_DIR", BinaryDir() + "/bin"},
                                            {"ROWS", "100000"},
                                            {"DEMO_HOST_ENV", "0"},
                                            {"DEMO_IMAGE_CACHE", BinaryDir() + "/demo-images"},
                                            {"DEMO_DIR", dir.Sub("demo")}};
  CmdResult r = RunCmd({"/bin/bash", SourceDir() + "/scripts/demo.sh"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("== path: container images"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": SUCCEEDED (submit to finished: "), std::string::npos) << r.output;
  // The demo's own check, step by step: the Started event names a runc container and the
  // digest the registry serves for the step's tag; the log has the image's marker line.
  for (const char* step : {"ingest", "preprocess", "train", "validate"}) {
    std::regex ok(
        std::string("\\n  ") + step +
        " +ok: 127\\.0\\.0\\.1:[0-9]+/volc/[a-z-]+:v[0-9.]+@sha256:[0-9a-f]{12}\\.\\.\\.; "
        "Started: container rsl-[^ ]+ \\(runc\\) from 127\\.0\\.0\\.1:[0-9]+/volc/");
    EXPECT_TRUE(std::regex_search(r.output, ok)) << step << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("NOT IN ITS IMAGE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("every step ran in its container image (path: container images)"),
            std::string::npos)
      << r.output;
  // The image's marker came from the image: the host has none.
  EXPECT_FALSE(std::ifstream("/etc/rsl-demo-image").good());
  // The model was committed under ceph://models/fraud-v2.1.7/train/.
  bool model = false;
  for (const auto& f : ListFiles(dir.Sub("demo/ceph-models"))) {
    model |= f.find("train/model.safetensors") != std::string::npos;
  }
  EXPECT_TRUE(model) << r.output;
  // The demo stopped the registry it started.
  std::ifstream reg(dir.Sub("demo/registry/env"));
  std::string line;
  int pid = 0;
  while (std::getline(reg, line)) {
    if (line.rfind("REGISTRY_PID=", 0) == 0) pid = std::stoi(line.substr(13));
  }
  ASSERT_GT(pid, 0) << "no REGISTRY_PID in demo/registry/env";
  EXPECT_NE(kill(pid, 0), 0) << "docker-registry " << pid << " still running";
  // The token (rsl_ + 48 hex, api/auth.h) is never printed.
  EXPECT_FALSE(std::regex_search(r.output, std::regex("rsl_[0-9a-f]{48}"))) << r.output;
}

}  // namespace
}  // namespace rsl::e2e
