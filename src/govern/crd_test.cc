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

// `base` with the first `from` replaced by `to`.
std::string Edited(std::string base, const std::string& from, const std::string& to) {
  size_t p = base.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) base.replace(p, from.size(), to);
  return base;
}

// A CRD diff case: the new spec schema and the findings wanted.
struct DiffCase {
  std::string new_spec;
  std::vector<std::string> want;
};

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
    return Edited(base, from, to);
  };
  const DiffCase cases[] = {
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

// Findings with their severities, sorted ("CRD002:note").
std::vector<std::string> DiffGraded(const std::string& a, const std::string& b,
                                    std::vector<Finding>* out = nullptr) {
  auto oa = ParseObjects(a, "old.json");
  auto ob = ParseObjects(b, "new.json");
  EXPECT_TRUE(oa.ok() && ob.ok());
  Report r("k8s crd-diff", CrdDiffRules());
  DiffCrds(*oa, *ob, &r);
  std::vector<std::string> ids;
  for (const auto& f : r.findings()) ids.push_back(f.id + ":" + SeverityName(f.severity));
  std::sort(ids.begin(), ids.end());
  if (out) *out = r.findings();
  return ids;
}

TEST(CrdDiff, TighteningAndWidening) {
  const std::string base =
      R"({"type":"object","properties":{
         "name":{"type":"string"},
         "tags":{"type":"array","items":{"type":"string"}},
         "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
         "raw":{"x-kubernetes-preserve-unknown-fields":true}}})";
  auto edit = [&](const std::string& from, const std::string& to) {
    return Edited(base, from, to);
  };
  const DiffCase cases[] = {
      {edit(R"("name":{"type":"string"})", R"("name":{"type":"string","pattern":"^[a-z]+$"})"),
       {"CRD018:error"}},
      {edit(R"("name":{"type":"string"},)", R"("name":{"type":"string",
            "x-kubernetes-validations":[{"rule":"self.size() < 64","message":"too long"}]},)"),
       {"CRD019:error"}},
      // array -> any value: a widening, a note.
      {edit(R"("tags":{"type":"array","items":{"type":"string"}})",
            R"("tags":{"x-kubernetes-preserve-unknown-fields":true})"),
       {"CRD002:note"}},
      // untyped -> typed: a tightening.
      {edit(R"("raw":{"x-kubernetes-preserve-unknown-fields":true})", R"("raw":{"type":"string"})"),
       {"CRD002:error"}},
      // an open object gets a schema: undeclared fields are pruned.
      {edit(R"("extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true})",
            R"("extra":{"type":"object","properties":{"a":{"type":"string"}}})"),
       {"CRD020:error"}},
      {edit(R"("name":{"type":"string"})", R"("name":{"type":"string","default":""})"),
       {"CRD010:note"}},
      {edit(R"("name":{"type":"string"})", R"("name":{"type":"string","default":"x"})"),
       {"CRD010:warning"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    auto ids = DiffGraded(Crd("[" + Version("v1", base) + "]"),
                          Crd("[" + Version("v1", c.new_spec) + "]"));
    EXPECT_EQ(ids, c.want) << "case " << i;
    ++i;
  }
  // The pattern's message names the field and the pattern, nothing of the seed's example.
  std::vector<Finding> f;
  DiffGraded(Crd("[" + Version("v1", base) + "]"),
             Crd("[" + Version("v1", cases[0].new_spec) + "]"), &f);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "v1 spec.name: pattern \"^[a-z]+$\" added: existing values may now be invalid");
}

TEST(CrdDiff, ZeroValueDefaultsAreOneNote) {
  std::string old_props, new_props;
  for (int i = 0; i < 7; ++i) {
    std::string ref = "\"ref" + std::to_string(i) + "\":{\"type\":\"object\",\"properties\":";
    old_props += (i ? "," : "") + ref + "{\"name\":{\"type\":\"string\"}}}";
    new_props += (i ? "," : "") + ref + "{\"name\":{\"type\":\"string\",\"default\":\"\"}}}";
  }
  std::vector<Finding> f;
  auto ids = DiffGraded(
      Crd("[" + Version("v1", "{\"type\":\"object\",\"properties\":{" + old_props + "}}") + "]"),
      Crd("[" + Version("v1", "{\"type\":\"object\",\"properties\":{" + new_props + "}}") + "]"),
      &f);
  EXPECT_EQ(ids, std::vector<std::string>{"CRD010:note"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "v1: default \"\" added to 7 optional field(s): spec.ref0.name, spec.ref1.name, "
            "spec.ref2.name, spec.ref3.name, spec.ref4.name (+2 more)");
}

// apiextensions.k8s.io/v1beta1: one schema in spec.validation for every version.
std::string V1beta1Crd(const std::string& spec_schema) {
  return R"(apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: cronworkflows.argoproj.io}
spec:
  group: argoproj.io
  names: {kind: CronWorkflow, plural: cronworkflows}
  scope: Namespaced
  version: v1alpha1
  versions:
  - {name: v1alpha1, served: true, storage: true}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec: )" +
         spec_schema + "\n";
}

TEST(CrdDiff, V1beta1LayoutIsRead) {
  const std::string old_spec =
      R"({type: object, properties: {schedule: {type: string}, suspend: {type: boolean}}})";
  const std::string new_spec = R"({type: object, properties: {schedule: {type: string}}})";
  std::vector<Finding> f;
  EXPECT_EQ(DiffGraded(V1beta1Crd(old_spec), V1beta1Crd(new_spec), &f),
            std::vector<std::string>{"CRD001:error"});
  EXPECT_EQ(f[0].message, "v1alpha1 spec.suspend: field removed");
  // v1beta1 -> v1 layout with the same schema: nothing.
  const std::string v1 = Crd(R"([{"name":"v1alpha1","served":true,"storage":true,
      "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":
      {"type":"object","properties":{"schedule":{"type":"string"}}}}}}}])");
  std::string v1_named = v1;
  v1_named.replace(v1_named.find("seedancejobs.seedance.io"), 24, "cronworkflows.argoproj.io");
  EXPECT_EQ(DiffGraded(V1beta1Crd(new_spec), v1_named), std::vector<std::string>{});
  // Neither schema found: reported, never a silent pass.
  const std::string bare = R"(apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: cronworkflows.argoproj.io}
spec: {group: argoproj.io, version: v1alpha1, names: {plural: cronworkflows}}
)";
  EXPECT_EQ(DiffGraded(bare, bare, &f), std::vector<std::string>{"CRD017:warning"});
  EXPECT_NE(f[0].message.find("no openAPIV3Schema in OLD and NEW"), std::string::npos)
      << f[0].message;
}

TEST(CrdDiff, UnservedVersionRemovedNotesStoredVersions) {
  const std::string s = R"({"type":"object","properties":{"replicas":{"type":"integer"}}})";
  std::vector<Finding> f;
  EXPECT_EQ(
      DiffGraded(Crd("[" + Version("v1alpha2", s, false, false) + "," + Version("v1", s) + "]"),
                 Crd("[" + Version("v1", s) + "]"), &f),
      std::vector<std::string>{"CRD021:warning"});
  EXPECT_NE(f[0].message.find("status.storedVersions"), std::string::npos) << f[0].message;
}

TEST(CrdDiff, MessagesSpeakAboutTheUsersObjects) {
  const std::string base =
      R"({"type":"object","required":["replicas"],"properties":{"replicas":{"type":"integer"}}})";
  const std::string opt = R"({"type":"object","properties":{"replicas":{"type":"integer",
      "nullable":true}}})";
  std::vector<Finding> f;
  DiffGraded(Crd("[" + Version("v1", base) + "]"), Crd("[" + Version("v1", opt) + "]"), &f);
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) {
    EXPECT_EQ(x.message.find("v1.8"), std::string::npos) << x.message;
    EXPECT_EQ(x.fix.find("cr.Spec"), std::string::npos) << x.fix;
  }
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

// The formats operators keep: audit.k8s.io/v1 Event JSON lines (the documented schema:
// kind, apiVersion, level, auditID, stage, requestURI, verb, user, objectRef, responseStatus,
// requestReceivedTimestamp, stageTimestamp), client-go reflector errors and httplog lines.
TEST(CrdAudit, AuditEventsReflectorErrorsAndHttplog) {
  auto event = [](const std::string& uri, const std::string& verb, const std::string& ref,
                  const std::string& status, const std::string& ts) {
    return R"({"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1",)"
           R"("stage":"ResponseComplete","requestURI":")" +
           uri + R"(","verb":")" + verb +
           R"(","user":{"username":"system:serviceaccount:ml:ctl"},"sourceIPs":["10.0.0.7"],)"
           R"("objectRef":)" +
           ref + R"(,"responseStatus":)" + status + R"(,"requestReceivedTimestamp":")" + ts +
           R"(","stageTimestamp":")" + ts + "\"}\n";
  };
  const std::string foos =
      R"({"resource":"foos","namespace":"ml","apiGroup":"example.com","apiVersion":"v1beta1"})";
  const std::string log =
      // An unserved resource: 404 with no NotFound Status.
      event("/apis/example.com/v1beta1/namespaces/ml/foos", "list", foos,
            R"({"metadata":{},"code":404})", "2024-03-15T10:22:34.112000Z") +
      event("/apis/example.com/v1beta1/namespaces/ml/foos", "watch", foos,
            R"({"metadata":{},"code":404})", "2024-03-15T10:40:00.000000Z") +
      // A missing object of a served resource: not an unregistered access.
      event(
          "/apis/example.com/v1/namespaces/ml/bars/b1", "get",
          R"({"resource":"bars","namespace":"ml","name":"b1","apiGroup":"example.com","apiVersion":"v1"})",
          R"({"metadata":{},"status":"Failure","reason":"NotFound","code":404})",
          "2024-03-15T10:23:00.000000Z") +
      // A removed built-in API: not a CRD problem.
      event("/apis/extensions/v1beta1/ingresses", "list",
            R"({"resource":"ingresses","apiGroup":"extensions","apiVersion":"v1beta1"})",
            R"({"metadata":{},"code":404})", "2024-03-15T10:24:00.000000Z") +
      "E0315 10:30:00.000001       1 reflector.go:138] pkg/mod/k8s.io/client-go@v0.20.2/tools/"
      "cache/reflector.go:167: Failed to watch *v1alpha1.Widget: failed to list *v1alpha1.Widget: "
      "the server could not find the requested resource (get widgets.example.com)\n"
      "I0315 10:31:00.000001       1 httplog.go:132] \"HTTP\" verb=\"LIST\" "
      "URI=\"/apis/example.org/v1/namespaces/ml/gadgets?limit=500\" latency=\"1.1ms\" "
      "userAgent=\"ctl/v0.0.0\" audit-ID=\"x\" srcIP=\"10.0.0.7:1234\" resp=404\n"
      "I0315 10:31:01.000001       1 httplog.go:132] \"HTTP\" verb=\"GET\" "
      "URI=\"/apis/example.org/v1/namespaces/ml/gadgets/g1\" latency=\"1ms\" resp=404\n";
  LogScan scan = ScanApiserverLog(log);
  EXPECT_EQ(scan.lines, 7);
  EXPECT_EQ(scan.audit_events, 4);
  EXPECT_EQ(scan.klog_lines, 3);
  EXPECT_EQ(scan.access_lines, 4);
  ASSERT_EQ(scan.accesses.size(), 3u);
  const ResourceAccess& f = scan.accesses[0];  // example.com/foos/v1beta1
  EXPECT_EQ(f.resource, "foos");
  EXPECT_EQ(f.version, "v1beta1");
  EXPECT_EQ(f.count, 2);
  EXPECT_EQ(f.first_seen, "03-15 10:22:34.112000");
  EXPECT_EQ(f.last_seen, "03-15 10:40:00.000000");
  const ResourceAccess& w = scan.accesses[1];  // example.com/widgets/v1alpha1
  EXPECT_EQ(w.resource, "widgets");
  EXPECT_EQ(w.version, "v1alpha1");
  EXPECT_EQ(w.first_seen, "03-15 10:30:00.000001");
  const ResourceAccess& g = scan.accesses[2];  // example.org/gadgets/v1, the collection only
  EXPECT_EQ(g.group, "example.org");
  EXPECT_EQ(g.count, 1);

  auto crds = ParseObjects(R"({"kind":"List","items":[
    {"kind":"CustomResourceDefinition","metadata":{"name":"foos.example.com"},
     "spec":{"group":"example.com","names":{"plural":"foos"},
             "versions":[{"name":"v1","served":true,"storage":true}]}}]})",
                           "crds.json");
  ASSERT_TRUE(crds.ok());
  Report r("k8s crd-audit", CrdAuditRules());
  ReportLogScan(scan, "audit.log", &r);
  AuditCrdAccesses(&scan.accesses, *crds, "audit.log", &r);
  EXPECT_EQ(r.Ids(), (std::vector<std::string>{"CRDA002", "CRDA001", "CRDA001"}));
}

TEST(CrdAudit, ReflectorErrorWithoutVersionAndUnrecognisedLog) {
  LogScan scan = ScanApiserverLog(
      "W0315 10:30:00.000001       1 reflector.go:424] failed to list *unstructured.Unstructured: "
      "the server could not find the requested resource (get foos.example.com)\n");
  ASSERT_EQ(scan.accesses.size(), 1u);
  EXPECT_EQ(scan.accesses[0].version, "");
  auto crds =
      ParseObjects(R"({"kind":"CustomResourceDefinition","metadata":{"name":"foos.example.com"},
     "spec":{"group":"example.com","names":{"plural":"foos"},
             "versions":[{"name":"v1","served":true,"storage":true}]}})",
                   "crds.json");
  ASSERT_TRUE(crds.ok());
  Report r("k8s crd-audit", CrdAuditRules());
  AuditCrdAccesses(&scan.accesses, *crds, "c.log", &r);
  EXPECT_EQ(r.Ids(), std::vector<std::string>{"CRDA002"});

  // Nothing recognised: a warning, not a silent pass.
  LogScan none = ScanApiserverLog("hello\nworld\n");
  EXPECT_EQ(none.lines, 2);
  EXPECT_EQ(none.recognised(), 0);
  Report w("k8s crd-audit", CrdAuditRules());
  ReportLogScan(none, "x.log", &w);
  EXPECT_EQ(w.Ids(), std::vector<std::string>{"CRDA004"});
  EXPECT_EQ(w.findings()[0].severity, Severity::kWarning);
}

}  // namespace
}  // namespace rsl::govern
