// Requests against signature.inputs: the shared table (tests/model/request_cases.json, which
// python/rsl_signature.py runs too, so the two checks agree word for word), the signature as a
// replica gets it, and the error's rendering.
#include "model/request_check.h"

#include <gtest/gtest.h>

#include "base/file.h"

namespace rsl::model {
namespace {

using json = nlohmann::json;

json Table() {
  auto text = ReadFile(std::string(RSL_SOURCE_DIR) + "/tests/model/request_cases.json");
  EXPECT_TRUE(text.ok()) << text.error().ToString();
  return text.ok() ? json::parse(*text) : json();
}

TEST(RequestCheckTest, TheSharedTable) {
  json table = Table();
  auto inputs = SignatureInputsFromJson(table["signature"]);
  ASSERT_TRUE(inputs.ok()) << inputs.error().ToString();
  ASSERT_EQ(inputs->size(), 5u);
  ASSERT_GE(table["cases"].size(), 20u);
  for (const json& c : table["cases"]) {
    std::vector<InputMismatch> got = CheckRequest(*inputs, c["request"]);
    json got_json = json::array();
    if (!got.empty()) {
      got_json = RequestErrorJson(got)["errors"];
      for (auto& e : got_json) {
        EXPECT_EQ(e["code"], "INPUT_SCHEMA_MISMATCH");
        e.erase("code");
      }
    }
    EXPECT_EQ(got_json.dump(1), c["errors"].dump(1)) << c["name"].get<std::string>();
  }
}

TEST(RequestCheckTest, TheFirstMismatchLeadsTheAnswer) {
  std::vector<spec::TensorSpec> inputs = {{"x", "float32", {1, 2}, std::nullopt}};
  auto got = CheckRequest(inputs, json::parse(R"({"inputs": {"x": [[1, "a", 3]], "extra": 1}})"));
  ASSERT_EQ(got.size(), 3u);
  json answer = RequestErrorJson(got);
  EXPECT_EQ(answer["error"], answer["errors"][0]);
  EXPECT_EQ(answer["error"]["message"], "x.shape expected [1, 2], got [1, 3]");
  EXPECT_EQ(got[0].ToError().ToString(),
            "INPUT_SCHEMA_MISMATCH spec.model.signature.inputs[0]: x.shape expected [1, 2], got "
            "[1, 3] (send x as float32 [1, 2])");
  EXPECT_EQ(
      got[2].ToError().ToString(),
      "INPUT_SCHEMA_MISMATCH: extra is not an input of the signature (the signature's inputs: "
      "x)");
}

TEST(RequestCheckTest, DeepNestingIsAnAnswerNotACrash) {
  std::vector<spec::TensorSpec> inputs = {{"x", "float32", {-1}, std::nullopt}};
  // Deep enough to overflow a recursive walk's stack; the parser and json's destructor are
  // iterative (nlohmann 3.11), and the body is moved, not copied (the copy recurses).
  std::string deep = std::string(50'000, '[') + "\"s\"" + std::string(50'000, ']');
  json body = json::object();
  body["x"] = json::parse(deep);
  auto got = CheckRequest(inputs, body);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].field, "shape");
  EXPECT_EQ(got[1].field, "dtype");
  EXPECT_EQ(got[1].actual.substr(0, 20), "string at index [0, ");
}

TEST(RequestCheckTest, SignatureJsonIsWhatReplicasRead) {
  spec::ModelSpec m;
  m.inputs.push_back({"user_features", "float32", {1, 128}, std::nullopt});
  m.outputs.push_back({"prediction", "float32", {-1, 1}, std::make_pair(0.0, 1.0)});
  m.outputs.push_back(
      {"label", "int64", {-1}, std::make_pair(0.0, 9.0), std::make_pair(int64_t{0}, int64_t{9})});
  EXPECT_EQ(
      SignatureJson(m),
      R"({"inputs":[{"dtype":"float32","name":"user_features","shape":[1,128]}],)"
      R"("outputs":[{"dtype":"float32","name":"prediction","range":[0.0,1.0],"shape":[-1,1]},)"
      R"({"dtype":"int64","name":"label","range":[0,9],"shape":[-1]}]})");
  auto back = SignatureInputsFromJson(json::parse(SignatureJson(m)));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].name, "user_features");
  EXPECT_EQ((*back)[0].shape, (std::vector<int64_t>{1, 128}));
  auto bad = SignatureInputsFromJson(json::parse(R"({"inputs": [{"name": "x", "shape": [1]}]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().ToString(),
            "INVALID_ARGUMENT: inputs[0] is not {\"name\": string, \"dtype\": string, \"shape\": "
            "[integers]}");
}

}  // namespace
}  // namespace rsl::model
