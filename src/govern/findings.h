// The findings model every governance audit shares (k8s qos/lint/crd-diff/shadow-pods/
// crd-audit/tenancy/qos-check, advise precision): one finding = rule id, severity, the object
// it concerns, a message and a one-line fix. A Report renders as an aligned table, JSON or
// SARIF 2.1.0, and decides the exit code:
//   0 clean (or only warnings/notes without --strict), 1 the tool itself failed,
//   2 warnings (or notes) present and --strict, 3 at least one error-severity finding.
#pragma once

#include <string>
#include <vector>

namespace rsl::govern {

enum class Severity { kNote, kWarning, kError };
const char* SeverityName(Severity s);  //!< "note" | "warning" | "error" (SARIF levels)

//! The Kubernetes (or other) object a finding is about. Empty fields are unknown.
struct ObjectRef {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string file;  //!< source file the object came from
  int line = 0;      //!< 1-based line of the object in `file` (0 = unknown)
  //! "Kind/namespace/name", "Kind/name" when cluster-scoped or namespace unknown.
  std::string ToString() const;
};

struct Finding {
  std::string id;  //!< stable rule id, e.g. QOS003, LINT001, CRD010
  Severity severity = Severity::kWarning;
  ObjectRef object;
  std::string message;
  std::string fix;  //!< one-line remedy ("" when none)
};

//! A rule's metadata, shown in SARIF's tool.driver.rules and in docs/govern.md.
struct RuleInfo {
  std::string id;
  std::string name;  //!< PascalCase short name
  Severity default_severity;
  std::string description;  //!< one sentence
};

inline constexpr int kExitClean = 0;
inline constexpr int kExitWarnings = 2;
inline constexpr int kExitErrors = 3;

class Report {
 public:
  Report(std::string tool, std::vector<RuleInfo> rules)
      : tool_(std::move(tool)), rules_(std::move(rules)) {}

  void Add(Finding f) { findings_.push_back(std::move(f)); }
  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<RuleInfo>& rules() const { return rules_; }
  //! Ids of all findings in order (what table-driven tests compare).
  std::vector<std::string> Ids() const;
  //! Sorts findings by (file, line, id, object) so output is deterministic.
  void Sort();

  //! Columns SEVERITY ID OBJECT MESSAGE FIX, then a one-line summary.
  std::string RenderTable() const;
  //! {"tool":..., "findings":[{"id","severity","object":{kind,namespace,name,file,line},
  //!  "message","fix"}], "summary":{"error":n,"warning":n,"note":n}}
  std::string RenderJson() const;
  //! A SARIF 2.1.0 log with one run (tool.driver name "seedctl <tool>", the rules, results
  //! with ruleId, ruleIndex, level, message, locations with artifactLocation/region and
  //! logicalLocations naming the object, and fixes' description in properties.fix).
  std::string RenderSarif() const;

  //! Exit code per the contract at the top of this file.
  int ExitCode(bool strict) const;

 private:
  std::string tool_;
  std::vector<RuleInfo> rules_;
  std::vector<Finding> findings_;
};

}  // namespace rsl::govern
