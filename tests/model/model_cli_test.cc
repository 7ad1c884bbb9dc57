// `seedctl env`, `seedctl signature check` and `seedctl model` end to end: the real seedctl
// binary, a state directory, Debian's /usr/bin/python3 as an environment, outputs written by
// numpy, and an artifact recorded by the model hooks from a real training process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "model/artifact_store.h"
#include "model/subprocess.h"
#include "model/test_util.h"
#include "runtime/model_hooks.h"
#include "spec/parse.h"

namespace rsl::model {
namespace {

using testing::TempDir;

constexpr char kFixture[] = RSL_SOURCE_DIR "/tests/model/fixtures/fraud-model.yaml";

std::string Seedctl() {
  if (const char* s = std::getenv("RSL_SEEDCTL")) return s;  // a build with seedctl elsewhere
  return RSL_BINARY_DIR "/bin/seedctl";
}

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::string LastLine() const {
    std::string s = output;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  }
};

CliResult Seed(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Seedctl()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess(argv, {{"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}}, 60000,
                      /*merge_stderr=*/true);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return {r->exit_code, r->out};
}

TEST(ModelCliTest, EnvRegisterListInspect) {
  TempDir dir;
  std::string sd = dir / "state";
  auto reg = Seed(
      {"env", "register", "volc/sys:v1", "--python", testing::kSystemPython, "--state-dir", sd});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  EXPECT_NE(reg.output.find("registered volc/sys:v1: "), std::string::npos) << reg.output;
  auto list = Seed({"env", "list", "--state-dir", sd});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_EQ(list.output.substr(0, list.output.find('\n')),
            "IMAGE        KIND    LOCATION          PACKAGES  DIGEST");
  auto inspect = Seed({"env", "inspect", "volc/sys:v1", "--state-dir", sd, "-o", "json"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  auto j = nlohmann::json::parse(inspect.output);
  bool has_numpy = false;
  for (const auto& p : j["packages"]) has_numpy |= p["name"] == "numpy";
  EXPECT_TRUE(has_numpy);
  EXPECT_EQ(j["digest"].get<std::string>().substr(0, 7), "sha256:");

  auto missing = Seed({"env", "inspect", "volc/sys:v2", "--state-dir", sd});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.output,
            "IMAGE_NOT_FOUND: image \"volc/sys:v2\" is not registered (did you mean "
            "\"volc/sys:v1\"?)\nIMAGE_NOT_FOUND\n");
  auto bad = Seed({"env", "register", "x:1", "--python", dir / "nope", "--state-dir", sd});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.LastLine(), "IO_ERROR");
}

TEST(ModelCliTest, SignatureCheck) {
  TempDir dir;
  ASSERT_EQ(testing::RunPython(R"(
import os
import numpy as np
for d in ('good', 'bad', 'wrongtype'):
    os.makedirs(d)
np.save('good/fraud_prob.npy', np.array([[0.1], [0.9]], dtype=np.float32))
np.save('bad/fraud_prob.npy', np.array([[0.1], [1.9]], dtype=np.float32))
np.save('wrongtype/fraud_prob.npy', np.array([[0], [1]], dtype=np.int32))
)",
                               dir.path()),
            0);
  auto good = Seed({"signature", "check", "-f", kFixture, "--outputs", dir / "good"});
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_EQ(good.output, "checked fraud_prob.npy\nOK\n");
  auto bad = Seed({"signature", "check", "-f", kFixture, "--outputs", dir / "bad"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output, "checked fraud_prob.npy\n" + (dir / "bad") +
                            "/fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH "
                            "spec.model.signature.outputs[0]: fraud_prob.range expected values "
                            "in [0, 1], got 1.9 at index [1, 0]\nOUTPUT_SCHEMA_MISMATCH\n");
  auto wrong = Seed({"signature", "check", "-f", kFixture, "--outputs", dir / "wrongtype"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("fraud_prob.dtype expected float32, got int32"), std::string::npos);
  auto no_file = Seed({"signature", "check", "-f", dir / "none.yaml", "--outputs", dir / "good"});
  EXPECT_EQ(no_file.exit_code, 1);
  EXPECT_EQ(no_file.LastLine(), "IO_ERROR");  // a file that cannot be read, as everywhere
}

// A training process runs as the hook resolved it; the artifact it leaves is recorded and
// committed; seedctl lists, describes (with provenance) and verifies it.
TEST(ModelCliTest, ModelListDescribeVerify) {
  TempDir dir;
  std::string sd = dir / "state";
  ASSERT_EQ(Seed({"env", "register", "rsl-test/numpy:v1", "--python", testing::kSystemPython,
                  "--state-dir", sd})
                .exit_code,
            0);
  testing::WriteText(dir / "train.py", R"(
import json, os, struct, sys
import numpy as np
out = os.environ['RSL_OUTPUT']
w = np.random.default_rng(int(sys.argv[1])).standard_normal(4).astype('<f4')
h = json.dumps({'w': {'dtype': 'F32', 'shape': [4], 'data_offsets': [0, 16]}}).encode()
open(os.path.join(out, 'model.safetensors'), 'wb').write(struct.pack('<Q', len(h)) + h + w.tobytes())
np.save(os.path.join(out, 'fraud_prob.npy'), np.array([[0.5]], dtype=np.float32))
)");
  auto parsed = spec::ParseWorkloadFile(kFixture);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();
  spec::Workload w = parsed.workload;
  w.pipeline.steps[0].command = {"python3", dir / "train.py", "1"};

  engine::RunInfo info{"wl-20240615-00000001", "run-1", sd, sd + "/runs/run-1", &w};
  engine::AdmissionReport report;
  Status admitted = runtime::EnvironmentAdmissionCheck(sd)->Check(info, &report);
  ASSERT_TRUE(admitted.ok()) << admitted.ToString();
  auto hook = runtime::ModelStepHook(sd);
  backend::LaunchSpec launch;
  launch.argv = w.pipeline.steps[0].command;
  std::string staging = dir / "staging/train";
  launch.env = {{"RSL_OUTPUT", staging}};
  ASSERT_TRUE(hook->BeforeStep(info, w.pipeline.steps[0], &launch).ok());
  ASSERT_TRUE(MakeDirs(staging).ok());
  auto proc = RunProcess(launch.argv, launch.env, 60000, true);
  ASSERT_TRUE(proc.ok());
  ASSERT_EQ(proc->exit_code, 0) << proc->out;
  engine::StepOutcome outcome;
  outcome.step = "train";
  outcome.staging_dir = staging;
  outcome.exit.kind = backend::ExitKind::kSucceeded;
  ASSERT_TRUE(hook->AfterStep(info, w.pipeline.steps[0], outcome).ok());
  ASSERT_EQ(rename((dir / "staging").c_str(), (dir / "published").c_str()), 0);
  hook->AfterRun(info, "SUCCEEDED", dir / "published");

  auto list = Seed({"model", "list", "--state-dir", sd});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("fraud-model:1.0.0  custom     committed"), std::string::npos)
      << list.output;
  auto describe = Seed({"model", "describe", "fraud-model:1.0.0", "--state-dir", sd});
  ASSERT_EQ(describe.exit_code, 0) << describe.output;
  // The list shows the whole fingerprint (what buildFingerprint takes), as describe does.
  size_t fp = describe.output.find("Fingerprint:  ");
  ASSERT_NE(fp, std::string::npos) << describe.output;
  std::string fingerprint =
      describe.output.substr(fp + 14, describe.output.find('\n', fp) - fp - 14);
  EXPECT_EQ(fingerprint.size(), 71u) << fingerprint;
  EXPECT_NE(list.output.find(fingerprint), std::string::npos) << list.output;
  EXPECT_NE(describe.output.find("URI:          file://" + (dir / "published/train")),
            std::string::npos)
      << describe.output;
  auto prov = Seed({"model", "describe", "fraud-model", "--state-dir", sd, "-o", "provenance"});
  ASSERT_EQ(prov.exit_code, 0) << prov.output;
  auto statement = nlohmann::json::parse(prov.output);
  EXPECT_EQ(statement["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(statement["subject"].size(), 1u);
  EXPECT_EQ(statement["predicate"]["workloadId"], "wl-20240615-00000001");
  auto missing = Seed({"model", "describe", "fraud-modle", "--state-dir", sd});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.LastLine(), "NOT_FOUND");

  std::string uri = "file://" + (dir / "published/train");
  auto verify = Seed({"model", "verify", uri, "--state-dir", sd});
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_EQ(verify.LastLine(), "OK");
  testing::WriteText(dir / "published/train/model.safetensors", "tampered");
  auto tampered = Seed({"model", "verify", uri, "--state-dir", sd});
  EXPECT_EQ(tampered.exit_code, 1);
  EXPECT_NE(tampered.output.find("MODEL_FINGERPRINT_MISMATCH: model.safetensors: sha256 "),
            std::string::npos)
      << tampered.output;
  EXPECT_EQ(tampered.LastLine(), "MODEL_FINGERPRINT_MISMATCH");
}

}  // namespace
}  // namespace rsl::model
