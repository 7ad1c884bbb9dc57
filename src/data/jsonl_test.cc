#include <gtest/gtest.h>

#include "base/codes.h"
#include "base/fake_env.h"
#include "data/quality.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::ClockAt;
using testing::Input;
using testing::TempDir;

constexpr char kEventSchema[] = R"({"type":"record","name":"e","fields":[
  {"name":"id","type":"long"},
  {"name":"price","type":["null","double"],"constraints":{"min":0.01}},
  {"name":"action","type":"string","constraints":{"enum":["click","buy"]}},
  {"name":"ts","type":"long","logicalType":"timestamp-millis"},
  {"name":"tags","type":{"type":"array","items":"string"}}]})";

ValidateOptions SmallChunkOpts() {
  ValidateOptions o;
  o.threads = 2;
  o.env = ClockAt(1718445600000 + 1000);
  o.read.text_chunk_bytes = 64;
  return o;
}

TEST(Jsonl, ReadsTypesNullsMissingKeysAndIsoTimestamps) {
  TempDir dir;
  dir.Write("e.jsonl",
            "{\"id\": 1, \"price\": 2, \"action\": \"click\", \"ts\": 1718445600000, \"tags\": "
            "[\"a\"], \"x\": {\"y\": 1}}\n"
            "{\"id\": 2, \"price\": null, \"action\": \"buy\", \"ts\": \"2024-06-15T10:00:00Z\", "
            "\"tags\": []}\n"
            "\n"
            "{\"action\": \"buy\", \"id\": 3, \"ts\": 5, \"tags\": [\"b\", \"c\"]}\n");
  auto in = Input(dir.path() + "/e.jsonl", kEventSchema);
  in.quality.uniqueness = 100;
  auto r = Validate(in, nullptr, SmallChunkOpts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.format, "jsonl");
  EXPECT_EQ(r.rows, 3);
  EXPECT_EQ(r.fields[1].nulls, 2);  // explicit null and missing key
  EXPECT_EQ(r.unique_key, "id");    // the default rule: a field named id
  EXPECT_EQ(*r.distinct_keys, 3);
  EXPECT_EQ(*r.newest_micros, 1718445600000000);
}

TEST(Jsonl, WrongTypeAndBadJson) {
  TempDir dir;
  dir.Write("e.jsonl",
            "{\"id\": 1, \"price\": \"cheap\", \"action\": \"buy\", \"ts\": 1, \"tags\": []}\n");
  auto r = Validate(Input(dir.path() + "/e.jsonl", kEventSchema), nullptr, SmallChunkOpts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().message,
            "\"\\\"cheap\\\"\" at e.jsonl row 1 is not a number (declared union[null,double])");
  dir.Write(
      "f.jsonl",
      "{\"id\": 1, \"price\": 2.5, \"action\": \"buy\", \"ts\": 1, \"tags\": []}\n{\"id\": 2,\n");
  auto f = Validate(Input(dir.path() + "/f.jsonl", kEventSchema), nullptr, SmallChunkOpts());
  EXPECT_EQ(f.status.code(), codes::kDataFormatError);
  EXPECT_NE(f.status.error().message.find("f.jsonl: byte 62: invalid JSON"), std::string::npos)
      << f.status.error().message;
}

}  // namespace
}  // namespace rsl::data
