// Compressed CSV and JSON Lines from independent writers: Python's gzip module (one member,
// and several concatenated), the zstd CLI (one frame, and several); DuckDB reads the same files
// and counts the same rows. Compression is told by extension and by magic bytes; corrupt and
// truncated streams are DATA_FORMAT_ERROR naming the place (docs/data.md).
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/codes.h"
#include "base/fake_env.h"
#include "data/quality.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::DuckRows;
using testing::Input;
using testing::TempDir;

// 2024-06-15T10:00:00Z in microseconds.
constexpr int64_t kBase = 1718445600000000;

void Shell(const std::string& cmd) { ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd; }

// Runs Python (stdlib csv, json, gzip) in `dir`.
void Py(const TempDir& dir, const std::string& code) {
  dir.Write("gen.py", "import csv, gzip, io, json, shutil\n" + code);
  Shell("cd " + dir.path() + " && /usr/bin/python3 gen.py");
}

// DuckDB's answer to `SELECT count(*) FROM <from>`, -1 when it fails.
int64_t DuckCount(const std::string& from) {
  auto j = DuckRows("SELECT count(*)::INTEGER AS n FROM " + from);
  if (!j.is_array() || j.empty() || !j[0]["n"].is_number()) return -1;
  return j[0]["n"].get<int64_t>();
}

Env* ClockAt(int64_t now_ms) {
  static FakeClockEnv env;
  env.SetNowMs(now_ms);
  return &env;
}

ValidationReport Check(const std::string& uri, const std::string& schema,
                       const std::string& format = "") {
  auto in = Input(uri, schema);
  in.format = format;
  in.quality.unique_key = "id";
  in.quality.uniqueness = 100;
  in.quality.freshness_ms = 3600000;
  ValidateOptions o;
  o.threads = 2;
  o.env = ClockAt(kBase / 1000 + 60000);
  return Validate(in, nullptr, o);
}

constexpr char kSchema[] = R"({"type":"record","name":"r","fields":[
  {"name":"id","type":"long"},
  {"name":"note","type":"string"},
  {"name":"amount","type":["null","double"],"constraints":{"min":0}},
  {"name":"ts","type":"long","logicalType":"timestamp-micros"}]})";

constexpr int kRows = 40000;

// kRows records, about 2.5 MiB of text (several decompression windows): every 7th note is a
// quoted field with a comma, a doubled quote and line breaks, every 1000th amount is empty,
// and one note of 1.5 MiB (longer than a window) holds line breaks too.
constexpr char kRowsPy[] =
    "def rows():\n"
    "    for i in range(40000):\n"
    "        note = 'n%d' % i if i % 7 else 'line one, \"q\"\\nline two\\r\\nthree %d' % i\n"
    "        if i == 20000: note = 'x\\n' * 750000\n"
    "        amount = '' if i % 1000 == 999 else '%.2f' % (i * 0.5)\n"
    "        ts = '2024-06-15T09:%02d:%02dZ' % (i // 60 % 60, i % 60)\n"
    "        yield [i, note, amount, ts]\n"
    "def write_csv(f):\n"
    "    w = csv.writer(f)\n"
    "    w.writerow(['id', 'note', 'amount', 'ts'])\n"
    "    w.writerows(rows())\n";

void ExpectSameAsPlain(const ValidationReport& plain, const ValidationReport& r) {
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.format, "csv");
  EXPECT_EQ(r.rows, plain.rows);
  EXPECT_EQ(*r.distinct_keys, *plain.distinct_keys);
  EXPECT_EQ(*r.newest_micros, *plain.newest_micros);
  ASSERT_EQ(r.fields.size(), plain.fields.size());
  for (size_t i = 0; i < r.fields.size(); i++) {
    EXPECT_EQ(r.fields[i].nulls, plain.fields[i].nulls) << i;
    EXPECT_EQ(r.fields[i].values, plain.fields[i].values) << i;
    EXPECT_EQ(r.fields[i].max, plain.fields[i].max) << i;
    EXPECT_EQ(r.fields[i].max_len, plain.fields[i].max_len) << i;
  }
}

TEST(CompressedText, GzipAndZstdCsvReadAsThePlainFile) {
  TempDir dir;
  Py(dir, std::string(kRowsPy) +
              "import os\n"
              "for d in ['plain', 'gz', 'gzcat', 'zst', 'zstcat', 'magic']: os.mkdir(d)\n"
              "with open('plain/a.csv', 'w', newline='') as f: write_csv(f)\n"
              "with gzip.open('gz/a.csv.gz', 'wt', newline='') as f: write_csv(f)\n"
              // several gzip members, as `cat a.gz b.gz` makes them
              "data = open('plain/a.csv', 'rb').read()\n"
              "cut = data.index(b'\\n5000,') + 1\n"
              "open('gzcat/a.csv.gz', 'wb').write(gzip.compress(data[:cut]) + "
              "gzip.compress(data[cut:]))\n"
              "open('zst/a.part1', 'wb').write(data[:cut])\n"
              "open('zst/a.part2', 'wb').write(data[cut:])\n"
              // gzip data under a name that does not say so: told by its magic bytes
              "shutil.copy('gz/a.csv.gz', 'magic/part-0')\n");
  Shell("cd " + dir.path() + "/zst && zstd -q ../plain/a.csv -o a.csv.zst && " +
        "zstd -q a.part1 -o 1.zst && zstd -q a.part2 -o 2.zst && rm a.part1 a.part2 && " +
        "cat 1.zst 2.zst > ../zstcat/a.csv.zst && rm 1.zst 2.zst");
  auto plain = Check(dir.path() + "/plain/a.csv", kSchema);
  ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();
  EXPECT_EQ(plain.rows, kRows);
  EXPECT_EQ(plain.fields[2].nulls, kRows / 1000);
  EXPECT_EQ(plain.fields[1].max_len.value(), 1500000);
  for (const char* sub : {"gz/a.csv.gz", "gzcat/a.csv.gz", "zst/a.csv.zst", "zstcat/a.csv.zst"}) {
    SCOPED_TRACE(sub);
    ExpectSameAsPlain(plain, Check(dir.path() + "/" + sub, kSchema));
  }
  ExpectSameAsPlain(plain, Check(dir.path() + "/magic/part-0", kSchema, "csv"));
  // DuckDB reads the same files and counts the same rows.
  EXPECT_EQ(DuckCount("read_csv('" + dir.path() + "/gz/a.csv.gz')"), kRows);
  EXPECT_EQ(DuckCount("read_csv('" + dir.path() + "/gzcat/a.csv.gz')"), kRows);
  EXPECT_EQ(DuckCount("read_csv('" + dir.path() + "/zst/a.csv.zst')"), kRows);
}

TEST(CompressedText, JsonlByExtensionAndByMagicBytes) {
  TempDir dir;
  Py(dir,
     "import os\n"
     "os.mkdir('bare')\n"
     "lines = [json.dumps({'id': i, 'note': 'n%d' % i, 'amount': i * 0.5 if i % 10 else None,"
     " 'ts': '2024-06-15T10:00:%02dZ' % (i % 60)}) for i in range(30000)]\n"
     "text = ('\\n'.join(lines) + '\\n').encode()\n"
     "open('j.jsonl', 'wb').write(text)\n"
     "open('j.jsonl.gz', 'wb').write(gzip.compress(text[:1000]) + gzip.compress(text[1000:]))\n"
     "open('bare/part-0', 'wb').write(gzip.compress(b'\\xef\\xbb\\xbf' + text))\n");
  Shell("cd " + dir.path() + " && zstd -q j.jsonl -o j.jsonl.zst");
  auto plain = Check(dir.path() + "/j.jsonl", kSchema);
  ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();
  EXPECT_EQ(plain.rows, 30000);
  for (const char* name : {"j.jsonl.gz", "j.jsonl.zst", "bare/part-0"}) {
    SCOPED_TRACE(name);
    auto r = Check(dir.path() + "/" + name, kSchema);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.format, "jsonl");
    EXPECT_EQ(r.rows, 30000);
    EXPECT_EQ(r.fields[2].nulls, plain.fields[2].nulls);
    EXPECT_EQ(*r.newest_micros, *plain.newest_micros);
  }
  EXPECT_EQ(DuckCount("read_json('" + dir.path() + "/j.jsonl.gz', format='newline_delimited')"),
            30000);
  EXPECT_EQ(DuckCount("read_json('" + dir.path() + "/j.jsonl.zst', format='newline_delimited')"),
            30000);
  // The inferred schema (data profile, datasource scan) comes from the decompressed lines.
  auto inferred = InferSchema(dir.path() + "/j.jsonl.zst", "", nullptr);
  ASSERT_TRUE(inferred.ok()) << inferred.error().ToString();
  EXPECT_EQ(inferred->record().fields.size(), 4u);
  EXPECT_EQ(inferred->record().fields[0].type->kind, schema::Kind::kLong);
}

TEST(CompressedText, CorruptAndTruncatedStreamsAreFormatErrors) {
  TempDir dir;
  Py(dir, std::string(kRowsPy) +
              "buf = io.StringIO()\n"
              "write_csv(buf)\n"
              "data = buf.getvalue().encode()\n"
              "z = gzip.compress(data)\n"
              "open('cut.csv.gz', 'wb').write(z[:len(z) // 2])\n"
              "flip = bytearray(z)\n"
              "flip[len(z) // 3] ^= 0xff\n"
              "open('flip.csv.gz', 'wb').write(bytes(flip))\n"
              "open('tail.csv.gz', 'wb').write(gzip.compress(b'id\\n1\\n') + b'garbage')\n"
              "open('notgz.csv.gz', 'wb').write(b'id\\n1\\n')\n"
              "open('plain.csv', 'wb').write(data)\n"
              "open('cut.jsonl.gz', 'wb').write(gzip.compress(b'{\"id\": 1}\\n' * 50000)[:300])\n");
  Shell("cd " + dir.path() + " && zstd -q plain.csv -o z.csv.zst && " +
        "head -c $(( $(stat -c %s z.csv.zst) / 2 )) z.csv.zst > cutz.csv.zst && rm plain.csv");
  auto size = [&](const std::string& name) {
    auto data = ReadFile(dir.path() + "/" + name);
    return data.ok() ? std::to_string(data->size()) : std::string("?");
  };
  auto expect = [&](const std::string& name, const std::string& message) {
    SCOPED_TRACE(name);
    auto r = Check(dir.path() + "/" + name, kSchema);
    EXPECT_EQ(r.status.code(), codes::kDataFormatError) << r.ToText();
    EXPECT_NE(r.status.error().message.find(message), std::string::npos)
        << r.status.error().message;
  };
  expect("cut.csv.gz", "cut.csv.gz: byte " + size("cut.csv.gz") +
                           ": truncated gzip stream: the file ends inside compressed data");
  expect("flip.csv.gz", ": corrupt gzip stream (");
  expect("tail.csv.gz", "trailing bytes after the gzip data (not another gzip member)");
  expect("notgz.csv.gz", "notgz.csv.gz: byte 0: not gzip data (it does not start with 1f 8b)");
  expect("cutz.csv.zst", "cutz.csv.zst: byte " + size("cutz.csv.zst") + ": truncated zstd stream");
  expect("cut.jsonl.gz", "cut.jsonl.gz: byte 300: truncated gzip stream");
}

TEST(CompressedText, ErrorsInTheTextNameTheDecompressedPlace) {
  TempDir dir;
  Py(dir,
     "open('rows.csv.gz', 'wb').write(gzip.compress(b'id,note\\n1,a\\n2,b,c\\n'))\n"
     "open('type.csv.gz', 'wb').write(gzip.compress(b'id,note\\n1,a\\nabc,b\\n'))\n"
     "open('bad.jsonl.gz', 'wb').write(gzip.compress(b'{\"id\": 1}\\n{\"id\": \\n'))\n");
  const char* schema = "id:int64,note:string";
  auto rows = Check(dir.path() + "/rows.csv.gz", schema);
  EXPECT_EQ(rows.status.code(), codes::kDataFormatError);
  EXPECT_NE(rows.status.error().message.find(
                "rows.csv.gz: byte 12 of the decompressed text: record has 3 fields, the header "
                "has 2"),
            std::string::npos)
      << rows.status.error().message;
  auto type = Check(dir.path() + "/type.csv.gz", schema);
  EXPECT_EQ(type.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(type.status.error().message,
            "\"abc\" at type.csv.gz row 2 is not an integer (declared long)");
  auto json = Check(dir.path() + "/bad.jsonl.gz", "id:int64");
  EXPECT_EQ(json.status.code(), codes::kDataFormatError);
  EXPECT_NE(json.status.error().message.find("bad.jsonl.gz: byte 10 of the decompressed text: "
                                             "invalid JSON"),
            std::string::npos)
      << json.status.error().message;
}

TEST(CompressedText, CompressedParquetIsRefusedWithAHint) {
  TempDir dir;
  Shell("node " RSL_SOURCE_DIR "/tests/data/write_parquet.mjs sql \"COPY (SELECT 1 AS id) TO '" +
        dir.path() + "/p.parquet' (FORMAT parquet)\" > /dev/null");
  Py(dir, "open('p.parquet.gz', 'wb').write(gzip.compress(open('p.parquet', 'rb').read()))\n");
  auto r = Check(dir.path() + "/p.parquet.gz", "id:int32");
  EXPECT_EQ(r.status.code(), codes::kDataFormatError);
  EXPECT_NE(r.status.error().message.find("a gzip-compressed parquet file cannot be read"),
            std::string::npos)
      << r.status.error().message;
}

}  // namespace
}  // namespace rsl::data
