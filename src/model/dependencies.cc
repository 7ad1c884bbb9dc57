#include "model/dependencies.h"

#include "base/strings.h"
#include "model/pep.h"

namespace rsl::model {
namespace {

// A dpkg pin is the exact Debian version string (epoch and revision included:
// 1:1.24.2-1), or a release prefix: 2.36.* holds for 2.36, 2.36.1-2, 2.36-9 or 2.36+dfsg-1
// (the prefix ends where a version part does), not for 2.360.
bool DebianVersionMatches(const std::string& declared, const std::string& installed) {
  if (!EndsWith(declared, ".*")) return declared == installed;
  std::string prefix = declared.substr(0, declared.size() - 2);
  if (!StartsWith(installed, prefix)) return false;
  if (installed.size() == prefix.size()) return true;
  char next = installed[prefix.size()];
  return next == '.' || next == '-' || next == '+' || next == '~';
}

const Package* Lookup(const spec::Dependency& dep, const Inspection& env) {
  if (const Package* p = env.FindPython(NormalizeName(dep.name))) return p;
  return env.FindDpkg(dep.name);
}

}  // namespace

std::vector<std::string> DependencyDifferences(const std::vector<spec::Dependency>& declared,
                                               const Inspection& environment) {
  std::vector<std::string> out;
  for (const auto& dep : declared) {
    const Package* p = Lookup(dep, environment);
    if (p == nullptr) {
      out.push_back(dep.name + ": not installed");
      continue;
    }
    bool ok = p->kind == "python" ? VersionMatches(dep.version, p->version)
                                  : DebianVersionMatches(dep.version, p->version);
    if (!ok) {
      out.push_back(dep.name + ": declared " + dep.version + ", environment has " + p->version);
    }
  }
  return out;
}

size_t CountPresent(const std::vector<spec::Dependency>& declared, const Inspection& environment) {
  size_t n = 0;
  for (const auto& dep : declared) n += Lookup(dep, environment) != nullptr ? 1 : 0;
  return n;
}

}  // namespace rsl::model
