// `seedctl validate` and `seedctl version` as a user runs them: output, stderr, exit code.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

const std::string kSeedctl = std::string(RSL_BINARY_DIR) + "/bin/seedctl";
const std::string kRepo = RSL_SOURCE_DIR;

struct CmdResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr, merged
};

CmdResult Seedctl(const std::string& args) {
  CmdResult r;
  std::string cmd = kSeedctl + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(SeedctlValidateTest, ExamplesAreValid) {
  CmdResult r =
      Seedctl("validate -f " + kRepo + "/examples/aiworkload-minimal.yaml -f " + kRepo +
              "/examples/fraud-detect-workload.yaml -f " + kRepo +
              "/examples/log-features.yaml -f " + kRepo + "/examples/recommend-serving.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "OK fraud-detection-finetune (3 steps)\nOK fraud-detect-daily (4 steps)\n"
            "OK log-features (3 steps)\nOK realtime-recommend (1 step)\n");
}

TEST(SeedctlValidateTest, ErrorsThenCodeOnTheLastLine) {
  std::string file = kRepo + "/tests/specs/invalid/091-step-depends-unknown.yaml";
  CmdResult r = Seedctl("validate -f " + kRepo + "/examples/log-features.yaml -f " + file);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "OK log-features (3 steps)\n" + file +
                       ":61:21: SPEC_INVALID spec.pipeline.steps[2].dependsOn[0]: unknown step "
                       "\"trian\" (did you mean 'train'?)\nSPEC_INVALID\n");
}

TEST(SeedctlValidateTest, JsonOutputAndVersion) {
  CmdResult r = Seedctl("validate -o json -f " + kRepo +
                        "/tests/specs/invalid/033-gpu-unknown-capability.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\"path\": \"spec.resources.gpu.capability[1]\""), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"hint\": \"did you mean 'fp16_support'?\""), std::string::npos);
  CmdResult v = Seedctl("version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, "seedctl 0.1.0\napiVersion aiengine.volc.com/v1\n");
  CmdResult missing = Seedctl("validate -f /nonexistent/w.yaml");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out.substr(missing.out.size() - 17), "SPEC_PARSE_ERROR\n");
}

}  // namespace
