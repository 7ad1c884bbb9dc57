// RSL's Parquet reader against files written by DuckDB (npm @duckdb/node-api, installed into
// tests/node_modules by scripts/ci.d/data.sh): every codec, data pages v1 and v2 (whose
// encodings differ: PLAIN and dictionaries in v1; DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
// BYTE_STREAM_SPLIT and RLE_DICTIONARY in v2), nulls, several row groups; and against files
// other writers produced (tests/data/parquet-testing), which DuckDB reads alike.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <tuple>

#include "base/codes.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "data/codec.h"
#include "data/quality.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::DuckRows;
using testing::Input;
using testing::TempDir;

constexpr int kRows = 5000;
constexpr int64_t kBase = 1718445600000000;

constexpr char kReader[] = R"({"type":"record","name":"transaction","fields":[
  {"name":"tx_id","type":"string"},
  {"name":"user_id","type":["null","double"]},
  {"name":"amount","type":["null","double"],"constraints":{"min":0}},
  {"name":"qty","type":["null","long"],"constraints":{"max":49}},
  {"name":"f","type":["null","double"]},
  {"name":"merchant","type":"string","constraints":{"enum":["m0","m1","m2","m3","m4"]}},
  {"name":"ts","type":"long","logicalType":"timestamp-micros"},
  {"name":"is_fraud","type":"boolean"}]})";

// Runs DuckDB; `sql` statements are passed as separate arguments.
int Duck(const std::string& sql) {
  std::string cmd =
      "node " RSL_SOURCE_DIR "/tests/data/write_parquet.mjs sql \"" + sql + "\" > /dev/null";
  return std::system(cmd.c_str());
}

std::string WriteDuck(const TempDir& dir, const std::string& codec, const std::string& version) {
  std::string out = dir.path() + "/" + codec + "-" + version + ".parquet";
  std::string sql =
      "COPY (SELECT 'tx-' || (CASE WHEN i = 10 THEN 3 ELSE i END) AS tx_id, (i % 1000)::BIGINT AS "
      "user_id, "
      "(CASE WHEN i % 1000 = 7 THEN NULL ELSE i * 0.5 END)::DOUBLE AS amount, (i % 50)::INTEGER AS "
      "qty, "
      "(i * 0.25)::FLOAT AS f, 'm' || (i % 5) AS merchant, "
      "TIMESTAMP '2024-06-15 10:00:00' + to_microseconds(i) AS ts, i % 97 = 0 AS is_fraud "
      "FROM range(" +
      std::to_string(kRows) + ") t(i)) TO '" + out + "' (FORMAT parquet, COMPRESSION " + codec +
      ", ROW_GROUP_SIZE 2048, PARQUET_VERSION " + version + ")";
  EXPECT_EQ(Duck(sql), 0) << sql;
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

class DuckParquet : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(DuckParquet, ReadsEveryValue) {
  TempDir dir;
  std::string file = WriteDuck(dir, std::get<0>(GetParam()), std::get<1>(GetParam()));
  auto in = Input(file, kReader);
  in.quality.completeness = 99.8;
  in.quality.unique_key = "tx_id";
  in.quality.uniqueness = 99.9;
  in.quality.freshness_ms = 3600000;
  auto r = Validate(in, nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.format, "parquet");
  EXPECT_EQ(r.rows, kRows);
  EXPECT_EQ(*r.distinct_keys, kRows - 1);
  EXPECT_EQ(r.fields[2].nulls, 5);
  EXPECT_EQ(r.fields[1].max.value(), 999);
  EXPECT_EQ(r.fields[2].max.value(), (kRows - 1) * 0.5);
  EXPECT_EQ(r.fields[3].min.value(), 0);
  EXPECT_EQ(r.fields[3].max.value(), 49);
  EXPECT_EQ(r.fields[4].max.value(), (kRows - 1) * 0.25);
  EXPECT_EQ(r.fields[5].values, kRows);
  EXPECT_EQ(r.fields[5].min_len.value(), 2);
  EXPECT_EQ(r.fields[7].nulls, 0);
  EXPECT_EQ(*r.newest_micros, kBase + kRows - 1);
}

INSTANTIATE_TEST_SUITE_P(CodecsAndPages, DuckParquet,
                         ::testing::Combine(::testing::Values("uncompressed", "snappy", "gzip",
                                                              "zstd", "lz4_raw", "brotli"),
                                            ::testing::Values("v1", "v2")));

TEST(ParquetChecks, ViolationsAndMismatch) {
  TempDir dir;
  std::string file = WriteDuck(dir, "snappy", "v1");
  auto in = Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"qty","type":["null","long"],"constraints":{"max":40}}]})");
  auto r = Validate(in, nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataConstraintViolation);
  // qty = i % 50 > 40 for 9 of every 50 rows; the first is row 42 (i = 41).
  EXPECT_EQ(r.status.error().message,
            "900 of 5000 values outside [-inf, 40] (first \"41\" at snappy-v1.parquet row 42)");
  auto m = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"merchant","type":"long"}]})"),
                    nullptr, Opts());
  EXPECT_EQ(m.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(m.status.error().message, "data has string, declared long (in snappy-v1.parquet)");
}

std::string OtherWriter(const std::string& name) {
  return RSL_SOURCE_DIR "/tests/data/parquet-testing/" + name + ".parquet";
}

// Files of the Apache Parquet project's conformance set: RSL counts the rows, nulls and
// extremes DuckDB reads from them.
class OtherWriters : public ::testing::TestWithParam<std::string> {};

TEST_P(OtherWriters, ReadAsDuckDbReadsThem) {
  std::string file = OtherWriter(GetParam());
  auto r = Profile(file, "", nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.format, "parquet");
  auto n = DuckRows("SELECT count(*)::INTEGER AS n FROM '" + file + "'");
  ASSERT_TRUE(n.is_array() && !n.empty()) << "DuckDB could not read " << file;
  EXPECT_EQ(r.rows, n[0]["n"].get<int64_t>());
  for (const FieldReport& f : r.fields) {
    SCOPED_TRACE(f.name);
    // Records, lists, maps and booleans have no minimum (nor do primitives without a value):
    // their nulls are compared.
    if (!f.min && !f.min_len) {
      auto d = DuckRows("SELECT (count(*) - count(\\\"" + f.name +
                        "\\\"))::INTEGER AS nulls FROM '" + file + "'");
      ASSERT_TRUE(d.is_array() && !d.empty());
      EXPECT_EQ(f.nulls, d[0]["nulls"].get<int64_t>());
      continue;
    }
    const bool text =
        f.type.find("string") != std::string::npos || f.type.find("bytes") != std::string::npos;
    std::string v = text ? "octet_length(" + f.name + "::BLOB)" : f.name;
    auto d = DuckRows("SELECT (count(*) - count(" + f.name + "))::INTEGER AS nulls, min(" + v +
                      ")::DOUBLE AS lo, max(" + v + ")::DOUBLE AS hi FROM '" + file + "'");
    ASSERT_TRUE(d.is_array() && !d.empty());
    EXPECT_EQ(f.nulls, d[0]["nulls"].get<int64_t>());
    auto lo = text ? (f.min_len ? std::optional<double>(*f.min_len) : std::nullopt) : f.min;
    auto hi = text ? (f.max_len ? std::optional<double>(*f.max_len) : std::nullopt) : f.max;
    if (d[0]["lo"].is_null()) {
      EXPECT_FALSE(lo.has_value());
    } else {
      ASSERT_TRUE(lo.has_value() && hi.has_value());
      EXPECT_DOUBLE_EQ(*lo, d[0]["lo"].get<double>());
      EXPECT_DOUBLE_EQ(*hi, d[0]["hi"].get<double>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ParquetTesting, OtherWriters,
    ::testing::Values("concatenated_gzip_members", "datapage_v2_empty_datapage.snappy",
                      "page_v2_empty_compressed", "lz4_raw_compressed",
                      // nested columns: lists, maps, structs, legacy lists
                      "datapage_v2.snappy", "incorrect_map_schema", "list_columns",
                      "nested_lists.snappy", "nested_maps.snappy", "nested_structs.rust",
                      "nonnullable.impala", "null_list", "nullable.impala", "nulls.snappy",
                      "old_list_structure", "repeated_no_annotation", "repeated_primitive_no_list"),
    [](const auto& info) {
      std::string name = info.param;
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

// Parquet's deprecated LZ4 codec (5), which DuckDB does not read: Hadoop's framing and raw
// blocks both hold the same values as the LZ4_RAW file (parquet-testing's data/README.md).
TEST(ParquetOtherWriters, DeprecatedLz4HoldsTheLz4RawValues) {
  auto want = Profile(OtherWriter("lz4_raw_compressed"), "", nullptr, Opts());
  ASSERT_TRUE(want.status.ok()) << want.ToText();
  for (const char* name : {"hadoop_lz4_compressed", "non_hadoop_lz4_compressed"}) {
    SCOPED_TRACE(name);
    auto r = Profile(OtherWriter(name), "", nullptr, Opts());
    ASSERT_TRUE(r.status.ok()) << r.ToText();
    EXPECT_EQ(r.rows, want.rows);
    ASSERT_EQ(r.fields.size(), want.fields.size());
    for (size_t i = 0; i < r.fields.size(); i++) {
      EXPECT_EQ(r.fields[i].nulls, want.fields[i].nulls);
      EXPECT_EQ(r.fields[i].min, want.fields[i].min);
      EXPECT_EQ(r.fields[i].max, want.fields[i].max);
      EXPECT_EQ(r.fields[i].max_len, want.fields[i].max_len);
    }
  }
}

// Column chunks with key-value metadata, in a row group without rows whose data page offsets
// are 0: the file is read (its schema), and it holds no records.
TEST(ParquetOtherWriters, ColumnChunkKeyValueMetadata) {
  std::string file = OtherWriter("column_chunk_key_value_metadata");
  auto schema = InferSchema(file, "", nullptr);
  ASSERT_TRUE(schema.ok()) << schema.error().ToString();
  ASSERT_EQ(schema->record().fields.size(), 2u);
  EXPECT_EQ(schema->record().fields[0].name, "column1");
  auto r = Validate(Input(file, "column1:int32"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSourceNotFound) << r.ToText();
  EXPECT_NE(r.status.error().message.find("no records in 1 file"), std::string::npos);
}

// GZIP pages (and blocks) may hold several gzip members one after another: Python writes them.
TEST(ParquetCodecs, GzipMembersOneAfterAnother) {
  TempDir dir;
  dir.Write("gen.py",
            "import gzip\n"
            "open('m.gz', 'wb').write(gzip.compress(b'first member|' * 100) + "
            "gzip.compress(b'second'))\n");
  ASSERT_EQ(std::system(("cd " + dir.path() + " && /usr/bin/python3 gen.py").c_str()), 0);
  auto bytes = ReadFile(dir.path() + "/m.gz");
  ASSERT_TRUE(bytes.ok());
  std::string want;
  for (int i = 0; i < 100; i++) want += "first member|";
  want += "second";
  for (int64_t expected : {static_cast<int64_t>(want.size()), int64_t{-1}}) {
    std::string out;
    EXPECT_EQ(Decompress(Codec::kGzip, *bytes, expected, &out), "");
    EXPECT_EQ(out, want);
  }
}

TEST(ParquetCorrupt, TruncationsAndBitFlipsNeverCrash) {
  TempDir dir;
  for (const std::string version : {"v1", "v2"}) {
    std::string file = WriteDuck(dir, "snappy", version);
    auto bytes = ReadFile(file);
    ASSERT_TRUE(bytes.ok());
    for (size_t cut : {size_t(3), size_t(100), bytes->size() / 2, bytes->size() - 5}) {
      std::string bad = dir.path() + "/cut.parquet";
      ASSERT_TRUE(WriteFileAtomic(bad, bytes->substr(0, cut)).ok());
      auto r = Validate(Input(bad, kReader), nullptr, Opts());
      EXPECT_EQ(r.status.code(), codes::kDataFormatError) << r.status.ToString();
      EXPECT_NE(r.status.error().message.find("cut.parquet: byte "), std::string::npos);
    }
    for (size_t at = 4; at < bytes->size(); at += bytes->size() / 29) {
      std::string flipped = *bytes;
      flipped[at] ^= 0x5a;
      std::string bad = dir.path() + "/flip.parquet";
      ASSERT_TRUE(WriteFileAtomic(bad, flipped).ok());
      auto r = Validate(Input(bad, kReader), nullptr, Opts());  // any outcome but a crash
      (void)r;
    }
  }
}

// Nested columns as DuckDB writes them (3-level LIST, STRUCT, MAP, a list of structs and a
// list of lists), 5000 rows in row groups of 2048: nulls at every level and empty lists.
//   items: null when i%10 = 3, [] when 4, else [i, i+1 (null when i%10 = 5), i+2]
//   a:     null when i%10 = 6, else {b: 2i (null when i%10 = 7), name: 'n' || i}
//   m:     null when i%10 = 8, else {'k' || i%3: i}
//   ls:    [{x: i}, {x: null}]          ll: [[i], [i, i]]
std::string WriteNested(const TempDir& dir, const std::string& version) {
  std::string out = dir.path() + "/nested-" + version + ".parquet";
  std::string sql =
      "COPY (SELECT i AS id, "
      "CASE WHEN i % 10 = 3 THEN NULL WHEN i % 10 = 4 THEN []::BIGINT[] ELSE [i, CASE WHEN i % "
      "10 = 5 THEN NULL ELSE i + 1 END, i + 2] END AS items, "
      "CASE WHEN i % 10 = 6 THEN NULL ELSE {'b': CASE WHEN i % 10 = 7 THEN NULL ELSE 2 * i END, "
      "'name': 'n' || i} END AS a, "
      "CASE WHEN i % 10 = 8 THEN NULL ELSE MAP {'k' || (i % 3): i::DOUBLE} END AS m, "
      "[{'x': i}, {'x': NULL::BIGINT}] AS ls, [[i], [i, i]] AS ll "
      "FROM range(5000) t(i)) TO '" +
      out + "' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 2048, PARQUET_VERSION " +
      version + ")";
  EXPECT_EQ(Duck(sql), 0) << sql;
  return out;
}

// The contract over nested paths: `items` constrains its elements (items[]), `a.b` is a
// struct field with its own constraint, `m` constrains its values (m{}).
std::string NestedReader(const std::string& b_max, const std::string& items_max) {
  return R"({"type":"record","name":"t","fields":[
    {"name":"id","type":"long"},
    {"name":"items","type":["null",{"type":"array","items":["null","long"]}],
     "constraints":{"min":0,"max":)" +
         items_max + R"(}},
    {"name":"a","type":["null",{"type":"record","name":"a","fields":[
      {"name":"b","type":["null","long"],"constraints":{"max":)" +
         b_max + R"(}},
      {"name":"name","type":["null","string"]}]}]},
    {"name":"m","type":["null",{"type":"map","values":["null","double"]}],
     "constraints":{"min":0}},
    {"name":"ls","type":{"type":"array","items":{"type":"record","name":"l","fields":[
      {"name":"x","type":["null","long"],"constraints":{"min":0}}]}}},
    {"name":"ll","type":{"type":"array","items":{"type":"array","items":"long"}}}]})";
}

const FieldReport* FieldNamed(const ValidationReport& r, const std::string& name) {
  for (const auto& f : r.fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

class NestedDuck : public ::testing::TestWithParam<std::string> {};

TEST_P(NestedDuck, ReadsEveryLevel) {
  TempDir dir;
  std::string file = WriteNested(dir, GetParam());
  auto in = Input(file, NestedReader("9998", "5001"));
  in.quality.unique_key = "a.b";
  in.quality.uniqueness = 80;
  in.quality.completeness = 50;
  auto r = Validate(in, nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.rows, 5000);
  auto at = [&](const std::string& n) {
    const FieldReport* f = FieldNamed(r, n);
    EXPECT_NE(f, nullptr) << n;
    static const FieldReport kNone;
    return f ? *f : kNone;
  };
  // Top level: a null list, struct or map is null; an empty list is not.
  EXPECT_EQ(at("items").nulls, 500);
  EXPECT_EQ(at("items").values, 4500);
  EXPECT_EQ(at("a").nulls, 500);
  EXPECT_EQ(at("m").nulls, 500);
  EXPECT_EQ(at("ls").nulls, 0);
  EXPECT_EQ(at("ll").values, 5000);
  // items[]: three elements in 4000 lists, the second null in 500 of them.
  EXPECT_EQ(at("items[]").values, 11500);
  EXPECT_EQ(at("items[]").nulls, 500);
  EXPECT_EQ(at("items[]").min_int.value_or(-1), 0);
  EXPECT_EQ(at("items[]").max_int.value_or(-1), 5001);
  // a.b: null where a is null (500) and where b is (500).
  EXPECT_EQ(at("a.b").values, 4000);
  EXPECT_EQ(at("a.b").nulls, 1000);
  EXPECT_EQ(at("a.b").max_int.value_or(-1), 9998);
  EXPECT_EQ(at("m{}").values, 4500);
  EXPECT_EQ(at("m{}").nulls, 0);
  EXPECT_EQ(at("m{}").max.value_or(-1), 4999);
  EXPECT_EQ(at("ls[].x").values, 5000);
  EXPECT_EQ(at("ls[].x").nulls, 5000);
  // uniqueKey a.b: 4000 distinct values; the nulls are not distinct.
  EXPECT_EQ(r.distinct_keys.value_or(-1), 4000);
}

TEST_P(NestedDuck, RulesOnNestedPaths) {
  TempDir dir;
  std::string file = WriteNested(dir, GetParam());
  const std::string name = "nested-" + GetParam() + ".parquet";
  // b = 2i > 9000 for i in 4501..4999 where a and b are not null: 399 values.
  auto r = Validate(Input(file, NestedReader("9000", "5001")), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataConstraintViolation);
  EXPECT_EQ(r.status.error().path, "a.b");
  EXPECT_EQ(r.status.error().message,
            "399 of 4000 values outside [-inf, 9000] (first \"9002\" at " + name + " row 4502)");
  r = Validate(Input(file, NestedReader("9998", "5000")), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataConstraintViolation);
  EXPECT_EQ(r.status.error().path, "items[]");
  EXPECT_EQ(r.status.error().message,
            "1 of 11500 values outside [0, 5000] (first \"5001\" at " + name + " row 5000)");
  // Completeness counts a.b per row: 80% non-null.
  auto in = Input(file, NestedReader("9998", "5001"));
  in.quality.completeness = 85;
  r = Validate(in, nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataCompleteness);
  EXPECT_EQ(r.status.error().path, "a.b");
  EXPECT_EQ(r.status.error().message, "non-null 80.00% < 85.00% (1000 of 5000 null)");
  // A key path that does not exist: did you mean.
  in = Input(file, NestedReader("9998", "5001"));
  in.quality.unique_key = "a.bb";
  in.quality.uniqueness = 50;
  r = Validate(in, nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "spec.data.input.quality.uniqueKey");
  EXPECT_NE(r.status.ToString().find("did you mean \"a.b\"?"), std::string::npos)
      << r.status.ToString();
  // A key inside a list is refused.
  in.quality.unique_key = "items[]";
  r = Validate(in, nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().message, "uniqueKey \"items[]\" is inside a list or map");
}

TEST_P(NestedDuck, MismatchNamesTheNestedPath) {
  TempDir dir;
  std::string file = WriteNested(dir, GetParam());
  auto r = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"a","type":["null",{"type":"record","name":"a","fields":[
        {"name":"b","type":["null","string"]}]}]}]})"),
                    nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "a.b");
  EXPECT_EQ(r.status.error().message,
            "data has long, declared union[null,string] (in nested-" + GetParam() + ".parquet)");
  r = Validate(Input(file, R"({"type":"record","name":"t","fields":[
      {"name":"items","type":["null",{"type":"array","items":"string"}]}]})"),
               nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "items[]");
}

INSTANTIATE_TEST_SUITE_P(Pages, NestedDuck, ::testing::Values("v1", "v2"));

// A corrupt nested file: truncations and bit flips are DATA_FORMAT_ERROR or read, never a
// crash or a hang (every level decoding is bounded).
TEST(ParquetCorrupt, NestedTruncationsAndBitFlipsNeverCrash) {
  TempDir dir;
  for (const std::string version : {"v1", "v2"}) {
    std::string file = WriteNested(dir, version);
    auto bytes = ReadFile(file);
    ASSERT_TRUE(bytes.ok());
    for (size_t cut : {size_t(100), bytes->size() / 3, bytes->size() / 2, bytes->size() - 5}) {
      std::string bad = dir.path() + "/cut.parquet";
      ASSERT_TRUE(WriteFileAtomic(bad, bytes->substr(0, cut)).ok());
      auto r = Validate(Input(bad, NestedReader("9998", "5001")), nullptr, Opts());
      EXPECT_EQ(r.status.code(), codes::kDataFormatError) << r.status.ToString();
    }
    for (size_t at = 4; at < bytes->size(); at += bytes->size() / 41) {
      std::string flipped = *bytes;
      flipped[at] ^= 0x5a;
      std::string bad = dir.path() + "/flip.parquet";
      ASSERT_TRUE(WriteFileAtomic(bad, flipped).ok());
      auto r = Validate(Input(bad, NestedReader("9998", "5001")), nullptr, Opts());
      (void)r;
    }
  }
}

// Nested paths in the conformance files, value by value as DuckDB reads them: `sql` selects
// the path's values as `x` (`{f}` is the file), `schema` declares the path with a
// constraint so the contract addresses it.
struct PathCase {
  std::string file, path, schema, sql;
};

class OtherWritersPaths : public ::testing::TestWithParam<PathCase> {};

TEST_P(OtherWritersPaths, NestedPathAsDuckDbReadsIt) {
  const PathCase& c = GetParam();
  std::string file = OtherWriter(c.file);
  auto r = Validate(Input(file, R"({"type":"record","name":"t","fields":[)" + c.schema + "]}"),
                    nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  const FieldReport* f = FieldNamed(r, c.path);
  ASSERT_NE(f, nullptr) << r.ToText();
  std::string sql = c.sql;
  sql.replace(sql.find("{f}"), 3, "'" + file + "'");
  auto d = DuckRows(
      "SELECT count(x)::INTEGER AS v, (count(*) - count(x))::INTEGER AS n, "
      "min(x)::DOUBLE AS lo, max(x)::DOUBLE AS hi FROM (" +
      sql + ")");
  ASSERT_TRUE(d.is_array() && !d.empty()) << sql;
  EXPECT_EQ(f->values, d[0]["v"].get<int64_t>());
  EXPECT_EQ(f->nulls, d[0]["n"].get<int64_t>());
  if (!d[0]["lo"].is_null()) {
    ASSERT_TRUE(f->min && f->max);
    EXPECT_DOUBLE_EQ(*f->min, d[0]["lo"].get<double>());
    EXPECT_DOUBLE_EQ(*f->max, d[0]["hi"].get<double>());
  }
}

constexpr char kAnyLong[] = R"("constraints":{"min":-9000000000000000000})";

INSTANTIATE_TEST_SUITE_P(
    ParquetTesting, OtherWritersPaths,
    ::testing::Values(
        // 3-level LIST with null lists and null elements
        PathCase{
            "list_columns", "int64_list[]",
            R"({"name":"int64_list","type":["null",{"type":"array","items":["null","long"]}],)" +
                std::string(kAnyLong) + "}",
            "SELECT unnest(int64_list) AS x FROM {f}"},
        // a bare repeated primitive (no LIST annotation)
        PathCase{"repeated_primitive_no_list", "Int32_list[]",
                 R"({"name":"Int32_list","type":{"type":"array","items":"long"},)" +
                     std::string(kAnyLong) + "}",
                 "SELECT unnest(Int32_list) AS x FROM {f}"},
        // a legacy 2-level list of lists (`repeated group array`)
        PathCase{"old_list_structure", "a[][]",
                 R"({"name":"a","type":{"type":"array","items":{"type":"array","items":"long"}},)" +
                     std::string(kAnyLong) + "}",
                 "SELECT unnest(flatten(a)) AS x FROM {f}"},
        // a repeated group without annotation, inside an optional struct
        PathCase{"repeated_no_annotation", "phoneNumbers.phone[].number",
                 R"({"name":"phoneNumbers","type":["null",{"type":"record","name":"p","fields":[
                   {"name":"phone","type":{"type":"array","items":{"type":"record","name":"q",
                    "fields":[{"name":"number","type":"long",)" +
                     std::string(kAnyLong) + "}]}}}]}]}",
                 "SELECT unnest(phoneNumbers.phone).number AS x FROM {f}"},
        // MAP values
        PathCase{"nullable.impala", "int_map{}",
                 R"({"name":"int_map","type":["null",{"type":"map","values":["null","long"]}],)" +
                     std::string(kAnyLong) + "}",
                 "SELECT unnest(map_values(int_map)) AS x FROM {f}"},
        // a field of a null struct is null
        PathCase{"nulls.snappy", "b_struct.b_c_int",
                 R"({"name":"b_struct","type":["null",{"type":"record","name":"b","fields":[
                   {"name":"b_c_int","type":["null","long"],)" +
                     std::string(kAnyLong) + "}]}]}",
                 "SELECT b_struct.b_c_int AS x FROM {f}"}),
    [](const auto& info) {
      std::string name = info.param.file + "_" + info.param.path;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace rsl::data
