#include "base/commit_manifest.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl {
namespace {

TEST(CommitManifestTest, RoundTripsEveryField) {
  CommitManifest m;
  m.run_id = "run-20240615-7a8b9c0d";
  m.workload_id = "wl-20240615-7a8b9c0d";
  m.committed_at = 1718409600000;
  m.outputs.push_back({"train", "/data/out/train", 42});
  m.files.push_back({"train/model.bin", 7, std::string(64, 'a')});
  auto back = ParseCommitManifest(CommitManifestJson(m));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->run_id, m.run_id);
  EXPECT_EQ(back->workload_id, m.workload_id);
  EXPECT_EQ(back->committed_at, m.committed_at);
  ASSERT_EQ(back->outputs.size(), 1u);
  EXPECT_EQ(back->outputs[0].step, "train");
  EXPECT_EQ(back->outputs[0].uri, "/data/out/train");
  EXPECT_EQ(back->outputs[0].bytes, 42);
  ASSERT_EQ(back->files.size(), 1u);
  EXPECT_EQ(back->files[0].path, "train/model.bin");
  EXPECT_EQ(back->files[0].size, 7);
  EXPECT_EQ(back->files[0].sha256, std::string(64, 'a'));
}

TEST(CommitManifestTest, WritesRunFieldsOnlyWhenSet) {
  CommitManifest m;
  m.files.push_back({"x", 1, "ab"});
  std::string json = CommitManifestJson(m);
  EXPECT_EQ(json.find("run_id"), std::string::npos) << json;
  EXPECT_NE(json.find("\"files\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"outputs\": []"), std::string::npos) << json;
  EXPECT_EQ(json.back(), '\n');
}

// Manifests already on disk, in the two shapes written before this module.
TEST(CommitManifestTest, ReadsTheOldEngineAndDataShapes) {
  auto engine = ParseCommitManifest(
      R"({"run_id": "run-old", "workload_id": "wl-old", "committed_at": 5,
          "outputs": [{"step": "a", "uri": "/p/a", "bytes": 3}]})");
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  EXPECT_EQ(engine->run_id, "run-old");
  ASSERT_EQ(engine->outputs.size(), 1u);
  EXPECT_TRUE(engine->files.empty());
  auto data = ParseCommitManifest(R"({"files": [{"path": "m.bin", "size": 7, "sha256": "ab"}]})");
  ASSERT_TRUE(data.ok()) << data.error().ToString();
  EXPECT_TRUE(data->run_id.empty());
  ASSERT_EQ(data->files.size(), 1u);
  EXPECT_EQ(data->files[0].path, "m.bin");
  auto minimal = ParseCommitManifest("{\"run_id\": \"run-old\"}\n");  // what tests plant
  ASSERT_TRUE(minimal.ok());
  EXPECT_EQ(minimal->run_id, "run-old");
}

TEST(CommitManifestTest, StrictErrorsNameTheField) {
  auto bad = ParseCommitManifest("{\"files\": [{\"path\": \"a\", \"size\": \"big\"}]}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, codes::kDataFormatError);
  EXPECT_EQ(bad.error().path, "files[0].size");
  EXPECT_EQ(bad.error().message, "_RSL_COMMIT: expected an integer");
  EXPECT_EQ(ParseCommitManifest("not json").error().message, "_RSL_COMMIT: not valid JSON");
  EXPECT_EQ(ParseCommitManifest("[]").error().message, "_RSL_COMMIT: expected a JSON object");
  EXPECT_EQ(ParseCommitManifest("{\"outputs\": {}}").error().path, "outputs");
  EXPECT_EQ(ParseCommitManifest("{\"files\": [3]}").error().path, "files[0]");
  EXPECT_EQ(ParseCommitManifest("{\"files\": [{}]}").error().path, "files[0].path");
  EXPECT_EQ(ParseCommitManifest("{\"run_id\": 7}").error().path, "run_id");
  EXPECT_TRUE(ParseCommitManifest("{\"future\": true}").ok());  // unknown fields: ignored
}

}  // namespace
}  // namespace rsl
