#include "api/sse.h"

#include <gtest/gtest.h>

namespace rsl::api {
namespace {

TEST(SseParserTest, SplitsEventsFedInAnyPieces) {
  std::string stream =
      ": keep-alive\n\nevent: step\ndata: {\"a\":1}\n\nevent: log\r\ndata: x\ndata: y\n\n"
      "data: plain\n\nevent: nodata\n\n";
  for (size_t piece : {1u, 3u, 7u, 1000u}) {
    SseParser p;
    std::vector<SseMessage> got;
    for (size_t i = 0; i < stream.size(); i += piece) {
      for (auto& m : p.Feed(std::string_view(stream).substr(i, piece))) got.push_back(m);
    }
    ASSERT_EQ(got.size(), 3u) << piece;
    EXPECT_EQ(got[0].type, "step");
    EXPECT_EQ(got[0].data, "{\"a\":1}");
    EXPECT_EQ(got[1].type, "log");
    EXPECT_EQ(got[1].data, "x\ny");
    EXPECT_EQ(got[2].type, "message");
    EXPECT_EQ(got[2].data, "plain");
  }
}

TEST(SseParserTest, KeepsAnUnfinishedEventForLater) {
  SseParser p;
  EXPECT_TRUE(p.Feed("event: end\ndata: {}\n").empty());
  auto got = p.Feed("\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type, "end");
}

TEST(ApplyWatchEventTest, MergesStatusAndStepsIntoTheObject) {
  nlohmann::json w;
  ApplyWatchEvent(
      "workload",
      {{"metadata", {{"id", "x"}}},
       {"status", {{"phase", "RUNNING"}, {"steps", {{{"name", "a"}, {"phase", "RUNNING"}}}}}}},
      &w);
  ApplyWatchEvent("step", {{"name", "a"}, {"phase", "SUCCEEDED"}}, &w);
  ApplyWatchEvent("step", {{"name", "b"}, {"phase", "RUNNING"}}, &w);
  ApplyWatchEvent("status", {{"phase", "SUCCEEDED"}}, &w);
  ApplyWatchEvent("event", {{"seq", 3}}, &w);
  EXPECT_EQ(w["status"]["phase"], "SUCCEEDED");
  ASSERT_EQ(w["status"]["steps"].size(), 2u);
  EXPECT_EQ(w["status"]["steps"][0]["phase"], "SUCCEEDED");
  EXPECT_EQ(w["status"]["steps"][1]["name"], "b");
  EXPECT_EQ(w["metadata"]["id"], "x");
}

}  // namespace
}  // namespace rsl::api
