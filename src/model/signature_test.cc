// Signature checks against outputs written by numpy and safetensors files written by the
// test, and the before-run check of declared step outputs. Messages are compared verbatim.
#include "model/signature.h"

#include <gtest/gtest.h>

#include "model/safetensors.h"
#include "model/test_util.h"

namespace rsl::model {
namespace {

using testing::RunPython;
using testing::TempDir;

spec::ModelSpec FraudModel() {
  spec::ModelSpec m;
  m.framework = "pytorch";
  m.version = "2.1.7";
  m.outputs.push_back({"fraud_prob", "float32", {-1, 1}, std::make_pair(0.0, 1.0)});
  m.outputs.push_back({"embedding", "float32", {-1, 4}, std::nullopt});
  return m;
}

std::vector<std::string> Messages(const Errors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.ToString());
  return out;
}

// One output directory per case, written by numpy.
OutputCheck CheckWithNumpy(const TempDir& dir, const std::string& case_name,
                           const std::string& numpy_code) {
  std::string out = dir / case_name;
  EXPECT_EQ(MakeDirs(out).ok(), true);
  EXPECT_EQ(RunPython("import numpy as np\n" + numpy_code, out), 0);
  return CheckOutputDir(FraudModel(), out);
}

TEST(SignatureTest, MatchingOutputsPass) {
  TempDir dir;
  auto r = CheckWithNumpy(dir, "ok", R"(
np.save('fraud_prob.npy', np.array([[0.0], [0.5], [1.0], [0.25]], dtype=np.float32))
np.save('embedding.npy', np.ones((4, 4), dtype=np.float32))
np.save('other.npy', np.array([7], dtype=np.int64))  # not in the signature: not checked
)");
  EXPECT_TRUE(r.errors.empty()) << Messages(r.errors)[0];
  EXPECT_EQ(r.checked, (std::vector<std::string>{"embedding.npy", "fraud_prob.npy"}));
}

TEST(SignatureTest, EachMismatchKindHasItsMessage) {
  TempDir dir;
  const std::string p = "fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: ";
  struct Case {
    std::string name, code, message;
  };
  const std::vector<Case> cases = {
      {"dtype", "np.save('fraud_prob.npy', np.zeros((4, 1), dtype=np.int32))",
       p + "fraud_prob.dtype expected float32, got int32"},
      {"shape", "np.save('fraud_prob.npy', np.zeros((4, 2), dtype=np.float32))",
       p + "fraud_prob.shape expected [-1, 1], got [4, 2]"},
      {"rank", "np.save('fraud_prob.npy', np.zeros(4, dtype=np.float32))",
       p + "fraud_prob.shape expected [-1, 1], got [4]"},
      {"range",
       "np.save('fraud_prob.npy', np.array([[0.1], [0.2], [0.3], [1.5]], dtype=np.float32))",
       p + "fraud_prob.range expected values in [0, 1], got 1.5 at index [3, 0]"},
      {"below", "np.save('fraud_prob.npy', np.array([[0.1], [-0.25]], dtype=np.float32))",
       p + "fraud_prob.range expected values in [0, 1], got -0.25 at index [1, 0]"},
      {"float32", "np.save('fraud_prob.npy', np.array([[0.1], [1.9]], dtype=np.float32))",
       p + "fraud_prob.range expected values in [0, 1], got 1.9 at index [1, 0]"},
      {"nan", "np.save('fraud_prob.npy', np.array([[0.1], [0.2], [np.nan]], dtype=np.float32))",
       p + "fraud_prob.range expected values in [0, 1], got nan at index [2, 0]"},
      {"inf",
       "np.save('embedding.npy', np.array([[0, 1, 2, 3], [4, 5, np.inf, 7]], dtype=np.float32))",
       "embedding.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: embedding.values "
       "expected finite numbers, got inf at index [1, 2]"},
      // Fortran order stores column by column: [1, 0] is met first, [0, 3] comes first in C
      // order and is the one reported.
      {"fortran",
       "a = np.zeros((2, 4), dtype=np.float32); a[1, 0] = np.nan; a[0, 3] = np.nan\n"
       "np.save('embedding.npy', np.asfortranarray(a))",
       "embedding.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: embedding.values "
       "expected finite numbers, got nan at index [0, 3]"},
      {"nested",
       "import os; os.makedirs('sub/dir'); np.save('sub/dir/fraud_prob.npy', np.zeros((1, 1), "
       "dtype=np.float64))",
       "sub/dir/fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
       "fraud_prob.dtype expected float32, got float64"},
      {"corrupt", "open('fraud_prob.npy', 'wb').write(b'\\x93NUMPY\\x01\\x00\\x40\\x00{oops')",
       p + "truncated .npy header: declares 64 bytes, file has 5"},
  };
  for (const auto& c : cases) {
    auto r = CheckWithNumpy(dir, c.name, c.code);
    ASSERT_EQ(r.errors.size(), 1u) << c.name;
    EXPECT_EQ(r.errors[0].ToString(), c.message) << c.name;
    EXPECT_EQ(r.errors[0].code, "OUTPUT_SCHEMA_MISMATCH");
  }
}

TEST(SignatureTest, DtypeAndShapeAreBothReportedValuesOnlyWhenTheyMatch) {
  TempDir dir;
  auto r = CheckWithNumpy(dir, "both",
                          "np.save('fraud_prob.npy', np.full((2, 3), 9, dtype=np.float64))");
  EXPECT_EQ(Messages(r.errors),
            (std::vector<std::string>{
                "fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
                "fraud_prob.dtype expected float32, got float64",
                "fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
                "fraud_prob.shape expected [-1, 1], got [2, 3]"}));
}

TEST(SignatureTest, TensorsInsideSafetensorsFiles) {
  TempDir dir;
  std::string out = dir / "st";
  ASSERT_TRUE(MakeDirs(out).ok());
  float probs[3] = {0.5f, 0.25f, 2.0f};
  std::string bytes(reinterpret_cast<const char*>(probs), sizeof probs);
  std::string bf16(6, '\0');  // three bfloat16 zeros
  std::ofstream(out + "/preds.safetensors", std::ios::binary)
      << WriteSafetensors({{"fraud_prob", "F32", {3, 1}, bytes}, {"weights", "F32", {3}, bytes}});
  std::ofstream(out + "/emb.safetensors", std::ios::binary)
      << WriteSafetensors({{"embedding", "BF16", {3}, bf16}});
  std::ofstream(out + "/broken.safetensors", std::ios::binary)
      << std::string("\x10\0\0\0\0\0\0\0{", 9);
  auto r = CheckOutputDir(FraudModel(), out);
  EXPECT_EQ(r.checked, (std::vector<std::string>{"emb.safetensors:embedding",
                                                 "preds.safetensors:fraud_prob"}));
  EXPECT_EQ(Messages(r.errors),
            (std::vector<std::string>{
                "broken.safetensors: OUTPUT_SCHEMA_MISMATCH: truncated: header length 16 but only "
                "1 bytes follow",
                "emb.safetensors: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: "
                "embedding.dtype expected float32, got bfloat16",
                "emb.safetensors: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: "
                "embedding.shape expected [-1, 4], got [3]",
                "preds.safetensors: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
                "fraud_prob.range expected values in [0, 1], got 2 at index [2, 0]"}));
}

// int64 and uint64 outputs against integer range ends are compared exactly: 2^53 + 1 is
// above a range that ends at 2^53 although both are the same double (numpy writes the files).
TEST(SignatureTest, IntegerRangesAreExact) {
  TempDir dir;
  spec::ModelSpec m;
  spec::TensorSpec ids{
      "ids", "int64", {-1}, std::make_pair(-9007199254740992.0, 9007199254740992.0)};
  ids.int_range = std::make_pair(int64_t{-9007199254740992}, int64_t{9007199254740992});
  m.outputs.push_back(ids);
  spec::TensorSpec counts{"counts", "uint64", {-1}, std::make_pair(0.0, 9223372036854775807.0)};
  counts.int_range = std::make_pair(int64_t{0}, INT64_MAX);
  m.outputs.push_back(counts);
  std::string out = dir / "int";
  ASSERT_TRUE(MakeDirs(out).ok());
  ASSERT_EQ(RunPython(R"(import numpy as np
np.save('ids.npy', np.array([1, 9007199254740992, 9007199254740993], dtype=np.int64))
np.save('counts.npy', np.array([0, 2**63 - 1, 2**63], dtype=np.uint64))
)",
                      out),
            0);
  auto r = CheckOutputDir(m, out);
  EXPECT_EQ(Messages(r.errors),
            (std::vector<std::string>{
                "counts.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: "
                "counts.range expected values in [0, 9223372036854775807], got a value above "
                "9223372036854775807 at index [2]",
                "ids.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
                "ids.range expected values in [-9007199254740992, 9007199254740992], got "
                "9007199254740993 at index [2]"}));
  // Within the exact ends: nothing to report.
  ASSERT_EQ(RunPython("import numpy as np\n"
                      "np.save('ids.npy', np.array([9007199254740992], dtype=np.int64))\n"
                      "np.save('counts.npy', np.array([2**63 - 1], dtype=np.uint64))\n",
                      out),
            0);
  EXPECT_TRUE(CheckOutputDir(m, out).errors.empty());
}

// An FP8 checkpoint written by Python's json and struct as safetensors' save_file lays it out:
// the weights are in F8_E4M3, F8_E5M2 and F8_E8M0 (a format RSL does not read), none of them
// in the signature, so only fraud_prob is checked. A signature output in FP8 is read and
// range-checked (0x7e is E4M3's largest value, 448).
TEST(SignatureTest, Fp8CheckpointsAreReadAndOnlySignatureTensorsChecked) {
  TempDir dir;
  std::string out = dir / "fp8";
  ASSERT_TRUE(MakeDirs(out).ok());
  ASSERT_EQ(RunPython(R"(
import json, struct
def save(path, tensors):
    header, data = {}, b''
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
save('model.safetensors', [
    ('w', 'F8_E4M3', [2, 2], bytes([0x38, 0xb8, 0x7e, 0x7f])),
    ('v', 'F8_E5M2', [2], bytes([0x3c, 0x7c])),
    ('scale', 'F8_E8M0', [2], bytes([0x7f, 0x80])),
    ('fraud_prob', 'F32', [2, 1], struct.pack('<2f', 0.25, 0.75))])
save('quant.safetensors', [('embedding', 'F8_E4M3', [1, 4], bytes([0x38, 0x30, 0x7e, 0x01])),
                           ('fraud_prob', 'F8_E8M0', [1, 1], bytes([0x7f]))])
)",
                      out),
            0);
  auto model = FraudModel();
  model.outputs[1] = {"embedding", "float8_e4m3fn", {-1, 4}, std::make_pair(0.0, 100.0)};
  auto r = CheckOutputDir(model, out);
  EXPECT_EQ(r.checked,
            (std::vector<std::string>{"model.safetensors:fraud_prob", "quant.safetensors:embedding",
                                      "quant.safetensors:fraud_prob"}));
  EXPECT_EQ(Messages(r.errors),
            (std::vector<std::string>{
                "quant.safetensors: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[1]: "
                "embedding.range expected values in [0, 100], got 448 at index [0, 2]",
                "quant.safetensors: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
                "fraud_prob.dtype expected float32, got F8_E8M0 (a dtype RSL does not read)"}));
}

TEST(SignatureTest, MissingDirectoryIsAnError) {
  TempDir dir;
  auto r = CheckOutputDir(FraudModel(), dir / "absent");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "IO_ERROR: cannot list " + (dir / "absent") + ": No such file or directory");
}

TEST(SignatureTest, DeclaredOutputsThatContradictTheSignatureAreRefused) {
  spec::Workload w;
  w.source_file = "wl.yaml";
  w.model = FraudModel();
  spec::Step prep;
  prep.name = "preprocess";
  prep.outputs.push_back({"features", "float32", {-1, 128}, std::nullopt});  // not an output
  spec::Step train;
  train.name = "train";
  train.outputs.push_back({"fraud_prob", "int32", {-1, 1}, std::nullopt});
  train.outputs.push_back({"embedding", "float32", {8, 5}, std::nullopt});
  spec::Step score;
  score.name = "score";
  score.outputs.push_back({"fraud_prob", "float32", {16, 1}, std::make_pair(0.0, 2.0)});
  w.pipeline.steps = {prep, train, score};
  w.positions["spec.pipeline.steps[1].outputs[0].dtype"] = SourcePos{"wl.yaml", 41, 18};
  w.positions["spec.pipeline.steps[1].outputs[1]"] = SourcePos{"wl.yaml", 42, 11};
  auto errors = CheckDeclaredOutputs(w);
  EXPECT_EQ(
      Messages(errors),
      (std::vector<std::string>{
          "wl.yaml:41:18: OUTPUT_SCHEMA_MISMATCH spec.pipeline.steps[1].outputs[0].dtype: "
          "fraud_prob.dtype expected float32, got int32 (make step \"train\"'s output agree "
          "with spec.model.signature.outputs[0])",
          "wl.yaml:42:11: OUTPUT_SCHEMA_MISMATCH spec.pipeline.steps[1].outputs[1].shape: "
          "embedding.shape expected [-1, 4], got [8, 5] (make step \"train\"'s output agree "
          "with spec.model.signature.outputs[1])",
          "wl.yaml: OUTPUT_SCHEMA_MISMATCH spec.pipeline.steps[2].outputs[0].constraints.range: "
          "fraud_prob.range expected within [0, 1], got [0, 2] (make step \"score\"'s output "
          "agree with spec.model.signature.outputs[0])"}));
  w.model.reset();
  EXPECT_TRUE(CheckDeclaredOutputs(w).empty());
}

}  // namespace
}  // namespace rsl::model
