#include "schema/schema.h"

#include <gtest/gtest.h>

namespace rsl::schema {
namespace {

TEST(SchemaTest, CompactForm) {
  auto s = ParseSchema("feature_vector:float32[1024], label:int32,ts:timestamp,ok:bool,b:bytes");
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const auto& f = s->record().fields;
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].type->kind, Kind::kArray);
  EXPECT_EQ(f[0].type->size, 1024);
  EXPECT_EQ(f[0].type->items->kind, Kind::kFloat);
  EXPECT_EQ(f[1].type->kind, Kind::kInt);
  EXPECT_EQ(f[2].type->ToString(), "long(timestamp-micros)");
  EXPECT_EQ(f[3].type->kind, Kind::kBoolean);
  EXPECT_EQ(
      s->record().ToJson(),
      R"({"type":"record","name":"record","fields":[{"name":"feature_vector","type":{"type":"array","items":"float","size":1024}},{"name":"label","type":"int"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},{"name":"ok","type":"boolean"},{"name":"b","type":"bytes"}]})");
}

TEST(SchemaTest, CompactErrorsHaveColumns) {
  auto bad_type = ParseSchema("a:int32,b:flaot32");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.error().pos.column, 11);
  EXPECT_EQ(bad_type.error().hint, "did you mean 'float32'?");
  auto no_type = ParseSchema("a:int32,b");
  ASSERT_FALSE(no_type.ok());
  EXPECT_EQ(no_type.error().pos.column, 9);
  EXPECT_FALSE(ParseSchema("a:int32,a:int64").ok());
  EXPECT_FALSE(ParseSchema("a:int32[0]").ok());
  EXPECT_FALSE(ParseSchema("a:int32[x]").ok());
  EXPECT_FALSE(ParseSchema("1a:int32").ok());
  EXPECT_FALSE(ParseSchema("a:int32,,b:int32").ok());
  EXPECT_FALSE(ParseSchema("  ").ok());
}

TEST(SchemaTest, AvroEveryFeature) {
  const char* json = R"({
    "type": "record", "name": "event", "namespace": "com.example",
    "fields": [
      {"name": "id", "type": "long"},
      {"name": "ts", "type": "long", "logicalType": "timestamp-micros"},
      {"name": "day", "type": {"type": "int", "logicalType": "date"}},
      {"name": "note", "type": ["null", "string"], "default": null},
      {"name": "where", "type": {"type": "record", "name": "geo", "fields": [
          {"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}},
      {"name": "home", "type": "geo"},
      {"name": "tags", "type": {"type": "array", "items": "string"}},
      {"name": "scores", "type": {"type": "map", "values": "float"}},
      {"name": "kind", "type": {"type": "enum", "name": "kind_t", "symbols": ["A", "B"]}},
      {"name": "hash", "type": {"type": "fixed", "name": "md5", "size": 16}},
      {"name": "raw", "type": "bytes", "aliases": ["blob"]},
      {"name": "ok", "type": "boolean"},
      {"name": "action", "type": "string", "constraints": {"enum": ["click", "buy"]}},
      {"name": "price", "type": ["null", "double"], "constraints": {"min": 0.01, "max": 1e6}},
      {"name": "n", "type": "int"}, {"name": "f", "type": "float"}, {"name": "z", "type": "null"}
    ]})";
  auto s = ParseSchema(json);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const Schema& schema = *s;
  EXPECT_EQ(schema.record().name, "com.example.event");
  EXPECT_EQ(schema.FindField("ts")->type->logical_type, "timestamp-micros");
  EXPECT_EQ(schema.FindField("day")->type->logical_type, "date");
  const Field* note = schema.FindField("note");
  EXPECT_TRUE(note->type->IsNullable());
  EXPECT_EQ(note->type->NonNull().kind, Kind::kString);
  EXPECT_EQ(note->default_json, "null");
  EXPECT_EQ(note->type->ToString(), "union[null,string]");
  EXPECT_EQ(schema.FindField("where")->type->fields.size(), 2u);
  EXPECT_EQ(schema.FindField("home")->type->name, "com.example.geo");
  EXPECT_EQ(schema.FindField("tags")->type->ToString(), "array<string>");
  EXPECT_EQ(schema.FindField("scores")->type->ToString(), "map<float>");
  EXPECT_EQ(schema.FindField("kind")->type->symbols, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(schema.FindField("hash")->type->size, 16);
  EXPECT_EQ(schema.FindField("raw")->aliases, std::vector<std::string>{"blob"});
  EXPECT_EQ(schema.FindField("action")->constraints.enum_values.size(), 2u);
  EXPECT_EQ(schema.FindField("price")->constraints.min, 0.01);
  EXPECT_EQ(schema.FindField("price")->constraints.max, 1e6);
  EXPECT_EQ(schema.FindField("missing"), nullptr);
  // ToJson is parseable again and stable.
  auto again = ParseSchema(schema.ToJson());
  ASSERT_TRUE(again.ok()) << again.error().ToString() << "\n" << schema.ToJson();
  EXPECT_EQ(again->ToJson(), schema.ToJson());
}

TEST(SchemaTest, AvroErrors) {
  struct Case {
    const char* json;
    const char* part;
  };
  const Case cases[] = {
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": "strng"}]})",
       "unknown type \"strng\""},
      {R"({"type": "record", "name": "r"})", "needs a \"fields\" list"},
      {R"({"type": "record", "fields": []})", "needs a string \"name\""},
      {R"({"type": "array", "items": "int"})", "must be a record"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a"}]})", "has no \"type\""},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]})",
       "duplicate field"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", ["int"]]}]})",
       "may not directly contain another union"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": ["int", "int"]}]})",
       "twice"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": {"type": "enum", "name": "e", "symbols": []}}]})",
       "non-empty \"symbols\""},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": "string", "constraints": {"min": 1}}]})",
       "applies to numbers"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": "int", "constraints": {"min": 2, "max": 1}}]})",
       "greater than max"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": "r"}]})",
       "recursive type"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": {"type": "fixed", "name": "f"}}]})",
       "needs a non-negative integer \"size\""},
      {R"({"type": "record", "name": "r", "fields": [)", "not valid JSON"},
      {R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": {"type": "map"}}]})",
       "map needs \"values\""},
  };
  for (const auto& c : cases) {
    auto s = ParseSchema(c.json);
    ASSERT_FALSE(s.ok()) << c.json;
    EXPECT_EQ(s.error().code, "SPEC_INVALID");
    EXPECT_NE(s.error().message.find(c.part), std::string::npos) << c.json << "\n"
                                                                 << s.error().message;
  }
  auto located = ParseSchema(
      "{\"type\": \"record\", \"name\": \"r\",\n \"fields\": [{\"name\": \"a\", \"type\": "
      "\"lonq\"}]}");
  ASSERT_FALSE(located.ok());
  EXPECT_EQ(located.error().pos.line, 2);
  EXPECT_EQ(located.error().pos.column, 35);
  EXPECT_EQ(located.error().hint, "did you mean 'long'?");
}

TEST(SchemaTest, Decimals) {
  auto s = ParseSchema(R"({"type": "record", "name": "r", "fields": [
      {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
       "constraints": {"min": 0, "max": 100.5}},
      {"name": "f", "type": {"type": "fixed", "name": "F", "size": 8, "logicalType": "decimal",
                             "precision": 18}},
      {"name": "l", "type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 5}]})");
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const auto& f = s->record().fields;
  EXPECT_EQ(f[0].type->ToString(), "decimal(10,2)");
  EXPECT_EQ(f[0].type->precision, 10);
  EXPECT_EQ(f[0].type->scale, 2);
  EXPECT_EQ(*f[0].constraints.max, 100.5);
  EXPECT_EQ(f[1].type->ToString(), "decimal(18,0)");  // scale defaults to 0
  EXPECT_EQ(f[1].type->kind, Kind::kFixed);
  EXPECT_EQ(f[2].type->ToString(), "decimal(5,5)");  // field-level logicalType
  // The JSON form carries precision and scale, and parses back to the same types.
  auto again = ParseSchema(s->ToJson());
  ASSERT_TRUE(again.ok()) << again.error().ToString() << "\n" << s->ToJson();
  EXPECT_EQ(again->record().fields[0].type->ToString(), "decimal(10,2)");
  EXPECT_EQ(again->record().fields[1].type->ToString(), "decimal(18,0)");

  auto compact = ParseSchema("id:int64, amount:decimal(10,2), whole:decimal(7)");
  ASSERT_TRUE(compact.ok()) << compact.error().ToString();
  ASSERT_EQ(compact->record().fields.size(), 3u);
  EXPECT_EQ(compact->record().fields[1].type->ToString(), "decimal(10,2)");
  EXPECT_EQ(compact->record().fields[1].type->kind, Kind::kBytes);
  EXPECT_EQ(compact->record().fields[2].type->ToString(), "decimal(7,0)");
  for (const char* bad : {"a:decimal", "a:decimal(0,0)", "a:decimal(3,4)", "a:decimal(x)",
                          "a:decimal(10,2)[4]", "a:decimal(10,2", "a:decimal(2000)"}) {
    auto r = ParseSchema(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "SPEC_INVALID") << bad;
    EXPECT_NE(r.error().hint.find("decimal(P,S)"), std::string::npos) << bad;
  }

  struct Case {
    const char* type;
    const char* part;
  };
  const Case cases[] = {
      {R"({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 5})",
       "scale must be an integer between 0 and its precision (4), got 5"},
      {R"({"type": "bytes", "logicalType": "decimal"})", "needs an integer \"precision\""},
      {R"({"type": "bytes", "logicalType": "decimal", "precision": "10"})",
       "needs an integer \"precision\" between 1 and 1000, got \"10\""},
      {R"({"type": "long", "logicalType": "decimal", "precision": 10})",
       "applies to bytes or fixed, not long"},
      {R"({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal", "precision": 10})",
       "decimal precision 10 does not fit fixed \"F\" of 4 bytes (at most 9 digits)"},
  };
  for (const auto& c : cases) {
    std::string json =
        std::string(R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": )") +
        c.type + "}]}";
    auto r = ParseSchema(json);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.error().code, "SPEC_INVALID");
    EXPECT_NE(r.error().message.find(c.part), std::string::npos) << r.error().ToString();
    // A writer schema in a data file: the invalid logical type is ignored (Avro 1.11).
    auto lenient = ParseAvroSchema(json, InvalidLogical::kIgnore);
    ASSERT_TRUE(lenient.ok()) << json;
    EXPECT_FALSE(lenient->record().fields[0].type->IsDecimal()) << json;
  }
  // A fixed of 4 bytes holds 9 digits exactly.
  EXPECT_TRUE(
      ParseSchema(
          R"({"type": "record", "name": "r", "fields": [{"name": "a", "type": )"
          R"({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal", "precision": 9}}]})")
          .ok());
}

TEST(SchemaTest, ExtendSchemaAddsFeatures) {
  auto in = ParseSchema("user_id:string,price:float64");
  ASSERT_TRUE(in.ok());
  auto out = ExtendSchema(*in, {{"user_embedding", "float32[128]"}, {"item_category", "int32"}});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out->record().fields.size(), 4u);
  EXPECT_EQ(out->FindField("user_embedding")->type->ToString(), "array<float>[128]");
  EXPECT_EQ(in->record().fields.size(), 2u);  // the input is not modified
  auto dup = ExtendSchema(*in, {{"price", "float32"}});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().path, "features[0].name");
  auto bad = ExtendSchema(*in, {{"x", "float23"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().path, "features[0].type");
}

}  // namespace
// uniqueKey may name a field of a nested record ("a.b", through nullable unions).
TEST(SchemaTest, FindPathWalksNestedRecords) {
  auto s = ParseSchema(R"({"type":"record","name":"t","fields":[
    {"name":"id","type":"long"},
    {"name":"a","type":["null",{"type":"record","name":"a","fields":[
      {"name":"b","type":"long"},
      {"name":"c","type":{"type":"record","name":"c","fields":[{"name":"d","type":"string"}]}}]}]},
    {"name":"items","type":{"type":"array","items":"long"}}]})");
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_NE(s->FindPath("id"), nullptr);
  ASSERT_NE(s->FindPath("a.b"), nullptr);
  EXPECT_EQ(s->FindPath("a.b")->type->kind, Kind::kLong);
  ASSERT_NE(s->FindPath("a.c.d"), nullptr);
  EXPECT_EQ(s->FindPath("a.x"), nullptr);
  EXPECT_EQ(s->FindPath("id.x"), nullptr);
  EXPECT_EQ(s->FindPath("items.x"), nullptr);
  EXPECT_EQ(s->FindPath("a."), nullptr);
  EXPECT_EQ(s->RecordPaths(),
            (std::vector<std::string>{"id", "a", "items", "a.b", "a.c", "a.c.d"}));
}

}  // namespace rsl::schema
