#include "model/env_inspect.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "model/pep.h"
#include "model/subprocess.h"

namespace rsl::model {
namespace {

// Metadata headers end at the first blank line; Name and Version come first in practice, but
// a file may be long (the description follows), so only this much is read.
constexpr size_t kMaxMetadataHeaderBytes = 256 << 10;

// The interpreter prints its search path and version as JSON.
constexpr char kQueryScript[] =
    "import json, platform, sys; print(json.dumps({'path': sys.path, "
    "'version': platform.python_version(), 'executable': sys.executable}))";

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Reads the RFC 822 style header block of METADATA / PKG-INFO.
std::map<std::string, std::string> ReadMetadataHeaders(const std::string& path) {
  std::map<std::string, std::string> headers;
  std::ifstream in(path);
  std::string line;
  size_t read = 0;
  while (std::getline(in, line) && read < kMaxMetadataHeaderBytes) {
    read += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') continue;  // folded continuation
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = ToLower(Trim(line.substr(0, colon)));
    if (!headers.count(key)) headers[key] = std::string(Trim(line.substr(colon + 1)));
  }
  return headers;
}

// "torch-2.1.2+cu118.dist-info" -> {"torch", "2.1.2+cu118"} (fallback when METADATA lacks them).
std::pair<std::string, std::string> SplitDistDirName(const std::string& stem) {
  auto dash = stem.find('-');
  if (dash == std::string::npos) return {stem, ""};
  std::string version = stem.substr(dash + 1);
  auto py = version.find("-py");  // "foo-1.0-py3.11.egg-info"
  if (py != std::string::npos) version = version.substr(0, py);
  return {stem.substr(0, dash), version};
}

}  // namespace

const Package* Inspection::FindPython(const std::string& normalized_name) const {
  for (const auto& p : packages) {
    if (p.kind == "python" && p.normalized == normalized_name) return &p;
  }
  return nullptr;
}

const Package* Inspection::FindDpkg(const std::string& name) const {
  for (const auto& p : packages) {
    if (p.kind == "dpkg" && p.normalized == name) return &p;
  }
  return nullptr;
}

size_t Inspection::CountKind(const std::string& kind) const {
  return static_cast<size_t>(std::count_if(packages.begin(), packages.end(),
                                           [&](const Package& p) { return p.kind == kind; }));
}

std::vector<Package> ScanDistributions(const std::vector<std::string>& dirs) {
  std::map<std::string, Package> found;
  for (const auto& dir : dirs) {
    for (const auto& entry : ListDir(dir)) {
      std::string full = dir + "/" + entry;
      std::string metadata;
      std::string stem;
      if (EndsWith(entry, ".dist-info")) {
        metadata = full + "/METADATA";
        stem = entry.substr(0, entry.size() - 10);
      } else if (EndsWith(entry, ".egg-info")) {
        metadata = IsDirectory(full) ? full + "/PKG-INFO" : full;
        stem = entry.substr(0, entry.size() - 9);
      } else {
        continue;
      }
      if (!PathExists(metadata)) continue;
      auto headers = ReadMetadataHeaders(metadata);
      auto [dir_name, dir_version] = SplitDistDirName(stem);
      Package p;
      p.name = headers.count("name") ? headers["name"] : dir_name;
      p.version = headers.count("version") ? headers["version"] : dir_version;
      p.normalized = NormalizeName(p.name);
      p.kind = "python";
      p.location = metadata;
      if (p.normalized.empty() || p.version.empty()) continue;
      found.emplace(p.normalized, std::move(p));  // first directory wins
    }
  }
  std::vector<Package> out;
  for (auto& [name, p] : found) out.push_back(std::move(p));
  return out;
}

std::vector<Package> ParseDpkgStatus(const std::string& text, const std::string& location) {
  std::vector<Package> out;
  std::map<std::string, std::string> fields;
  auto flush = [&]() {
    if (fields.count("package") && fields.count("version") &&
        EndsWith(fields["status"], "installed") && !EndsWith(fields["status"], "not-installed") &&
        StartsWith(fields["status"], "install ok")) {
      Package p;
      p.name = fields["package"];
      p.normalized = p.name;
      p.version = fields["version"];
      p.kind = "dpkg";
      p.location = location;
      out.push_back(std::move(p));
    }
    fields.clear();
  };
  for (const auto& raw : Split(text, '\n')) {
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) {
      flush();
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    fields[ToLower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  flush();
  std::sort(out.begin(), out.end(),
            [](const Package& a, const Package& b) { return a.name < b.name; });
  return out;
}

std::string PackageSetDigest(const std::vector<Package>& packages) {
  std::vector<std::string> lines;
  for (const auto& p : packages)
    lines.push_back(p.kind + " " + p.normalized + " " + p.version + "\n");
  std::sort(lines.begin(), lines.end());
  Sha256 h;
  for (const auto& l : lines) h.Update(l);
  return "sha256:" + h.HexDigest();
}

Result<Inspection> InspectPython(const std::string& python, int64_t timeout_ms) {
  auto run = RunProcess({python, "-E", "-s", "-c", kQueryScript},
                        {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LC_ALL", "C.UTF-8"}},
                        timeout_ms, /*merge_stderr=*/true);
  if (!run.ok()) {
    Error e = run.error();
    e.Hint("--python must name a Python interpreter that runs on this machine");
    return e;
  }
  auto json = nlohmann::json::parse(run->out, nullptr, false);
  if (run->exit_code != 0 || json.is_discarded() || !json.is_object() || !json["path"].is_array()) {
    std::string out = run->out.substr(0, 200);
    return Error(codes::kIoError, python + " is not a working Python interpreter (exit " +
                                      std::to_string(run->exit_code) + "): " + out)
        .Value(python)
        .Hint("--python must name a Python 3 interpreter");
  }
  Inspection ins;
  ins.interpreter = python;
  if (json["version"].is_string()) ins.python_version = json["version"].get<std::string>();
  for (const auto& entry : json["path"]) {
    if (!entry.is_string()) continue;
    std::string dir = entry.get<std::string>();
    if (dir.empty() || !IsDirectory(dir)) continue;  // '' (cwd) and zip files hold no dists
    ins.search_path.push_back(dir);
  }
  ins.packages = ScanDistributions(ins.search_path);
  ins.digest = PackageSetDigest(ins.packages);
  return ins;
}

Result<Inspection> InspectRoot(const std::string& root_in) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!IsDirectory(root)) {
    return Error(codes::kIoError, "root " + root + " is not a directory")
        .Value(root)
        .Hint("--root must name an unpacked root file system");
  }
  Inspection ins;
  for (const char* candidate :
       {"/usr/local/bin/python3", "/usr/bin/python3", "/opt/conda/bin/python"}) {
    if (PathExists(root + candidate)) {
      ins.interpreter = root + candidate;
      break;
    }
  }
  auto add_versioned = [&](const std::string& lib, const std::vector<std::string>& leaves) {
    for (const auto& entry : ListDir(lib)) {
      if (!StartsWith(entry, "python3")) continue;
      if (entry == "python3") continue;  // handled on its own below (Debian's shared dir)
      for (const auto& leaf : leaves) {
        std::string dir = lib + "/" + entry + "/" + leaf;
        if (IsDirectory(dir)) ins.search_path.push_back(dir);
      }
    }
  };
  add_versioned(root + "/usr/local/lib", {"dist-packages", "site-packages"});
  if (IsDirectory(root + "/usr/lib/python3/dist-packages")) {
    ins.search_path.push_back(root + "/usr/lib/python3/dist-packages");
  }
  add_versioned(root + "/usr/lib", {"dist-packages", "site-packages"});
  add_versioned(root + "/opt/conda/lib", {"site-packages"});
  ins.packages = ScanDistributions(ins.search_path);
  std::string status_path = root + "/var/lib/dpkg/status";
  if (PathExists(status_path)) {
    auto text = ReadFile(status_path);
    if (!text.ok()) return text.error();
    for (auto& p : ParseDpkgStatus(*text, status_path)) ins.packages.push_back(std::move(p));
  }
  ins.digest = PackageSetDigest(ins.packages);
  return ins;
}

}  // namespace rsl::model
