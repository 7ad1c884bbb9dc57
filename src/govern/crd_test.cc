#include <gtest/gtest.h>

#include <algorithm>

#include "govern/crd_audit.h"
#include "govern/crd_diff.h"

namespace rsl::govern {
namespace {

// A CRD with one version `v` whose spec schema is `spec_props` (JSON object text) and
// required list `required`.
std::string Crd(const std::string& versions_json, const std::string& scope = "Namespaced") {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
  "metadata":{"name":"seedancejobs.seedance.io"},
  "spec":{"group":"seedance.io","scope":")" +
         scope + R"(","names":{"plural":"seedancejobs","kind":"SeedanceJob"},
  "versions":)" +
         versions_json + "}}";
}

std::string Version(const std::string& name, const std::string& spec_schema, bool storage = true,
                    bool served = true) {
  return R"({"name":")" + name + R"(","served":)" + (served ? "true" : "false") + R"(,"storage":)" +
         (storage ? "true" : "false") +
         R"(,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":)" + spec_schema +
         "}}}}";
}

std::vector<std::string> Diff(const std::string& a, const std::string& b,
                              std::string* table = nullptr) {
  auto oa = ParseObjects(a, "old.json");
  auto ob = ParseObjects(b, "new.json");
  EXPECT_TRUE(oa.ok() && ob.ok());
  Report r("k8s crd-diff", CrdDiffRules());
  DiffCrds(*oa, *ob, &r);
  if (table) *table = r.RenderTable();
  std::vector<std::string> ids = r.Ids();
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(CrdDiff, Rules) {
  const std::string base =
      R"({"type":"object","required":["replicas"],"properties":{
         "replicas":{"type":"integer","format":"int32","minimum":1,"maximum":64},
         "image":{"type":"string","maxLength":200},
         "mode":{"type":"string","enum":["train","eval"]},
         "policy":{"type":"string","default":"Always"},
         "uri":{"type":"string","format":"uri"},
         "tags":{"type":"array","items":{"type":"string"}},
         "phase":{"type":"string"}}})";
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    size_t p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    s.replace(p, from.size(), to);
    return s;
  };
  struct Case {
    std::string new_spec;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {base, {}},
      // The seed's v1.8 -> v2.3: required int32 -> optional *int32.
      {edit(R"("required":["replicas"],)", ""), {"CRD008"}},
      {edit(R"("type":"integer","format":"int32","minimum")",
            R"("type":"integer","format":"int32","nullable":true,"minimum")"),
       {"CRD003"}},
      {edit(R"("image":{"type":"string","maxLength":200},)", ""), {"CRD001"}},
      {edit(R"("format":"int32","minimum")", R"("format":"int64","minimum")"), {"CRD002"}},
      {edit(R"(["train","eval"])", R"(["train"])"), {"CRD005"}},
      {edit(R"(["train","eval"])", R"(["train","eval","serve"])"), {"CRD006"}},
      {edit(R"("required":["replicas"])", R"("required":["replicas","image"])"), {"CRD007"}},
      {edit(R"("minimum":1,"maximum":64)", R"("minimum":2,"maximum":32)"), {"CRD009", "CRD009"}},
      {edit(R"("maxLength":200)", R"("maxLength":300)"), {}},
      {edit(R"("default":"Always")", R"("default":"IfNotPresent")"), {"CRD010"}},
      {edit(R"("format":"uri")", R"("format":"hostname")"), {"CRD011"}},
      {edit(R"("items":{"type":"string"})", R"("items":{"type":"integer"})"), {"CRD002"}},
      {edit(R"("phase":{"type":"string"})",
            R"("phase":{"type":"string","enum":["Running","Done"]})"),
       {"CRD015"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    std::string table;
    auto ids = Diff(Crd("[" + Version("v1", base) + "]"),
                    Crd("[" + Version("v1", c.new_spec) + "]"), &table);
    std::vector<std::string> want = c.want;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(ids, want) << "case " << i << "\n" << table;
    ++i;
  }
}

TEST(CrdDiff, VersionsAndScope) {
  const std::string s = R"({"type":"object","properties":{"replicas":{"type":"integer"}}})";
  // Storage version v1 dropped in favour of v2: stored objects unreadable.
  EXPECT_EQ(Diff(Crd("[" + Version("v1", s) + "]"), Crd("[" + Version("v2", s) + "]")),
            std::vector<std::string>{"CRD013"});
  // Served v1beta1 dropped, storage kept.
  EXPECT_EQ(Diff(Crd("[" + Version("v1beta1", s, false) + "," + Version("v1", s) + "]"),
                 Crd("[" + Version("v1", s) + "]")),
            std::vector<std::string>{"CRD014"});
  // Stop serving.
  EXPECT_EQ(Diff(Crd("[" + Version("v1beta1", s, false) + "," + Version("v1", s) + "]"),
                 Crd("[" + Version("v1beta1", s, false, false) + "," + Version("v1", s) + "]")),
            std::vector<std::string>{"CRD014"});
  EXPECT_EQ(Diff(Crd("[" + Version("v1", s) + "]"), Crd("[" + Version("v1", s) + "]", "Cluster")),
            std::vector<std::string>{"CRD012"});
  EXPECT_EQ(Diff(Crd("[" + Version("v1", s) + "]"), "{\"kind\":\"List\",\"items\":[]}"),
            std::vector<std::string>{"CRD016"});
}

TEST(CrdAudit, SeedTable) {
  const std::string log =
      "I0315 10:22:30.000001       1 httplog.go:132] GET /healthz 200\n"
      "W0315 10:22:34.112] ... no endpoints available for service \"default/my-crd-api\" ... "
      "unregistered resource \"foos.example.com/v1, Resource=foos\"\n"
      "W0315 10:25:01.500] unregistered resource \"bars.example.org/v1, Resource=bars\"\n"
      "W0315 11:00:00.000] ... unregistered resource \"foos.example.com/v1, Resource=foos\"\n"
      "W0316 09:00:00.000] unregistered resource \"example.com/v1alpha1, Resource=foos\"\n"
      "W0316 09:00:01.000] unregistered resource \"widgets.example.com/v2, Resource=widgets\"\n";
  auto accesses = ExtractUnregisteredAccesses(log);
  ASSERT_EQ(accesses.size(), 4u);
  const std::string crds = R"({"kind":"List","items":[
    {"kind":"CustomResourceDefinition","metadata":{"name":"foos.example.com"},
     "spec":{"group":"example.com","names":{"plural":"foos"},
             "versions":[{"name":"v1alpha1","served":true,"storage":true}]}},
    {"kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
     "spec":{"group":"example.com","names":{"plural":"widgets"},
             "versions":[{"name":"v2","served":false,"storage":false},
                         {"name":"v3","served":true,"storage":true}]}}]})";
  auto objs = ParseObjects(crds, "crds.json");
  ASSERT_TRUE(objs.ok());
  Report r("k8s crd-audit", CrdAuditRules());
  AuditCrdAccesses(&accesses, *objs, "apiserver.log", &r);
  // Sorted by (group, resource, version).
  ASSERT_EQ(accesses[0].group, "example.com");
  EXPECT_EQ(accesses[0].resource, "foos");
  EXPECT_EQ(accesses[0].version, "v1");
  EXPECT_EQ(accesses[0].count, 2);
  EXPECT_EQ(accesses[0].first_seen, "03-15 10:22:34.112");
  EXPECT_EQ(accesses[0].last_seen, "03-15 11:00:00.000");
  EXPECT_EQ(accesses[0].status, "version-mismatch");
  EXPECT_EQ(accesses[0].first_line, 2);
  EXPECT_EQ(accesses[1].version, "v1alpha1");
  EXPECT_EQ(accesses[1].status, "registered");
  EXPECT_EQ(accesses[2].resource, "widgets");
  EXPECT_EQ(accesses[2].status, "not-served");
  EXPECT_EQ(accesses[3].group, "example.org");
  EXPECT_EQ(accesses[3].status, "missing");
  EXPECT_EQ(r.Ids(), (std::vector<std::string>{"CRDA002", "CRDA003", "CRDA001"}));
  EXPECT_EQ(r.findings()[0].message,
            "foos.example.com/v1: registered only as v1alpha1 (2 access(es), first 03-15 "
            "10:22:34.112, last 03-15 11:00:00.000)");
}

}  // namespace
}  // namespace rsl::govern
