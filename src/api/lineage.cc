#include "api/lineage.h"

#include <filesystem>

#include "api/objects.h"
#include "api/server.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr char kProducer[] = "https://github.com/rsl/rsl-controller";
constexpr char kRunEventSchema[] =
    "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";
constexpr int64_t kMaxFilesWalked = 100000;  // bound the walk of a huge local directory

std::string LocalPath(const std::string& uri) {
  if (StartsWith(uri, "file://")) return uri.substr(7);
  if (!uri.empty() && uri[0] == '/') return uri;
  return "";
}

// OpenLineage dataset naming: namespace = scheme://authority, name = the path.
std::pair<std::string, std::string> DatasetName(const std::string& uri) {
  size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return {"file", uri};
  size_t path = uri.find('/', scheme + 3);
  if (path == std::string::npos) return {uri, "/"};
  std::string ns = uri.substr(0, path);
  if (StartsWith(uri, "file://")) ns = "file";
  return {ns, uri.substr(path)};
}

// An output's URI as the workload wrote it: a step's output published under the committed
// location (a local directory a `local` datasource maps, e.g. /data/models/fraud-v2) is named
// under data.output.uri instead (ceph://models/fraud-v2/train), so lineage consumers see the
// dataset the user named, not where this machine keeps it.
std::string AsWritten(const std::string& uri, const std::string& committed,
                      const std::string& written) {
  auto bare = [](const std::string& u) { return StartsWith(u, "file://") ? u.substr(7) : u; };
  std::string path = bare(uri);
  std::string root = bare(committed);
  if (written.empty() || root.empty() || !StartsWith(path, root)) return uri;
  std::string rest = path.substr(root.size());
  if (!rest.empty() && rest[0] != '/') return uri;  // /data/x2 is not under /data/x
  std::string base = written;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + rest;
}

nlohmann::json Facet(nlohmann::json body, const std::string& schema) {
  body["_producer"] = kProducer;
  body["_schemaURL"] = schema;
  return body;
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  if (bytes < 0) return "?";
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%lldB", static_cast<long long>(bytes));
  } else if (v >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f%s", v, units[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f%s", v, units[u]);
  }
  return buf;
}

std::string UuidFrom(const std::string& seed) {
  std::string h = Sha256Hex(seed);
  h[12] = '4';                                                  // version 4 shape
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20, 12);
}

int64_t LocalSize(const std::string& uri_or_path) {
  std::string path = LocalPath(uri_or_path);
  if (path.empty()) return -1;
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec) return -1;
  if (std::filesystem::is_regular_file(status)) {
    auto n = std::filesystem::file_size(path, ec);
    return ec ? -1 : static_cast<int64_t>(n);
  }
  if (!std::filesystem::is_directory(status)) return -1;
  return TreeBytes(path, kMaxFilesWalked);
}

nlohmann::json LineageJson(const LineageInput& in) {
  nlohmann::json out;
  std::string input_uri;
  nlohmann::json descriptor = nullptr;
  if (in.workload && in.workload->data.input) input_uri = in.workload->data.input->uri;
  int64_t input_bytes = -1;
  for (const auto& e : *in.edges) {
    if (e.relation != "input") continue;
    if (input_uri.empty()) input_uri = e.from;
    if (e.from == input_uri && !e.from_json.empty()) {
      descriptor = nlohmann::json::parse(e.from_json, nullptr, false);
      if (descriptor.is_discarded()) descriptor = nullptr;
    }
  }
  if (descriptor.is_object()) {
    for (const char* key : {"bytes", "size", "sizeBytes"}) {
      if (descriptor.contains(key) && descriptor[key].is_number()) {
        input_bytes = descriptor[key].get<int64_t>();
      }
    }
  }
  if (input_bytes < 0 && !input_uri.empty()) input_bytes = LocalSize(input_uri);
  if (!input_uri.empty()) {
    out["input"] = {{"uri", input_uri}, {"bytes", input_bytes}, {"descriptor", descriptor}};
  } else {
    out["input"] = nullptr;
  }

  nlohmann::json steps = nlohmann::json::array();
  std::vector<std::string> ran;
  for (const auto& s : *in.steps) {
    steps.push_back({{"name", s.name}, {"phase", spec::Name(s.phase)}});
    if (s.phase != spec::StepPhase::kSkipped && s.phase != spec::StepPhase::kPending) {
      ran.push_back(s.name);
    }
  }
  out["steps"] = steps;

  // Outputs: where the run published, with the bytes of each step's artifacts.
  nlohmann::json outputs = nlohmann::json::array();
  int64_t total = 0;
  bool any_known = false;
  for (const auto& a : *in.artifacts) {
    outputs.push_back({{"uri", a.uri},
                       {"bytes", a.bytes},
                       {"step", a.step},
                       {"kind", a.kind},
                       {"digest", a.digest}});
    if (a.bytes >= 0) {
      total += a.bytes;
      any_known = true;
    }
  }
  std::string output_uri = in.run->committed_uri;
  if (output_uri.empty() && in.workload && in.workload->data.output) {
    output_uri = in.workload->data.output->uri;
  }
  int64_t output_bytes = any_known ? total : -1;
  if (!any_known && !in.run->committed_uri.empty()) output_bytes = LocalSize(in.run->committed_uri);
  out["outputs"] = outputs;
  out["output"] = {{"uri", output_uri},
                   {"bytes", output_bytes},
                   {"committed", in.run->commit_state == store::kCommitCommitted}};
  // A later run's commit replaced these outputs (data.output.policy replace).
  std::string superseded_by;
  for (const auto& e : *in.edges) {
    if (e.relation == "superseded-by") superseded_by = e.to;
  }
  if (!superseded_by.empty()) out["output"]["supersededBy"] = superseded_by;

  std::string text;
  if (!input_uri.empty()) text += "Input: " + input_uri + " (" + HumanBytes(input_bytes) + ")\n";
  std::string chain;
  for (const auto& name : ran) chain += "→ " + name + " ";
  if (!output_uri.empty()) {
    chain += "→ Output: " + output_uri;
    if (!superseded_by.empty()) {
      chain += " (superseded by run " + superseded_by + ")";
    } else if (in.run->commit_state == store::kCommitCommitted) {
      chain += " (" + HumanBytes(output_bytes) + ")";
    } else {
      chain += std::string(" (not committed: ") + spec::Name(in.run->phase) + ")";
    }
  }
  if (!chain.empty()) text += std::string(Trim(chain)) + "\n";
  out["text"] = text;
  return out;
}

nlohmann::json OpenLineageEvent(const LineageInput& in, const nlohmann::json& lineage) {
  const store::Run& run = *in.run;
  std::string type = "START";
  using spec::RunPhase;
  if (run.phase == RunPhase::kRunning) type = "RUNNING";
  if (run.phase == RunPhase::kSucceeded) type = "COMPLETE";
  if (run.phase == RunPhase::kFailed || run.phase == RunPhase::kTimedOut ||
      run.phase == RunPhase::kRejected) {
    type = "FAIL";
  }
  if (run.phase == RunPhase::kCancelled) type = "ABORT";
  int64_t when = run.finished_at  ? run.finished_at
                 : run.started_at ? run.started_at
                                  : run.created_at;

  nlohmann::json inputs = nlohmann::json::array();
  if (lineage["input"].is_object()) {
    auto [ns, name] = DatasetName(lineage["input"]["uri"].get<std::string>());
    nlohmann::json ds = {{"namespace", ns}, {"name", name}};
    ds["facets"]["dataSource"] =
        Facet({{"name", ns}, {"uri", lineage["input"]["uri"]}},
              "https://openlineage.io/spec/facets/1-0-0/DatasourceDatasetFacet.json");
    int64_t bytes = lineage["input"]["bytes"].get<int64_t>();
    if (bytes >= 0) {
      ds["inputFacets"]["inputStatistics"] =
          Facet({{"size", bytes}},
                "https://openlineage.io/spec/facets/1-0-0/InputStatisticsInputDatasetFacet.json");
    }
    if (lineage["input"]["descriptor"].is_object()) {
      const auto& d = lineage["input"]["descriptor"];
      if (d.contains("checksum"))
        ds["facets"]["rsl_dataDescriptor"] = Facet(d, "https://rsl.dev/facets/DataDescriptor.json");
    }
    inputs.push_back(ds);
  }
  std::string written =
      in.workload && in.workload->data.output ? in.workload->data.output->uri : "";
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : lineage["outputs"]) {
    auto [ns, name] =
        DatasetName(AsWritten(o["uri"].get<std::string>(), run.committed_uri, written));
    nlohmann::json ds = {{"namespace", ns}, {"name", name}};
    ds["outputFacets"]["outputStatistics"] =
        Facet({{"size", o["bytes"]}},
              "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json");
    outputs.push_back(ds);
  }
  if (outputs.empty() && !lineage["output"]["uri"].get<std::string>().empty() &&
      lineage["output"]["committed"].get<bool>()) {
    auto [ns, name] = DatasetName(
        AsWritten(lineage["output"]["uri"].get<std::string>(), run.committed_uri, written));
    nlohmann::json ds = {{"namespace", ns}, {"name", name}};
    int64_t bytes = lineage["output"]["bytes"].get<int64_t>();
    if (bytes >= 0) {
      ds["outputFacets"]["outputStatistics"] =
          Facet({{"size", bytes}},
                "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json");
    }
    outputs.push_back(ds);
  }
  nlohmann::json ev = {{"eventType", type},
                       {"eventTime", Rfc3339(when)},
                       {"producer", std::string(kProducer) + "/" + kControllerVersion},
                       {"schemaURL", kRunEventSchema},
                       {"run", {{"runId", UuidFrom(run.id)}}},
                       {"job", {{"namespace", in.version->namespace_}, {"name", in.version->name}}},
                       {"inputs", inputs},
                       {"outputs", outputs}};
  ev["run"]["facets"]["rsl_run"] = Facet({{"workloadId", in.version->id},
                                          {"runId", run.id},
                                          {"phase", spec::Name(run.phase)},
                                          {"digest", in.version->digest},
                                          {"steps", lineage["steps"]}},
                                         "https://rsl.dev/facets/RunFacet.json");
  if (type == "FAIL" && !run.failure_code.empty()) {
    ev["run"]["facets"]["errorMessage"] =
        Facet({{"message", run.failure_code + ": " + run.failure_message},
               {"programmingLanguage", "rsl"}},
              "https://openlineage.io/spec/facets/1-0-0/ErrorMessageRunFacet.json");
  }
  return ev;
}

}  // namespace rsl::api
