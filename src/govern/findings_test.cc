#include "govern/findings.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rsl::govern {
namespace {

Report Sample() {
  Report r("k8s lint", {{"LINT001", "MissingRequests", Severity::kWarning, "d1"},
                        {"LINT005", "HpaTargetMissing", Severity::kError, "d2"}});
  return r;
}

TEST(Findings, ExitCodes) {
  Report clean = Sample();
  EXPECT_EQ(clean.ExitCode(false), 0);
  EXPECT_EQ(clean.ExitCode(true), 0);
  Report warn = Sample();
  warn.Add({"LINT001", Severity::kWarning, {"Pod", "ns", "p", "f.yaml", 3}, "m", "x"});
  EXPECT_EQ(warn.ExitCode(false), 0);
  EXPECT_EQ(warn.ExitCode(true), 2);
  Report note = Sample();
  note.Add({"LINT001", Severity::kNote, {}, "m", ""});
  EXPECT_EQ(note.ExitCode(true), 2);
  Report err = warn;
  err.Add(
      {"LINT005", Severity::kError, {"HorizontalPodAutoscaler", "ns", "h", "f.yaml", 9}, "m", ""});
  EXPECT_EQ(err.ExitCode(false), 3);
  EXPECT_EQ(err.ExitCode(true), 3);
}

TEST(Findings, TableAndJson) {
  Report r = Sample();
  r.Add({"LINT001", Severity::kWarning, {"Pod", "ns", "p", "f.yaml", 3}, "no requests", "add"});
  std::string t = r.RenderTable();
  EXPECT_EQ(t,
            "SEVERITY  ID       OBJECT    MESSAGE      FIX\n"
            "warning   LINT001  Pod/ns/p  no requests  add\n"
            "1 finding(s): 0 error, 1 warning, 0 note\n");
  auto j = nlohmann::json::parse(r.RenderJson());
  EXPECT_EQ(j["findings"][0]["id"], "LINT001");
  EXPECT_EQ(j["findings"][0]["object"]["namespace"], "ns");
  EXPECT_EQ(j["summary"]["warning"], 1);
}

}  // namespace
}  // namespace rsl::govern
