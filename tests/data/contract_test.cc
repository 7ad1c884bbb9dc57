// The data contract refuses what it must, on files written by independent writers (Python's
// csv and json modules, python3-avro, DuckDB from npm): timestamps in the file's own unit,
// nested and ranged values, fields a typo lost, decimals and unsigned columns read as their
// values, listings that stay inside the data set, errors that name the file and the field, and
// one rule for empty inputs (docs/data.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "base/codes.h"
#include "base/fake_env.h"
#include "data/quality.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::Input;
using testing::TempDir;

// 2024-06-15T10:00:00Z in microseconds.
constexpr int64_t kBase = 1718445600000000;

// Runs Python (stdlib csv/json, python3-avro) in `dir`.
void Py(const TempDir& dir, const std::string& code) {
  dir.Write("gen.py", "import avro.datafile, avro.io, avro.schema, csv, datetime, json\n" + code);
  std::string cmd = "cd " + dir.path() + " && /usr/bin/python3 gen.py";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << code;
}

// Runs DuckDB statements.
void Duck(const std::string& sql) {
  std::string cmd =
      "node " RSL_SOURCE_DIR "/tests/data/write_parquet.mjs sql \"" + sql + "\" > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << sql;
}

// Python that writes an Avro file `name` with `schema` (JSON) and `records` (Python literal).
std::string AvroPy(const std::string& name, const std::string& schema, const std::string& records) {
  return "s = avro.schema.parse(json.dumps(" + schema + "))\n" +
         "w = avro.datafile.DataFileWriter(open('" + name +
         "', 'wb'), avro.io.DatumWriter(), s)\n" + "for r in " + records +
         ":\n    w.append(r)\nw.close()\n";
}

Env* ClockAt(int64_t now_ms) {
  static FakeClockEnv env;
  env.SetNowMs(now_ms);
  return &env;
}

ValidateOptions Opts(int64_t now_ms = kBase / 1000 + 60000) {
  ValidateOptions o;
  o.threads = 2;
  o.env = ClockAt(now_ms);
  return o;
}

ValidationReport Check(const std::string& uri, const std::string& schema,
                       std::optional<int64_t> freshness_ms = std::nullopt) {
  auto in = Input(uri, schema);
  in.quality.freshness_ms = freshness_ms;
  return Validate(in, nullptr, Opts());
}

// ---- quality gates ------------------------------------------------------------------------

TEST(Contract, TimestampUnitTheFileContradictsIsAMismatch) {
  TempDir dir;
  Duck("COPY (SELECT TIMESTAMP_NS '2024-06-15 10:00:00' AS ts) TO '" + dir.path() +
       "/ns.parquet' (FORMAT parquet)");
  auto r = Check(dir.path() + "/ns.parquet", "ts:timestamp", 3600000);
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch) << r.ToText();
  EXPECT_EQ(r.status.error().path, "ts");
  EXPECT_EQ(r.status.error().message,
            "data has long(timestamp-nanos), declared long(timestamp-micros) (in ns.parquet)");
  Py(dir, AvroPy("us.avro",
                 "{'type': 'record', 'name': 'r', 'fields': [{'name': 'ts', 'type': {'type': "
                 "'long', 'logicalType': 'timestamp-micros'}}]}",
                 "[{'ts': datetime.datetime(2024, 6, 15, 10, tzinfo=datetime.timezone.utc)}]"));
  auto a = Check(dir.path() + "/us.avro",
                 R"({"type":"record","name":"r","fields":[
                     {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]})",
                 3600000);
  EXPECT_EQ(a.status.code(), codes::kDataSchemaMismatch) << a.ToText();
  // In the file's own unit it is fresh.
  auto ok = Check(dir.path() + "/us.avro", "ts:timestamp", 3600000);
  EXPECT_TRUE(ok.status.ok()) << ok.ToText();
}

TEST(Contract, FutureRecordsBeyondClockSkewFailFreshness) {
  TempDir dir;
  Py(dir,
     "csv.writer(open('f.csv', 'w')).writerows([['id', 'ts'], [1, '2024-06-15T10:01:00Z'], "
     "[2, '2030-01-01T00:00:00Z']])\n");
  auto r = Check(dir.path() + "/f.csv", "id:int64,ts:timestamp", 3600000);
  EXPECT_EQ(r.status.code(), codes::kDataFreshness) << r.ToText();
  EXPECT_EQ(r.status.error().message.rfind("newest record 2030-01-01T00:00:00Z is ", 0), 0u)
      << r.status.error().message;
  EXPECT_NE(r.status.error().message.find(" in the future (clock skew allowance 5m)"),
            std::string::npos)
      << r.status.error().message;
  // Within the allowance (the record is one minute ahead of "now"): fresh.
  Py(dir,
     "csv.writer(open('g.csv', 'w')).writerows([['id', 'ts'], [1, '2024-06-15T10:02:00Z']])\n");
  auto g = Check(dir.path() + "/g.csv", "id:int64,ts:timestamp", 3600000);
  EXPECT_TRUE(g.status.ok()) << g.ToText();
}

TEST(Contract, AllNullTimestampFailsFreshnessInsteadOfUsingMtime) {
  TempDir dir;
  Py(dir, "csv.writer(open('n.csv', 'w')).writerows([['id', 'ts'], [1, ''], [2, '']])\n");
  auto r = Check(dir.path() + "/n.csv", "id:int64,ts:timestamp", 3600000);
  EXPECT_EQ(r.status.code(), codes::kDataFreshness) << r.ToText();
  EXPECT_EQ(r.status.error().path, "ts");
  EXPECT_EQ(r.status.error().message,
            "no non-null value in 2 records: the age of the data is unknown");
}

TEST(Contract, ArraysAreTypeCheckedInCsvAndJsonl) {
  TempDir dir;
  Py(dir,
     "csv.writer(open('ok.csv', 'w')).writerows([['v'], ['[1.5, 2]'], ['[0, -1e3]']])\n"
     "csv.writer(open('word.csv', 'w')).writerows([['v'], ['[1, 2]'], ['hello']])\n"
     "csv.writer(open('three.csv', 'w')).writerows([['v'], ['[1, 2, 3]']])\n"
     "for name, v in [('word', 'hello'), ('obj', {'k': 1}), ('strs', ['a', 'b'])]:\n"
     "    open(name + '.jsonl', 'w').write(json.dumps({'v': [1, 2]}) + '\\n' + json.dumps({'v': "
     "v}) + '\\n')\n");
  EXPECT_TRUE(Check(dir.path() + "/ok.csv", "v:float32[2]").status.ok());
  auto word = Check(dir.path() + "/word.csv", "v:float32[2]");
  EXPECT_EQ(word.status.code(), codes::kDataSchemaMismatch) << word.ToText();
  EXPECT_EQ(word.status.error().message.rfind("\"hello\" at word.csv row 2 is not an array", 0), 0u)
      << word.status.error().message;
  auto three = Check(dir.path() + "/three.csv", "v:float32[2]");
  EXPECT_EQ(three.status.code(), codes::kDataConstraintViolation) << three.ToText();
  for (const char* name : {"word", "obj", "strs"}) {
    auto r = Check(dir.path() + "/" + name + ".jsonl", "v:float32[2]");
    EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch) << name << r.ToText();
    EXPECT_NE(r.status.error().message.find(".jsonl row 2 is not an array"), std::string::npos)
        << r.status.error().message;
  }
}

TEST(Contract, IntegersOutOfTheirRange) {
  TempDir dir;
  Py(dir,
     "csv.writer(open('i.csv', 'w')).writerows([['a'], [2147483647], [2147483648]])\n"
     "open('i.jsonl', 'w').write(json.dumps({'a': 4294967297}) + '\\n')\n"
     "csv.writer(open('l.csv', 'w')).writerows([['a'], [9223372036854775808]])\n"
     "open('l.jsonl', 'w').write(json.dumps({'a': 9223372036854775808}) + '\\n')\n");
  auto i = Check(dir.path() + "/i.csv", "a:int32");
  EXPECT_EQ(i.status.error().message,
            "\"2147483648\" at i.csv row 2 is not within the int range [-2147483648, "
            "2147483647] (declared int)");
  EXPECT_EQ(Check(dir.path() + "/i.jsonl", "a:int32").status.code(), codes::kDataSchemaMismatch);
  EXPECT_TRUE(Check(dir.path() + "/i.jsonl", "a:int64").status.ok());
  for (const char* name : {"l.csv", "l.jsonl"}) {
    auto l = Check(dir.path() + "/" + name, "a:int64");
    EXPECT_NE(l.status.error().message.find("is not within the long range"), std::string::npos)
        << name << l.ToText();
  }
}

TEST(Contract, JsonlFieldMissingFromEveryRecordFails) {
  TempDir dir;
  Py(dir,
     "with open('t.jsonl', 'w') as f:\n"
     "    for i in range(3): f.write(json.dumps({'id': i, 'name': 'n'}) + '\\n')\n");
  auto r = Check(dir.path() + "/t.jsonl", "id:int64,nmae:string");
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch) << r.ToText();
  EXPECT_EQ(r.status.error().path, "nmae");
  EXPECT_EQ(r.status.error().ToString(),
            "DATA_SCHEMA_MISMATCH nmae: declared field is missing from every record and has no "
            "default (in t.jsonl) (data fields: id, name)");
  // With a default it may be absent.
  auto d = Check(dir.path() + "/t.jsonl", R"({"type":"record","name":"r","fields":[
      {"name":"id","type":"long"},{"name":"extra","type":["null","string"],"default":null}]})");
  EXPECT_TRUE(d.status.ok()) << d.ToText();
}

TEST(Contract, LongBoundsAreExactAndDatesReal) {
  TempDir dir;
  Py(dir,
     "csv.writer(open('b.csv', 'w')).writerows([['v'], [9007199254740992], "
     "[9007199254740993]])\n"
     "csv.writer(open('d.csv', 'w')).writerows([['ts'], ['2024-02-29'], ['2024-02-31']])\n");
  auto b = Check(dir.path() + "/b.csv", R"({"type":"record","name":"r","fields":[
      {"name":"v","type":"long","constraints":{"max":9007199254740992}}]})");
  EXPECT_EQ(b.status.code(), codes::kDataConstraintViolation) << b.ToText();
  EXPECT_EQ(b.status.error().message,
            "1 of 2 values outside [-inf, 9007199254740992] (first \"9007199254740993\" at b.csv "
            "row 2)");
  auto d = Check(dir.path() + "/d.csv", "ts:timestamp");
  EXPECT_EQ(d.status.error().message,
            "\"2024-02-31\" at d.csv row 2 is not a timestamp (declared long(timestamp-micros))");
}

// ---- values read wrongly ------------------------------------------------------------------

TEST(Contract, ParquetDecimalsAndUnsignedAreReadAsTheirValues) {
  TempDir dir;
  const std::string file = dir.path() + "/n.parquet";
  Duck(
      "COPY (SELECT 10.01::DECIMAL(10,2) AS d64, 1.5::DECIMAL(4,1) AS d32, "
      "-12345.6789::DECIMAL(38,4) AS d128, 4294967295::UINTEGER AS u32, "
      "9007199254740993::UBIGINT AS u64, 18446744073709551615::UBIGINT AS big) TO '" +
      file + "' (FORMAT parquet)");
  auto r = Check(file, "d64:float64,d32:float64,d128:float64,u32:int64,u64:int64");
  ASSERT_TRUE(r.status.ok()) << r.ToText();
  EXPECT_DOUBLE_EQ(*r.fields[0].max, 10.01);
  EXPECT_DOUBLE_EQ(*r.fields[1].max, 1.5);
  EXPECT_DOUBLE_EQ(*r.fields[2].max, -12345.6789);
  EXPECT_EQ(*r.fields[3].max_int, 4294967295);
  EXPECT_EQ(*r.fields[4].max_int, 9007199254740993);  // exact, not via a double
  auto big = Check(file, "big:int64");
  EXPECT_EQ(big.status.code(), codes::kDataSchemaMismatch) << big.ToText();
  EXPECT_EQ(big.status.error().message.rfind("\"18446744073709551615\" at n.parquet row 1 is not "
                                             "within the long range",
                                             0),
            0u)
      << big.status.error().message;
  auto p = Profile(file, "", nullptr, Opts());
  EXPECT_NE(p.status.ToString().find("18446744073709551615"), std::string::npos);
}

TEST(Contract, AvroDecimalsAreDeclaredAndReadWithTheirScale) {
  TempDir dir;
  Py(dir, "import decimal\nD = decimal.Decimal\n" +
              AvroPy("dec.avro",
                     R"({"type": "record", "name": "r", "fields": [
        {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 8, "logicalType": "decimal",
                               "precision": 12, "scale": 3}},
        {"name": "n", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10,
                                        "scale": 2}]}]})",
                     "[{'b': D('10.01'), 'f': D('-1.500'), 'n': None}, "
                     "{'b': D('-99999999.99'), 'f': D('123456789.123'), 'n': D('0.05')}]"));
  const std::string file = dir.path() + "/dec.avro";
  auto r = Check(file, "b:decimal(10,2),f:decimal(12,3),n:decimal(10,2)");
  ASSERT_TRUE(r.status.ok()) << r.ToText();
  EXPECT_DOUBLE_EQ(*r.fields[0].min, -99999999.99);
  EXPECT_DOUBLE_EQ(*r.fields[0].max, 10.01);
  EXPECT_DOUBLE_EQ(*r.fields[1].min, -1.5);
  EXPECT_DOUBLE_EQ(*r.fields[1].max, 123456789.123);
  EXPECT_DOUBLE_EQ(*r.fields[2].max, 0.05);
  EXPECT_EQ(r.fields[2].nulls, 1);
  // A wider precision reads them too, and so does a double.
  EXPECT_TRUE(Check(file, "b:decimal(20,2),f:float64").status.ok());
  // Another scale is a mismatch that says why.
  auto scale = Check(file, "b:decimal(10,3)");
  EXPECT_EQ(scale.status.code(), codes::kDataSchemaMismatch) << scale.ToText();
  EXPECT_EQ(scale.status.error().path, "b");
  EXPECT_EQ(scale.status.error().message,
            "data has decimal(10,2), declared decimal(10,3): a declared decimal reads decimals of "
            "the same scale and at most its precision (in dec.avro)");
  EXPECT_EQ(Check(file, "f:decimal(11,3)").status.code(), codes::kDataSchemaMismatch);
  // Constraints apply to the value, with its scale.
  auto c = Check(file, R"({"type": "record", "name": "r", "fields": [
      {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
       "constraints": {"min": -100, "max": 10.01}}]})");
  EXPECT_EQ(c.status.code(), codes::kDataConstraintViolation) << c.ToText();
  EXPECT_NE(c.status.error().message.find("-99999999.99"), std::string::npos)
      << c.status.error().ToString();
  // Plain bytes are not a decimal.
  Py(dir, AvroPy("raw.avro",
                 R"({"type": "record", "name": "r", "fields": [{"name": "b", "type": "bytes"}]})",
                 "[{'b': b'ab'}]"));
  auto raw = Check(dir.path() + "/raw.avro", "b:decimal(10,2)");
  EXPECT_EQ(raw.status.code(), codes::kDataSchemaMismatch) << raw.ToText();
  EXPECT_EQ(raw.status.error().message, "data has bytes, declared decimal(10,2) (in raw.avro)");
}

TEST(Contract, ParquetDecimalsMayBeDeclaredAsDecimals) {
  TempDir dir;
  const std::string file = dir.path() + "/d.parquet";
  Duck("COPY (SELECT 10.01::DECIMAL(10,2) AS d64, -12345.6789::DECIMAL(38,4) AS d128) TO '" + file +
       "' (FORMAT parquet)");
  auto r = Check(file, "d64:decimal(10,2),d128:decimal(38,4)");
  ASSERT_TRUE(r.status.ok()) << r.ToText();
  EXPECT_DOUBLE_EQ(*r.fields[0].max, 10.01);
  EXPECT_DOUBLE_EQ(*r.fields[1].max, -12345.6789);
  auto narrow = Check(file, "d64:decimal(9,2)");
  EXPECT_EQ(narrow.status.code(), codes::kDataSchemaMismatch) << narrow.ToText();
  EXPECT_EQ(narrow.status.error().message.rfind("data has decimal(10,2), declared decimal(9,2)", 0),
            0u)
      << narrow.status.error().message;
}

// ---- listings -----------------------------------------------------------------------------

TEST(Contract, DirectorySymlinksAndFifos) {
  TempDir dir;
  Py(dir,
     "import os\nos.makedirs('d/day=1')\n"
     "csv.writer(open('d/day=1/a.csv', 'w')).writerows([['id'], [1], [2], [3], [4], [5]])\n");
  ASSERT_EQ(::symlink(".", (dir.path() + "/d/day=1/loop").c_str()), 0);
  ASSERT_EQ(::symlink("day=1", (dir.path() + "/d/same").c_str()), 0);
  auto r = Check(dir.path() + "/d", "id:int64");
  ASSERT_TRUE(r.status.ok()) << r.ToText();
  EXPECT_EQ(r.rows, 5);  // each directory once, whatever links lead to it
  EXPECT_EQ(r.files, 1);
  Py(dir,
     "import os\nos.makedirs('out')\n"
     "csv.writer(open('out/b.csv', 'w')).writerows([['id'], [9]])\n");
  ASSERT_EQ(::symlink((dir.path() + "/out").c_str(), (dir.path() + "/d/ext").c_str()), 0);
  auto o = Check(dir.path() + "/d", "id:int64");
  EXPECT_EQ(o.status.code(), codes::kDataFormatError) << o.ToText();
  EXPECT_NE(o.status.error().message.find("ext is a symbolic link to " + dir.path() + "/out"),
            std::string::npos)
      << o.status.error().message;
  ASSERT_EQ(::unlink((dir.path() + "/d/ext").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir.path() + "/d/day=1/pipe").c_str(), 0600), 0);
  auto f = Check(dir.path() + "/d", "id:int64");  // must not hang
  EXPECT_EQ(f.status.code(), codes::kDataFormatError) << f.ToText();
  EXPECT_EQ(f.status.error().message, "day=1/pipe is a FIFO, not a data file");
  auto alone = Check(dir.path() + "/d/day=1/pipe", "id:int64");
  EXPECT_FALSE(alone.status.ok());
}

// ---- errors that say where ----------------------------------------------------------------

TEST(Contract, ErrorsNameThePartitionPathAndTheNestedDifference) {
  TempDir dir;
  Py(dir,
     "import os\n"
     "for day, v in [(1, 'x'), (2, 'y')]:\n"
     "    os.makedirs('p/day=%d' % day)\n"
     "    csv.writer(open('p/day=%d/part-0.csv' % day, 'w')).writerows([['n'], [1], [v]])\n" +
         AvroPy("e.avro",
                "{'type': 'record', 'name': 'r', 'fields': [{'name': 'c', 'type': {'type': "
                "'enum', 'name': 'Color', 'symbols': ['RED', 'BLUE']}}, {'name': 'nested', "
                "'type': {'type': 'record', 'name': 'N', 'fields': [{'name': 'x', 'type': "
                "'string'}]}}]}",
                "[{'c': 'BLUE', 'nested': {'x': 'a'}}]"));
  auto p = Check(dir.path() + "/p", "n:int64");
  EXPECT_EQ(p.status.error().message,
            "\"x\" at day=1/part-0.csv row 2 is not an integer (declared long)");
  auto e = Check(dir.path() + "/e.avro", R"({"type":"record","name":"r","fields":[
      {"name":"c","type":{"type":"enum","name":"Color","symbols":["RED"]}}]})");
  EXPECT_EQ(e.status.error().path, "c");
  EXPECT_EQ(e.status.error().message,
            "the data's enum Color has symbol \"BLUE\", which the declared enum Color lacks "
            "(declared: RED) (in e.avro)");
  auto n = Check(dir.path() + "/e.avro", R"({"type":"record","name":"r","fields":[
      {"name":"nested","type":{"type":"record","name":"N","fields":[
        {"name":"x","type":"long"}]}}]})");
  EXPECT_EQ(n.status.error().path, "nested.x");
  EXPECT_EQ(n.status.error().message, "data has string, declared long (in e.avro)");
  auto u = Check(dir.path() + "/nowhere", "n:int64");
  EXPECT_EQ(u.status.error().path, "spec.data.input.uri");
}

// ---- empty inputs -------------------------------------------------------------------------

TEST(Contract, EmptyInputsAreOneExistenceFailure) {
  TempDir dir;
  Py(dir,
     "import os\nos.makedirs('d')\n"
     "csv.writer(open('h.csv', 'w')).writerow(['id'])\n"
     "open('z.csv', 'w').close()\n"
     "csv.writer(open('d/a.csv', 'w')).writerows([['id'], [1]])\n"
     "open('d/b.csv', 'w').close()\n"
     "open('bom.jsonl', 'w', encoding='utf-8-sig').write(json.dumps({'id': 1}) + '\\n')\n"
     "open('bom.csv', 'w', encoding='utf-8-sig').write('id\\n1\\n')\n");
  for (const char* name : {"h.csv", "z.csv"}) {
    auto r = Check(dir.path() + "/" + name, "id:int64");
    EXPECT_EQ(r.status.code(), codes::kDataSourceNotFound) << name << r.ToText();
    EXPECT_EQ(r.status.error().message,
              std::string("no records in 1 file under ") + dir.path() + "/" + name);
    ASSERT_EQ(r.checks.size(), 6u);
    EXPECT_EQ(r.checks[0].name, "existence");
    EXPECT_EQ(r.checks[0].state, "failed");
    for (size_t c = 1; c < 6; c++) EXPECT_EQ(r.checks[c].state, "skipped") << r.ToText();
  }
  auto d = Check(dir.path() + "/d", "id:int64");  // an empty part beside a full one
  EXPECT_TRUE(d.status.ok()) << d.ToText();
  EXPECT_EQ(d.rows, 1);
  for (const char* name : {"bom.jsonl", "bom.csv"}) {
    auto b = Check(dir.path() + "/" + name, "id:int64");
    EXPECT_TRUE(b.status.ok()) << name << b.ToText();
    EXPECT_EQ(b.rows, 1);
  }
}

// ---- seedctl data validate on a bare input block ------------------------------------------

struct CmdRun {
  int exit_code = -1;
  std::string out;
};

CmdRun Seedctl(const std::string& args) {
  CmdRun r;
  FILE* p = popen((std::string(RSL_BINARY_DIR "/bin/seedctl ") + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Contract, BareInputBlockNeverAborts) {
  TempDir dir;
  const std::string blocks[] = {
      "input:\n  uri: /d\n  quality: {uniqueKey: [a, b]}\n",
      "input:\n  uri: /d\n  quality: {freshness: [1h]}\n",
      "input:\n  uri: /d\n  schema:\n    tx_id: string\n",
      "input:\n  uri: /d\n  format: [csv]\n",
      "input:\n  uri: /d\n  quality: hello\n",
      "input:\n  uri: /d\n  quality: {completeness: .nan}\n",
      "data: [input]\n",
  };
  for (const auto& block : blocks) {
    std::string file = dir.Write("bare.yaml", block);
    CmdRun r = Seedctl("data validate --state-dir " + dir.path() + "/state -f " + file);
    EXPECT_EQ(r.exit_code, 1) << block << r.out;
    EXPECT_NE(r.out.find(file + ":"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("SPEC_INVALID"), std::string::npos) << r.out;
  }
  Py(dir, "csv.writer(open('a.csv', 'w')).writerows([['id'], [1]])\n");
  std::string file = dir.Write("bare.yaml", "input:\n  uri: " + dir.path() + "/missing\n");
  CmdRun r = Seedctl("data validate --state-dir " + dir.path() + "/state -f " + file);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("DATA_SOURCE_NOT_FOUND input.uri: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace rsl::data
