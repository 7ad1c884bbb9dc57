// The model contract through `seedctl run`: the real binary admits and runs a workload whose
// training step runs in a registered environment (Debian's python3), with the model hooks
// installed as DefaultHooks installs them. A deterministic training gives the same
// fingerprint twice; a changed one fails MODEL_FINGERPRINT_MISMATCH; each admission refusal
// and the output check end the run with their code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "model/subprocess.h"
#include "model/test_util.h"

namespace rsl::model {
namespace {

using testing::Capture;
using testing::TempDir;

std::string Seedctl() {
  if (const char* s = std::getenv("RSL_SEEDCTL")) return s;
  return RSL_BINARY_DIR "/bin/seedctl";
}

struct CliResult {
  int exit_code = -1;
  std::string output;
  std::string LastLine() const {
    std::string s = output;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    auto nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
  }
};

CliResult Seed(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Seedctl()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess(argv, {{"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}}, 120000,
                      /*merge_stderr=*/true);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return {r->exit_code, r->out};
}

constexpr char kTrain[] = R"(
import json, os, struct, sys
import numpy as np
out = os.environ['RSL_OUTPUT']
seed, pred_dtype = int(sys.argv[1]), sys.argv[2]
w = np.random.default_rng(seed).standard_normal((16, 4)).astype('<f4')
h = json.dumps({'w': {'dtype': 'F32', 'shape': [16, 4], 'data_offsets': [0, w.nbytes]}}).encode()
with open(os.path.join(out, 'model.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h + w.tobytes())
np.save(os.path.join(out, 'fraud_prob.npy'), np.full((3, 1), 0.5, dtype=pred_dtype))
)";

class ModelRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sd_ = dir_ / "state";
    testing::WriteText(dir_ / "train.py", kTrain);
    numpy_ = Capture(std::string(testing::kSystemPython) +
                     " -c 'import numpy; print(numpy.__version__, end=\"\")'");
    auto reg = Seed({"env", "register", "rsl-test/numpy:v1", "--python", testing::kSystemPython,
                     "--state-dir", sd_});
    ASSERT_EQ(reg.exit_code, 0) << reg.output;
  }

  // A workload whose train step runs train.py SEED DTYPE in IMAGE.
  std::string Workload(const std::string& name, const std::string& image, const std::string& seed,
                       const std::string& dtype, const std::string& pin,
                       const std::string& fingerprint = "") {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
        "\nspec:\n  model:\n    framework: custom\n    version: \"1.0.0\"\n";
    if (!fingerprint.empty()) yaml += "    buildFingerprint: \"" + fingerprint + "\"\n";
    yaml += "    dependencies: [\"" + pin +
            "\"]\n    signature:\n      outputs:\n        - {name: fraud_prob, shape: [-1, 1], "
            "dtype: float32, constraints: {range: [0.0, 1.0]}}\n  pipeline:\n    - name: train\n"
            "      image: \"" +
            image + "\"\n      command: [\"python3\", \"" + (dir_ / "train.py") + "\", \"" + seed +
            "\", \"" + dtype + "\"]\n";
    std::string path = dir_ / (name + "-" + seed + "-" + dtype + ".yaml");
    testing::WriteText(path, yaml);
    return path;
  }

  CliResult RunWorkload(const std::string& path) {
    // The training script lives in the test's private directory: steps run as our user.
    return Seed({"run", "-f", path, "--state-dir", sd_, "--step-isolation", "none"});
  }

  nlohmann::json Artifacts() {
    auto list = Seed({"model", "list", "--state-dir", sd_, "-o", "json"});
    EXPECT_EQ(list.exit_code, 0) << list.output;
    return nlohmann::json::parse(list.output, nullptr, false);
  }

  TempDir dir_;
  std::string sd_, numpy_;
};

TEST_F(ModelRunTest, DeterministicTrainingReproducesAndAChangeFailsTheFingerprint) {
  std::string wl = Workload("fraud-model", "rsl-test/numpy:v1", "1", "float32", "numpy==" + numpy_);
  auto first = RunWorkload(wl);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = RunWorkload(wl);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  auto artifacts = Artifacts();
  ASSERT_EQ(artifacts.size(), 2u) << artifacts.dump(2);
  EXPECT_EQ(artifacts[0]["fingerprint"], artifacts[1]["fingerprint"]);
  EXPECT_EQ(artifacts[0]["state"], "committed");
  EXPECT_NE(artifacts[0]["runId"], artifacts[1]["runId"]);
  std::string fingerprint = artifacts[0]["fingerprint"];
  std::string uri = artifacts[0]["uri"];

  auto verify = Seed({"model", "verify", uri, "--state-dir", sd_});
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_EQ(verify.LastLine(), "OK");

  // Pinned: the same training passes; another seed produces other weights and fails.
  auto pinned = RunWorkload(Workload("fraud-model", "rsl-test/numpy:v1", "1", "float32",
                                     "numpy==" + numpy_, fingerprint));
  EXPECT_EQ(pinned.exit_code, 0) << pinned.output;
  auto changed = RunWorkload(Workload("fraud-model", "rsl-test/numpy:v1", "2", "float32",
                                      "numpy==" + numpy_, fingerprint));
  EXPECT_EQ(changed.exit_code, 1);
  EXPECT_EQ(changed.LastLine(), "MODEL_FINGERPRINT_MISMATCH") << changed.output;
  EXPECT_NE(changed.output.find("buildFingerprint is " + fingerprint), std::string::npos)
      << changed.output;
  EXPECT_EQ(Artifacts().size(), 3u);  // the failed run's model is not recorded
}

TEST_F(ModelRunTest, RefusalsAndOutputChecksEndTheRunWithTheirCode) {
  auto image = RunWorkload(Workload("m1", "rsl-test/numpy:v2", "1", "float32", "numpy==" + numpy_));
  EXPECT_EQ(image.exit_code, 1);
  EXPECT_EQ(image.LastLine(), "IMAGE_NOT_FOUND") << image.output;
  // Not a registered host environment, and Docker Hub (its registry) does not have it or
  // cannot be reached.
  EXPECT_NE(image.output.find("image \"docker.io/rsl-test/numpy:v2\": "), std::string::npos)
      << image.output;
  EXPECT_NE(image.output.find("(and it is not a registered host environment)"), std::string::npos)
      << image.output;

  auto pins = RunWorkload(Workload("m2", "rsl-test/numpy:v1", "1", "float32", "numpy==0.0.1"));
  EXPECT_EQ(pins.exit_code, 1);
  EXPECT_EQ(pins.LastLine(), "MODEL_DEPENDENCY_MISMATCH") << pins.output;
  EXPECT_NE(pins.output.find("numpy: declared 0.0.1, environment has " + numpy_), std::string::npos)
      << pins.output;

  auto output =
      RunWorkload(Workload("m3", "rsl-test/numpy:v1", "1", "float64", "numpy==" + numpy_));
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_EQ(output.LastLine(), "OUTPUT_SCHEMA_MISMATCH") << output.output;
  EXPECT_NE(output.output.find("fraud_prob.dtype expected float32, got float64"), std::string::npos)
      << output.output;
  EXPECT_EQ(Artifacts().size(), 0u);
}

// The model's in-toto provenance lists the input as admission measured it (rows, files, bytes,
// checksum, schema fingerprint), for an input a `local` datasource serves; `seedctl run`
// records ModelRecorded durably, as the controller does.
TEST_F(ModelRunTest, ProvenanceListsTheMeasuredInput) {
  ASSERT_TRUE(MakeDirs(dir_ / "ns1/features").ok());
  testing::WriteText(dir_ / "ns1/features/a.csv", "id,v\n1,2\n3,4\n5,6\n");
  auto ds = Seed({"datasource", "register", "local", "--name", "ns1", "--authority", "hdfs://ns1",
                  "--path", dir_ / "ns1", "--state-dir", sd_});
  ASSERT_EQ(ds.exit_code, 0) << ds.output;
  std::string path = dir_ / "prov.yaml";
  testing::WriteText(path,
                     "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: prov\n"
                     "spec:\n  data:\n    input:\n      uri: hdfs://ns1/features\n"
                     "      format: csv\n      schema: \"id:int64,v:int64\"\n"
                     "  model:\n    framework: custom\n    version: \"1.0.0\"\n"
                     "  pipeline:\n    - name: train\n"
                     "      command: [\"sh\", \"-c\", \"printf abc > $RSL_OUTPUT/model.pt\"]\n");
  auto run = RunWorkload(path);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("train  ModelRecorded  model prov:1.0.0 fingerprint sha256:"),
            std::string::npos)
      << run.output;
  auto prov = Seed({"model", "describe", "prov:1.0.0", "--state-dir", sd_, "-o", "provenance"});
  ASSERT_EQ(prov.exit_code, 0) << prov.output;
  auto j = nlohmann::json::parse(prov.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << prov.output;
  const auto& inputs = j["predicate"]["inputs"];
  ASSERT_EQ(inputs.size(), 1u) << j.dump(2);
  EXPECT_EQ(inputs[0]["uri"], "hdfs://ns1/features");
  EXPECT_EQ(inputs[0]["format"], "csv");
  EXPECT_EQ(inputs[0]["rows"], 3);
  EXPECT_EQ(inputs[0]["files"], 1);
  EXPECT_EQ(inputs[0]["bytes"], 17);
  EXPECT_EQ(inputs[0]["checksum"].get<std::string>().rfind("sha256:", 0), 0u);
  EXPECT_EQ(inputs[0]["schemaFingerprint"].get<std::string>().rfind("sha256:", 0), 0u);
  EXPECT_EQ(inputs[0]["version"].get<std::string>().size(), 16u);
}

}  // namespace
}  // namespace rsl::model
