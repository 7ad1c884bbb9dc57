// SARIF output validated against the SARIF 2.1.0 JSON schema (tests/govern/testdata), with a
// small JSON-Schema (draft-07) validator for the keywords that schema uses: type, enum,
// const, properties, required, additionalProperties, items, minItems, uniqueItems,
// minimum, maximum, pattern, $ref (local), anyOf, oneOf, allOf. Annotations (description,
// default, format, title) are ignored, as the draft allows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "base/file.h"
#include "govern/crd_audit.h"
#include "govern/lint.h"
#include "govern/qos.h"

namespace rsl::govern {
namespace {

using nlohmann::json;

class SchemaValidator {
 public:
  explicit SchemaValidator(json root) : root_(std::move(root)) {}

  //! Returns every violation as "<json pointer>: <what>".
  std::vector<std::string> Validate(const json& doc) {
    errors_.clear();
    Check(root_, doc, "");
    return errors_;
  }

 private:
  static bool TypeMatches(const std::string& t, const json& v) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer")
      return v.is_number_integer() ||
             (v.is_number_float() && v.get<double>() == static_cast<int64_t>(v.get<double>()));
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }

  const json& Resolve(const std::string& ref) {
    // Only local refs: #/definitions/name
    const std::string prefix = "#/definitions/";
    if (ref.rfind(prefix, 0) != 0 || !root_["definitions"].contains(ref.substr(prefix.size()))) {
      static const json kFalse = json::object({{"not", json::object()}});
      errors_.push_back("unresolvable $ref " + ref);
      return kFalse;
    }
    return root_["definitions"][ref.substr(prefix.size())];
  }

  bool Quiet(const json& schema, const json& v, const std::string& at) {
    std::vector<std::string> saved;
    saved.swap(errors_);
    Check(schema, v, at);
    bool ok = errors_.empty();
    errors_.swap(saved);
    return ok;
  }

  void Check(const json& s, const json& v, const std::string& at) {
    auto fail = [&](const std::string& what) {
      errors_.push_back((at.empty() ? "/" : at) + ": " + what);
    };
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("schema false");
      return;
    }
    if (s.contains("$ref")) {
      Check(Resolve(s["$ref"]), v, at);
      return;  // draft-07: siblings of $ref are ignored
    }
    if (s.contains("not")) {
      if (Quiet(s["not"], v, at)) fail("matches `not`");
    }
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_string())
        ok = TypeMatches(s["type"], v);
      else
        for (const auto& t : s["type"]) ok = ok || TypeMatches(t, v);
      if (!ok) {
        fail("type " + s["type"].dump() + " expected, got " + v.dump().substr(0, 40));
        return;
      }
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const auto& e : s["enum"]) ok = ok || e == v;
      if (!ok) fail("not in enum " + s["enum"].dump());
    }
    if (s.contains("const") && s["const"] != v) fail("not const " + s["const"].dump());
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        fail("below minimum");
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        fail("above maximum");
    }
    if (v.is_string() && s.contains("pattern") &&
        !std::regex_search(v.get<std::string>(),
                           std::regex(s["pattern"].get<std::string>(), std::regex::ECMAScript))) {
      fail("does not match pattern " + s["pattern"].get<std::string>());
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const auto& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) fail("missing required " + r.get<std::string>());
        }
      }
      const json props = s.value("properties", json::object());
      for (const auto& [k, val] : v.items()) {
        if (props.contains(k)) {
          Check(props[k], val, at + "/" + k);
        } else if (s.contains("additionalProperties")) {
          const json& ap = s["additionalProperties"];
          if (ap.is_boolean() && !ap.get<bool>())
            fail("unexpected property " + k);
          else if (ap.is_object())
            Check(ap, val, at + "/" + k);
        }
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) fail("too few items");
      if (s.value("uniqueItems", false)) {
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t j = i + 1; j < v.size(); ++j)
            if (v[i] == v[j])
              fail("items " + std::to_string(i) + " and " + std::to_string(j) + " are equal");
      }
      if (s.contains("items")) {
        for (size_t i = 0; i < v.size(); ++i) Check(s["items"], v[i], at + "/" + std::to_string(i));
      }
    }
    if (s.contains("allOf"))
      for (const auto& sub : s["allOf"]) Check(sub, v, at);
    if (s.contains("anyOf")) {
      bool any = false;
      for (const auto& sub : s["anyOf"]) any = any || Quiet(sub, v, at);
      if (!any) fail("matches none of anyOf");
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& sub : s["oneOf"]) n += Quiet(sub, v, at) ? 1 : 0;
      if (n != 1) fail("matches " + std::to_string(n) + " of oneOf");
    }
  }

  json root_;
  std::vector<std::string> errors_;
};

json LoadSchema() {
  auto text =
      ReadFile(std::string(RSL_SOURCE_DIR) + "/tests/govern/testdata/sarif-schema-2.1.0.json");
  EXPECT_TRUE(text.ok());
  return json::parse(*text);
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

TEST(Sarif, AuditOutputsValidateAgainstTheSchema) {
  SchemaValidator validator(LoadSchema());
  const char* manifests = R"(apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers:
  - name: app
    resources: {requests: {memory: 128Mi, cpu: 100m}, limits: {memory: 2Gi, cpu: 500m}}
---
kind: HorizontalPodAutoscaler
metadata: {name: h, namespace: ns}
spec: {scaleTargetRef: {kind: Deployment, name: missing}, maxReplicas: 2}
)";
  auto objs = ParseObjects(manifests, "m.yaml");
  ASSERT_TRUE(objs.ok());
  Report qos("k8s qos", QosRules());
  AnalyzeQos(*objs, QosOptions{}, &qos);
  Report lint("k8s lint", LintRules());
  Lint(*objs, &lint);
  Report audit("k8s crd-audit", CrdAuditRules());
  auto acc = ExtractUnregisteredAccesses(
      "W0315 10:22:34.112] unregistered resource \"foos.example.com/v1, Resource=foos\"\n");
  AuditCrdAccesses(&acc, {}, "apiserver.log", &audit);
  Report empty("k8s lint", LintRules());
  for (const Report* r : {&qos, &lint, &audit, &empty}) {
    json log = json::parse(r->RenderSarif());
    std::vector<std::string> errs = validator.Validate(log);
    EXPECT_TRUE(errs.empty()) << Joined(errs) << log.dump(2);
  }
  json log = json::parse(lint.RenderSarif());
  EXPECT_EQ(log["version"], "2.1.0");
  const json& run = log["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "seedctl k8s lint");
  ASSERT_FALSE(run["results"].empty());
  // ruleIndex points at the rule with that id.
  for (const auto& res : run["results"]) {
    int idx = res["ruleIndex"];
    EXPECT_EQ(run["tool"]["driver"]["rules"][idx]["id"], res["ruleId"]);
  }
  EXPECT_EQ(run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "m.yaml");
}

TEST(Sarif, ValidatorRejectsBrokenLogs) {
  SchemaValidator validator(LoadSchema());
  Report lint("k8s lint", LintRules());
  lint.Add({"LINT001", Severity::kWarning, {"Pod", "ns", "p", "m.yaml", 3}, "m", "f"});
  json good = json::parse(lint.RenderSarif());
  ASSERT_TRUE(validator.Validate(good).empty()) << Joined(validator.Validate(good));
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* want;
  };
  const Case cases[] = {
      {"no message", [](json& j) { j["runs"][0]["results"][0].erase("message"); },
       "missing required message"},
      {"bad level", [](json& j) { j["runs"][0]["results"][0]["level"] = "fatal"; }, "not in enum"},
      {"extra member", [](json& j) { j["runs"][0]["results"][0]["severity"] = "x"; },
       "unexpected property severity"},
      {"version", [](json& j) { j["version"] = "2.0.0"; }, "not in enum"},
      {"line 0",
       [](json& j) {
         j["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0;
       },
       "below minimum"},
      {"driver name", [](json& j) { j["runs"][0]["tool"]["driver"].erase("name"); },
       "missing required name"},
      {"message without text",
       [](json& j) { j["runs"][0]["results"][0]["message"] = json::object(); },
       "matches none of anyOf"},
      {"duplicate rules",
       [](json& j) {
         auto& r = j["runs"][0]["tool"]["driver"]["rules"];
         r.push_back(r[0]);
       },
       "are equal"},
  };
  for (const auto& c : cases) {
    json bad = good;
    c.edit(bad);
    std::string errs = Joined(validator.Validate(bad));
    EXPECT_NE(errs.find(c.want), std::string::npos) << c.what << ": " << errs;
  }
}

}  // namespace
}  // namespace rsl::govern
