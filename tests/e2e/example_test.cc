// The fraud example's programs on their own, without RSL: the generator's Avro read back by
// an independent implementation (python3-avro), the planted pattern passing the AUC gate and
// its absence failing it, the model's determinism, and clear failures on bad input. The
// steps get RSL's step environment (SPEC.md "pipeline") set by hand.
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "e2e_util.h"

namespace rsl::e2e {
namespace {

using nlohmann::json;

constexpr char kPartition[] = "raw/transactions/year=2024/month=06/day=15";
// Big enough for a stable AUC (about 400 fraud rows, 80 of them held out), small enough for
// a few seconds per pipeline.
constexpr int kRows = 100000;
constexpr double kAucGate = 0.92;  // the workload's `when: output.train.metrics.auc > 0.92`
constexpr int64_t kDayMicros = 86400LL * 1000000;

CmdResult Generate(const std::string& root, int rows, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {kPython,  ExampleDir() + "/gen_transactions.py",
                                   "--out",  root,
                                   "--rows", std::to_string(rows)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCmd(argv);
}

json Look(const std::string& what, const std::string& path) {
  CmdResult r = RunCmd({kPython, SourceDir() + "/tests/e2e/look.py", what, path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? json::parse(r.output) : json::object();
}

// Runs one step as RSL would: RSL_INPUT, RSL_OUTPUT, RSL_INPUT_<DEP>, metrics, progress.
CmdResult RunStep(const std::string& step, const std::string& data_root, const std::string& work) {
  std::map<std::string, std::string> env = {
      {"RSL_INPUT", data_root + "/" + kPartition},
      {"RSL_OUTPUT", work + "/" + step},
      {"RSL_INPUT_INGEST", work + "/ingest"},
      {"RSL_INPUT_PREPROCESS", work + "/preprocess"},
      {"RSL_INPUT_TRAIN", work + "/train"},
      {"RSL_METRICS_FILE", work + "/" + step + ".metrics.json"},
      {"RSL_PROGRESS_FILE", work + "/" + step + ".progress"},
      {"RSL_STEP", step}};
  return RunCmd({kPython, step + ".py"}, env, ExampleDir());
}

// ingest -> preprocess -> train -> validate; returns train's metrics.
json RunPipeline(const std::string& data_root, const std::string& work) {
  for (const char* step : {"ingest", "preprocess", "train", "validate"}) {
    CmdResult r = RunStep(step, data_root, work);
    EXPECT_EQ(r.exit_code, 0) << step << ":\n" << r.output;
    if (r.exit_code != 0) return json::object();
  }
  return json::parse(ReadText(work + "/train.metrics.json"));
}

TEST(FraudExample, GeneratorWritesAvroThatPythonAvroReadsBack) {
  TempDir dir;
  auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  CmdResult gen = Generate(dir.path(), 20000, {"--files", "3"});
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  json s = Look("avro", dir.Sub(kPartition));
  EXPECT_EQ(s["files"], 3);
  EXPECT_EQ(s["rows"], 20000);
  EXPECT_EQ(s["mismatches"], 0) << "python3-avro and the example's reader disagree";
  EXPECT_EQ(s["distinct_tx"], 20000) << "tx_id must be unique";
  EXPECT_EQ(s["codecs"], json::array({"deflate"}));
  EXPECT_EQ(
      s["fields"].dump(),
      R"([["tx_id","string"],["user_id","string"],["amount","double"],)"
      R"(["merchant","string"],["timestamp",{"logicalType":"timestamp-micros","type":"long"}],)"
      R"(["is_fraud","boolean"]])");
  EXPECT_GT(s["fraud"].get<int>(), 0);
  EXPECT_LT(s["fraud"].get<int>(), 20000 / 50) << "fraud stays rare (planted rate ~0.4%)";
  EXPECT_GE(s["amount_min"].get<double>(), 0.01);
  // Fresh: the newest record is seconds old (well within the workload's 2h watermark), and
  // the day spans about 24 hours before it.
  int64_t newest = s["ts_max"].get<int64_t>();
  EXPECT_LE(newest, now + 1000000);
  EXPECT_GE(newest, now - 5LL * 60 * 1000000);
  EXPECT_GE(s["ts_min"].get<int64_t>(), newest - kDayMicros);
  EXPECT_LE(s["ts_min"].get<int64_t>(), newest - kDayMicros / 2);
}

TEST(FraudExample, GeneratorIsDeterministicFromItsSeed) {
  TempDir dir;
  for (const char* name : {"a", "b", "c"}) {
    std::string seed = std::string(name) == "c" ? "8" : "7";
    CmdResult gen = Generate(dir.Sub(name), 5000, {"--seed", seed, "--now", "1718409600"});
    ASSERT_EQ(gen.exit_code, 0) << gen.output;
  }
  std::string file = std::string("/") + kPartition + "/part-00000.avro";
  EXPECT_EQ(Sha256OfFile(dir.Sub("a") + file), Sha256OfFile(dir.Sub("b") + file));
  EXPECT_NE(Sha256OfFile(dir.Sub("a") + file), Sha256OfFile(dir.Sub("c") + file));
}

TEST(FraudExample, PlantedPatternPassesTheAucGateAndValidateWritesTheSignature) {
  TempDir dir;
  ASSERT_EQ(Generate(dir.Sub("data"), kRows).exit_code, 0);
  json metrics = RunPipeline(dir.Sub("data"), dir.Sub("work"));
  ASSERT_TRUE(metrics.contains("auc")) << metrics.dump();
  EXPECT_GT(metrics["auc"].get<double>(), kAucGate) << metrics.dump();
  EXPECT_GT(metrics["loss"].get<double>(), 0.0);
  EXPECT_EQ(ReadText(dir.Sub("work/train.progress")), "8/8\n");
  // The model is the only file train writes (the artifact RSL fingerprints).
  EXPECT_EQ(ListFiles(dir.Sub("work/train")), std::vector<std::string>{"model.safetensors"});
  // features: the signature's input layout, float32 [rows, 128].
  json features = Look("npy", dir.Sub("work/preprocess/features.npy"));
  EXPECT_EQ(features["dtype"], "float32");
  EXPECT_EQ(features["shape"], json::array({kRows, 128}));
  EXPECT_EQ(features["nan"], 0);
  // fraud_prob: float32 [hold-out rows, 1] within [0, 1].
  json prob = Look("npy", dir.Sub("work/validate/fraud_prob.npy"));
  json vmetrics = json::parse(ReadText(dir.Sub("work/validate.metrics.json")));
  EXPECT_EQ(prob["dtype"], "float32");
  EXPECT_EQ(prob["shape"], json::array({vmetrics["holdout_rows"], 1}));
  EXPECT_NEAR(vmetrics["holdout_rows"].get<double>(), kRows / 5.0, kRows * 0.01);
  EXPECT_GE(prob["min"].get<double>(), 0.0);
  EXPECT_LE(prob["max"].get<double>(), 1.0);
  EXPECT_EQ(prob["nan"], 0);
  EXPECT_DOUBLE_EQ(vmetrics["auc"].get<double>(), metrics["auc"].get<double>());
}

TEST(FraudExample, WithoutThePatternTheAucGateFails) {
  TempDir dir;
  ASSERT_EQ(Generate(dir.Sub("data"), kRows, {"--no-pattern"}).exit_code, 0);
  json metrics = RunPipeline(dir.Sub("data"), dir.Sub("work"));
  ASSERT_TRUE(metrics.contains("auc")) << metrics.dump();
  EXPECT_LT(metrics["auc"].get<double>(), 0.65) << "nothing to learn: AUC should be ~0.5";
}

TEST(FraudExample, ModelBytesDoNotDependOnWhenTheDataWasGenerated) {
  TempDir dir;
  // Same seed, timestamps a year apart: the features use only time differences.
  ASSERT_EQ(Generate(dir.Sub("d1"), 30000, {"--now", "1718409600"}).exit_code, 0);
  ASSERT_EQ(Generate(dir.Sub("d2"), 30000, {"--now", "1750000000"}).exit_code, 0);
  RunPipeline(dir.Sub("d1"), dir.Sub("w1"));
  RunPipeline(dir.Sub("d2"), dir.Sub("w2"));
  std::string a = Sha256OfFile(dir.Sub("w1/train/model.safetensors"));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, Sha256OfFile(dir.Sub("w2/train/model.safetensors")));
}

TEST(FraudExample, IngestFailsClearlyOnMissingOrCorruptInput) {
  TempDir dir;
  CmdResult missing = RunStep("ingest", dir.Sub("nowhere"), dir.Sub("work"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("not found or unreachable"), std::string::npos) << missing.output;

  ASSERT_EQ(Generate(dir.Sub("data"), 2000, {"--files", "1"}).exit_code, 0);
  std::string file = dir.Sub("data") + "/" + kPartition + "/part-00000.avro";
  std::string bytes = ReadText(file);
  WriteText(file, bytes.substr(0, bytes.size() / 2));  // truncated mid-block
  CmdResult corrupt = RunStep("ingest", dir.Sub("data"), dir.Sub("work"));
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_NE(corrupt.output.find("part-00000.avro: offset "), std::string::npos) << corrupt.output;
  EXPECT_NE(corrupt.output.find("truncated block"), std::string::npos) << corrupt.output;
  EXPECT_EQ(corrupt.output.find("Traceback"), std::string::npos) << corrupt.output;
}

}  // namespace
}  // namespace rsl::e2e
