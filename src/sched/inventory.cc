#include "sched/inventory.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/yaml_load.h"

namespace rsl::sched {
namespace {

int64_t ProbeMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Quantities as the node file writes them: cpu "8"/"500m"/2.5, memory "24Gi"/"1G"/bytes.
bool ParseCpu(const std::string& text, int64_t* out) {
  try {
    size_t used = 0;
    if (EndsWith(text, "m")) {
      *out = std::stoll(text.substr(0, text.size() - 1), &used);
      return used == text.size() - 1 && *out >= 0;
    }
    double v = std::stod(text, &used);
    *out = static_cast<int64_t>(v * 1000 + 0.5);
    return used == text.size() && v >= 0;
  } catch (...) {
    return false;
  }
}

bool ParseMem(const std::string& text, int64_t* out) {
  static const std::vector<std::pair<std::string, int64_t>> kUnits = {
      {"Ki", 1LL << 10},        {"Mi", 1LL << 20},   {"Gi", 1LL << 30},
      {"Ti", 1LL << 40},        {"Pi", 1LL << 50},   {"k", 1000LL},
      {"M", 1000000LL},         {"G", 1000000000LL}, {"T", 1000000000000LL},
      {"P", 1000000000000000LL}};
  try {
    for (const auto& [suffix, mult] : kUnits) {
      if (EndsWith(text, suffix)) {
        size_t used = 0;
        double v = std::stod(text.substr(0, text.size() - suffix.size()), &used);
        *out = static_cast<int64_t>(v * static_cast<double>(mult));
        return used == text.size() - suffix.size() && v >= 0;
      }
    }
    size_t used = 0;
    *out = std::stoll(text, &used);
    return used == text.size() && *out >= 0;
  } catch (...) {
    return false;
  }
}

class NodeFileParser {
 public:
  explicit NodeFileParser(std::string file) : file_(std::move(file)) {}

  Error Bad(const YAML::Node& n, const std::string& path, const std::string& msg,
            const std::string& hint) {
    SourcePos pos{file_, n.Mark().line + 1, n.Mark().column + 1};
    return Error(codes::kSpecInvalid, msg).At(pos).Path(path).Hint(hint);
  }

  Result<Node> ParseNode(const YAML::Node& y, const std::string& path, const Node& probed) {
    if (!y.IsMap()) return Bad(y, path, "expected a mapping", "write `name: ...` keys");
    Node n;
    std::string name = y["name"] ? y["name"].as<std::string>() : kLocalNodeName;
    bool local = name == kLocalNodeName;
    if (local) n = probed;
    n.name = name;
    static const std::vector<std::string> kKeys = {"name",         "cpu",    "memory", "gpus",
                                                   "capabilities", "labels", "state"};
    for (auto it = y.begin(); it != y.end(); ++it) {
      std::string key = it->first.as<std::string>();
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        std::string close = ClosestMatch(key, kKeys);
        return Bad(
            it->first, path + "." + key, "unknown field " + Quote(key),
            close.empty() ? "fields: " + Join(kKeys, ", ") : "did you mean " + Quote(close) + "?");
      }
    }
    if (y["cpu"]) {
      int64_t v;
      if (!ParseCpu(y["cpu"].as<std::string>(), &v)) {
        return Bad(y["cpu"], path + ".cpu", "bad cpu quantity " + Quote(y["cpu"].as<std::string>()),
                   "write e.g. 8, \"500m\" or 2.5");
      }
      n.cpu_millis = v;
    }
    if (y["memory"]) {
      int64_t v;
      if (!ParseMem(y["memory"].as<std::string>(), &v)) {
        return Bad(y["memory"], path + ".memory",
                   "bad memory quantity " + Quote(y["memory"].as<std::string>()),
                   "write e.g. 32Gi, 512Mi or 1G");
      }
      n.memory_bytes = v;
    }
    if (y["state"]) {
      auto state = spec::ParseNodeState(y["state"].as<std::string>());
      if (!state.ok()) {
        return Bad(y["state"], path + ".state", state.error().message, state.error().hint);
      }
      n.state = *state;
    }
    if (y["capabilities"]) {
      for (const auto& c : y["capabilities"]) n.capabilities.push_back(c.as<std::string>());
    }
    if (y["labels"]) {
      for (auto it = y["labels"].begin(); it != y["labels"].end(); ++it) {
        n.labels[it->first.as<std::string>()] = it->second.as<std::string>();
      }
    }
    if (y["gpus"]) {
      if (!y["gpus"].IsSequence()) {
        return Bad(y["gpus"], path + ".gpus", "expected a list of devices",
                   "write `gpus: [{model: A10, count: 1}]`");
      }
      for (size_t i = 0; i < y["gpus"].size(); ++i) {
        const YAML::Node& g = y["gpus"][i];
        std::string gpath = path + ".gpus[" + std::to_string(i) + "]";
        if (!g.IsMap() || !g["model"]) {
          return Bad(g, gpath, "a device needs a model", "write `{model: A10, count: 1}`");
        }
        Device d;
        d.model = g["model"].as<std::string>();
        d.probed = false;
        if (g["memory"] && !ParseMem(g["memory"].as<std::string>(), &d.memory_bytes)) {
          return Bad(g["memory"], gpath + ".memory", "bad memory quantity", "write e.g. 24Gi");
        }
        d.capabilities = CatalogCapabilities(d.model);
        if (g["capabilities"]) {
          d.capabilities.clear();
          for (const auto& c : g["capabilities"]) d.capabilities.push_back(c.as<std::string>());
        }
        int64_t count = g["count"] ? g["count"].as<int64_t>() : 1;
        if (count < 1 || count > 1024) {
          return Bad(g["count"], gpath + ".count", "count must be 1..1024", "write e.g. count: 2");
        }
        for (int64_t k = 0; k < count; ++k) n.gpus.push_back(d);
      }
    }
    return n;
  }

 private:
  std::string file_;
};

}  // namespace

std::vector<std::string> CatalogCapabilities(const std::string& model) {
  struct Entry {
    const char* key;
    std::vector<std::string> caps;
  };
  // Built-in catalog: lower-case substring of the model name -> capabilities.
  static const std::vector<Entry> kCatalog = {
      {"h200",
       {"tensor_core", "fp16_support", "bf16_support", "fp8_support", "nvlink", "high_memory"}},
      {"h100",
       {"tensor_core", "fp16_support", "bf16_support", "fp8_support", "nvlink", "high_memory"}},
      {"a100", {"tensor_core", "fp16_support", "bf16_support", "nvlink", "high_memory"}},
      {"a10", {"tensor_core", "fp16_support", "bf16_support", "low_latency"}},
      {"l4", {"tensor_core", "fp16_support", "bf16_support", "fp8_support", "low_latency"}},
      {"t4", {"tensor_core", "fp16_support", "low_latency"}},
      {"v100", {"tensor_core", "fp16_support", "nvlink"}},
  };
  std::string lower = ToLower(model);
  for (const auto& e : kCatalog) {
    if (lower.find(e.key) != std::string::npos) return e.caps;
  }
  return {};
}

std::string DescribeDevice(const Device& d) {
  std::string s = d.model;
  if (d.memory_bytes > 0) s += " " + std::to_string(d.memory_bytes >> 30) + "Gi";
  if (!d.probed) s += " (declared, not probed)";
  return s;
}

std::vector<Device> ParseNvidiaSmi(const std::string& csv) {
  std::vector<Device> out;
  for (const auto& line : Split(csv, '\n')) {
    auto fields = Split(line, ',');
    if (fields.size() < 2) continue;
    Device d;
    d.model = std::string(Trim(fields[0]));
    try {
      d.memory_bytes = std::stoll(std::string(Trim(fields[1]))) * 1024 * 1024;  // MiB
    } catch (...) {
      continue;
    }
    if (d.model.empty()) continue;
    d.capabilities = CatalogCapabilities(d.model);
    d.probed = true;
    out.push_back(d);
  }
  return out;
}

Node ProbeLocalNode(const std::string& nvidia_smi) {
  Node n;
  n.name = kLocalNodeName;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  n.cpu_millis = (cores > 0 ? cores : 1) * 1000;
  n.memory_bytes = ProbeMemoryBytes();
  n.labels["hostname"] = Hostname();
  if (!nvidia_smi.empty()) {
    std::string cmd =
        nvidia_smi + " --query-gpu=name,memory.total --format=csv,noheader,nounits 2>/dev/null";
    if (FILE* p = popen(cmd.c_str(), "r")) {
      std::string out;
      char buf[4096];
      size_t k;
      while ((k = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, k);
      if (pclose(p) == 0) n.gpus = ParseNvidiaSmi(out);
    }
  }
  return n;
}

Result<std::vector<Node>> ParseNodeFile(const std::string& yaml, const std::string& file,
                                        const Node& probed) {
  auto loaded = spec::LoadYaml(yaml, file);
  if (!loaded.ok()) {
    Error e = loaded.error();
    return e.Hint("the node file is YAML: `nodes: [{name: local, gpus: [{model: A10}]}]`");
  }
  YAML::Node root = *loaded;
  NodeFileParser parser(file);
  std::vector<Node> nodes;
  try {
    if (root.IsMap() && root["nodes"]) {
      if (!root["nodes"].IsSequence()) {
        return parser.Bad(root["nodes"], "nodes", "expected a list of nodes",
                          "write `nodes: [{name: local}]`");
      }
      bool has_local = false;
      for (size_t i = 0; i < root["nodes"].size(); ++i) {
        auto n = parser.ParseNode(root["nodes"][i], "nodes[" + std::to_string(i) + "]", probed);
        if (!n.ok()) return n.error();
        has_local |= n->name == kLocalNodeName;
        nodes.push_back(std::move(*n));
      }
      if (!has_local) nodes.insert(nodes.begin(), probed);
    } else if (root.IsMap()) {
      auto n = parser.ParseNode(root, "node", probed);
      if (!n.ok()) return n.error();
      nodes.push_back(std::move(*n));
    } else {
      return Error(codes::kSpecInvalid, "the node file must be a mapping")
          .At(SourcePos{file, 1, 1})
          .Hint("write `nodes: [{name: local, gpus: [{model: A10}]}]`");
    }
  } catch (const YAML::Exception& e) {
    return Error(codes::kSpecInvalid, e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
        .Hint("check the value's type");
  }
  return nodes;
}

Result<std::vector<Node>> LoadNodeFile(const std::string& path, const Node& probed) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParseNodeFile(*text, path, probed);
}

}  // namespace rsl::sched
