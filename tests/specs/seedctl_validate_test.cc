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
  // A file that cannot be read is IO_ERROR, as for every other command that reads one.
  CmdResult missing = Seedctl("validate -f /nonexistent/w.yaml");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out.substr(missing.out.size() - 9), "IO_ERROR\n") << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/w.yaml"), std::string::npos) << missing.out;
}

// Usage mistakes end like every other error: exit 1, INVALID_ARGUMENT on the last line
// (not CLI11's own codes 105, 106, 109); --help is not a mistake.
TEST(SeedctlValidateTest, UsageErrorsExitOne) {
  for (const char* args :
       {"validate", "validate -f x.yaml --no-such-flag", "validate -o xml -f x.yaml",
        "workload status", "no-such-command", "workload submit"}) {
    CmdResult r = Seedctl(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.substr(r.out.size() - 17), "INVALID_ARGUMENT\n") << args << "\n" << r.out;
  }
  CmdResult help = Seedctl("validate --help");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  CmdResult missing = Seedctl("workload submit -f /nonexistent/w.yaml");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out.substr(missing.out.size() - 9), "IO_ERROR\n") << missing.out;
}

}  // namespace
