// RSL's Avro reader against files written by two independent implementations: Python's
// reference library (python3-avro) and the Avro C library (libavro), with every codec each
// supports. The numbers checked follow from the writers' documented rows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "base/codes.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "data/quality.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::Input;
using testing::TempDir;

constexpr int kRows = 5000;
constexpr int64_t kBase = 1718445600000000;

constexpr char kReader[] = R"({"type":"record","name":"transaction","fields":[
  {"name":"tx_id","type":"string"},
  {"name":"user_id","type":"double"},
  {"name":"amount","type":["null","double"],"constraints":{"min":0}},
  {"name":"merchant","type":{"type":"enum","name":"merchant","symbols":["m0","m1","m2","m3","m4"]}},
  {"name":"ts","type":"long","logicalType":"timestamp-micros"},
  {"name":"is_fraud","type":"boolean"},
  {"name":"region","type":"string","default":"eu"}]})";

std::string WritePython(const TempDir& dir, const std::string& codec) {
  std::string out = dir.path() + "/py-" + codec + ".avro";
  std::string cmd = "/usr/bin/python3 " RSL_SOURCE_DIR "/tests/data/write_avro.py " + out + " " +
                    codec + " " + std::to_string(kRows);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

std::string WriteC(const TempDir& dir, const std::string& codec) {
  std::string out = dir.path() + "/c-" + codec + ".avro";
  std::string cmd =
      RSL_BINARY_DIR "/bin/avro_c_writer " + out + " " + codec + " " + std::to_string(kRows);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// The validation clock, pinned at `now_ms` (each Validate reads it once, at its start).
Env* ClockAt(int64_t now_ms) {
  static FakeClockEnv env;
  env.SetNowMs(now_ms);
  return &env;
}

ValidateOptions Opts() {
  ValidateOptions o;
  o.threads = 2;
  o.env = ClockAt(kBase / 1000 + 60000);
  return o;
}

void ExpectWriterRows(const std::string& file) {
  auto in = Input(file, kReader);
  in.quality.completeness = 99.8;
  in.quality.unique_key = "tx_id";
  in.quality.uniqueness = 99.9;
  in.quality.freshness_ms = 3600000;
  auto r = Validate(in, nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.format, "avro");
  EXPECT_EQ(r.rows, kRows);
  EXPECT_EQ(*r.distinct_keys, kRows - 1);  // row 10 repeats tx-3
  EXPECT_EQ(r.fields[2].nulls, 5);         // rows 7, 1007, ..., 4007
  EXPECT_EQ(r.fields[1].min.value(), 0);   // user_id, long promoted to double
  EXPECT_EQ(r.fields[1].max.value(), 999);
  EXPECT_EQ(r.fields[2].max.value(), (kRows - 1) * 0.5);
  EXPECT_EQ(r.fields[3].values, kRows);  // enum symbols
  EXPECT_EQ(r.fields[6].values, kRows);  // reader-only field with a default
  EXPECT_EQ(*r.newest_micros, kBase + kRows - 1);
  EXPECT_EQ(r.freshness_from, "field ts");
}

class PythonAvro : public ::testing::TestWithParam<std::string> {};
TEST_P(PythonAvro, ReadsEveryRecord) {
  TempDir dir;
  ExpectWriterRows(WritePython(dir, GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Codecs, PythonAvro,
                         ::testing::Values("null", "deflate", "snappy", "zstandard"));

class CAvro : public ::testing::TestWithParam<std::string> {};
TEST_P(CAvro, ReadsEveryRecord) {
  TempDir dir;
  ExpectWriterRows(WriteC(dir, GetParam()));
}
INSTANTIATE_TEST_SUITE_P(Codecs, CAvro, ::testing::Values("null", "deflate", "snappy"));

TEST(AvroResolution, WrongTypeNamesBothTypes) {
  TempDir dir;
  std::string file = WritePython(dir, "null");
  auto r = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"tx_id","type":"long"}]})"),
                    nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "tx_id");
  EXPECT_EQ(r.status.error().message, "data has string, declared long (in py-null.avro)");
}

TEST(AvroResolution, NarrowingIsRejectedAndUnknownSymbolToo) {
  TempDir dir;
  std::string file = WritePython(dir, "null");
  auto r = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"user_id","type":"int"}]})"),
                    nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().message, "data has long, declared int (in py-null.avro)");
  auto e = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"merchant","type":{"type":"enum","name":"merchant","symbols":["m0","m1"]}}]})"),
                    nullptr, Opts());
  EXPECT_EQ(e.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(e.status.error().path, "merchant");
}

TEST(AvroCorrupt, TruncationsAndBitFlipsNeverCrash) {
  TempDir dir;
  for (const std::string codec : {"null", "deflate", "snappy", "zstandard"}) {
    std::string file = WritePython(dir, codec);
    auto bytes = ReadFile(file);
    ASSERT_TRUE(bytes.ok());
    int errors = 0;
    for (size_t cut : {size_t(3), size_t(20), bytes->size() / 3, bytes->size() / 2,
                       bytes->size() - 17, bytes->size() - 1}) {
      std::string bad = dir.path() + "/cut.avro";
      ASSERT_TRUE(WriteFileAtomic(bad, bytes->substr(0, cut)).ok());
      auto r = Validate(Input(bad, kReader), nullptr, Opts());
      ASSERT_FALSE(r.status.ok()) << codec << " cut at " << cut;
      EXPECT_EQ(r.status.code(), codes::kDataFormatError) << r.status.ToString();
      EXPECT_NE(r.status.error().message.find("cut.avro: byte "), std::string::npos);
      errors++;
    }
    EXPECT_EQ(errors, 6);
    for (size_t at = 200; at < bytes->size(); at += bytes->size() / 13) {
      std::string flipped = *bytes;
      flipped[at] ^= 0x5a;
      std::string bad = dir.path() + "/flip.avro";
      ASSERT_TRUE(WriteFileAtomic(bad, flipped).ok());
      auto r = Validate(Input(bad, kReader), nullptr, Opts());  // any outcome but a crash
      if (!r.status.ok()) {
        EXPECT_TRUE(r.status.code() == codes::kDataFormatError ||
                    r.status.code() == codes::kDataSchemaMismatch ||
                    r.status.code() == codes::kDataConstraintViolation ||
                    r.status.code() == codes::kDataCompleteness ||
                    r.status.code() == codes::kDataUniqueness)
            << r.status.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace rsl::data
