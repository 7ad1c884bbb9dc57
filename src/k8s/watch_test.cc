// The watch stream's parsing: event lines as the API server writes them, split across chunks
// anywhere, and garbage that must give an error with a code rather than a crash.
#include "k8s/watch.h"

#include <gtest/gtest.h>

#include <random>

#include "base/codes.h"

namespace rsl::k8s {
namespace {

constexpr char kModified[] =
    R"j({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p",)j"
    R"j("namespace":"a","resourceVersion":"12"},"status":{"phase":"Running"}}})j";
constexpr char kGone[] =
    R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)j"
    R"j("status":"Failure","message":"too old resource version: 5 (12)","reason":"Expired",)j"
    R"j("code":410}})j";
constexpr char kBookmark[] =
    R"j({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{)j"
    R"j("resourceVersion":"40","annotations":{"k8s.io/initial-events-end":"true"}}}})j";

TEST(Watch, ParsesEvents) {
  auto e = ParseWatchLine(kModified);
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  EXPECT_EQ(e->type, WatchEventType::kModified);
  EXPECT_EQ(e->object["status"]["phase"], "Running");
  auto b = ParseWatchLine(kBookmark);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->type, WatchEventType::kBookmark);
  auto g = ParseWatchLine(kGone);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->type, WatchEventType::kError);
  Error err = StatusObjectError("watch /api/v1/namespaces/a/pods", g->object);
  EXPECT_EQ(err.code, codes::kK8sGone);
  EXPECT_EQ(err.value, "Expired");
  EXPECT_EQ(
      err.message,
      "watch /api/v1/namespaces/a/pods: Expired: too old resource version: 5 (12) (HTTP 410)");
}

TEST(Watch, MalformedLinesAreErrorsWithACode) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"type\":\"MODIFIED\",\"object\":{\"kind\"", "malformed watch event: not JSON"},
      {"[]", "malformed watch event: not a JSON object"},
      {"{\"object\":{}}", "malformed watch event: no type"},
      {"{\"type\":\"ADDED\"}", "malformed watch event: no object"},
      {"{\"type\":\"ADDED\",\"object\":7}", "malformed watch event: no object"},
      {"{\"type\":\"RENAMED\",\"object\":{}}", "malformed watch event: unknown type \"RENAMED\""},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}",
       "malformed watch event: object without metadata.name"},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":[]}}",
       "malformed watch event: object without metadata.name"},
  };
  for (const auto& [line, want] : cases) {
    auto e = ParseWatchLine(line);
    ASSERT_FALSE(e.ok()) << line;
    EXPECT_EQ(e.error().code, codes::kK8sApiError) << line;
    EXPECT_EQ(e.error().message, want) << line;
  }
}

TEST(Watch, LinesSplitAnywhereAcrossChunks) {
  std::string stream = std::string(kModified) + "\n" + kBookmark + "\r\n\n" + kGone + "\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    LineSplitter s;
    std::vector<std::string> lines;
    auto collect = [&](std::string_view l) {
      lines.emplace_back(l);
      return true;
    };
    s.Feed(std::string_view(stream).substr(0, cut), collect);
    s.Feed(std::string_view(stream).substr(cut), collect);
    ASSERT_EQ(lines.size(), 3u) << cut;
    EXPECT_EQ(lines[0], kModified);
    EXPECT_EQ(lines[1], kBookmark);
    EXPECT_EQ(lines[2], kGone);
    EXPECT_EQ(s.pending(), 0u);
  }
}

// Truncations and byte flips of real events: every outcome is an event or an error with a
// code, never a crash (ASan and UBSan watch).
TEST(Watch, TruncatedAndCorruptedLinesNeverCrash) {
  std::mt19937 rng(19);
  for (const std::string base : {kModified, kGone, kBookmark}) {
    for (size_t n = 0; n < base.size(); ++n) {
      auto e = ParseWatchLine(std::string_view(base).substr(0, n));
      if (!e.ok()) {
        EXPECT_EQ(e.error().code, codes::kK8sApiError);
      }
    }
    for (int i = 0; i < 2000; ++i) {
      std::string s = base;
      for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 256);
      auto e = ParseWatchLine(s);
      if (!e.ok()) {
        EXPECT_EQ(e.error().code, codes::kK8sApiError);
      }
    }
  }
}

}  // namespace
}  // namespace rsl::k8s
