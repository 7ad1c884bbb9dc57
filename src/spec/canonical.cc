// The canonical form is itself a valid AIWorkload in JSON (JSON is YAML): every value
// normalised (quantities as FormatCpu/FormatBytes, durations as FormatDuration, the gpu long
// form, the pipeline as {atomic, steps}, the schema as normalised Avro JSON, defaults filled
// in), keys sorted. So FromCanonicalJson is ParseWorkload, and a stored version validates
// exactly like the file it came from.
#include "spec/canonical.h"

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "spec/parse.h"
#include "spec/quantity.h"

namespace rsl::spec {

namespace {

using nlohmann::json;

json ResourcesJson(const Resources& r) {
  json j = json::object();
  if (r.cpu_millis) j["cpu"] = FormatCpu(*r.cpu_millis);
  if (r.memory_bytes) j["memory"] = FormatBytes(*r.memory_bytes);
  if (r.gpu) {
    json g;
    g["count"] = r.gpu->count;
    g["capability"] = r.gpu->capabilities;
    if (r.gpu->memory_bytes) g["memory"] = FormatBytes(*r.gpu->memory_bytes);
    j["gpu"] = g;
  }
  if (r.autoscaling) {
    j["autoscaling"] = {{"targetUtilization", r.autoscaling->target_utilization},
                        {"minReplicas", r.autoscaling->min_replicas},
                        {"maxReplicas", r.autoscaling->max_replicas},
                        {"scaleDownDelay", FormatDuration(r.autoscaling->scale_down_delay_ms)}};
  }
  return j;
}

json TensorsJson(const std::vector<TensorSpec>& tensors) {
  json list = json::array();
  for (const auto& t : tensors) {
    json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
    if (t.range) j["constraints"] = {{"range", {t.range->first, t.range->second}}};
    list.push_back(j);
  }
  return list;
}

json DataJson(const DataSpec& d) {
  json j = json::object();
  if (d.input) {
    json in = {{"uri", d.input->uri}};
    if (!d.input->format.empty()) in["format"] = d.input->format;
    if (d.input->schema) in["schema"] = d.input->schema->ToJson();
    const Quality& q = d.input->quality;
    json quality = json::object();
    if (q.completeness) quality["completeness"] = *q.completeness;
    if (q.uniqueness) quality["uniqueness"] = *q.uniqueness;
    if (q.unique_key) quality["uniqueKey"] = *q.unique_key;
    if (q.freshness_ms) quality["freshness"] = FormatDuration(*q.freshness_ms);
    if (!quality.empty()) in["quality"] = quality;
    j["input"] = in;
  }
  if (d.output) {
    json out = {{"uri", d.output->uri}};
    if (!d.output->schema_ref.empty()) out["schemaRef"] = d.output->schema_ref;
    if (!d.output->features.empty()) {
      json fs = json::array();
      for (const auto& f : d.output->features) fs.push_back({{"name", f.name}, {"type", f.type}});
      out["features"] = fs;
    }
    j["output"] = out;
  }
  return j;
}

json StepJson(const Step& s) {
  json j = {{"name", s.name}, {"keepOnFailure", s.keep_on_failure}, {"serving", s.serving}};
  if (!s.image.empty()) j["image"] = s.image;
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.args.empty()) j["args"] = s.args;
  if (!s.env.empty()) j["env"] = s.env;
  if (!s.depends_on.empty()) j["dependsOn"] = s.depends_on;
  if (!s.when.empty()) j["when"] = s.when;
  json res = ResourcesJson(s.resources);
  if (!res.empty()) j["resources"] = res;
  json retry = {{"maxRetries", s.retry.max_retries},
                {"backoff", FormatDuration(s.retry.backoff_ms)},
                {"backoffFactor", s.retry.backoff_factor}};
  if (s.retry.max_backoff_ms) retry["maxBackoff"] = FormatDuration(*s.retry.max_backoff_ms);
  j["retryPolicy"] = retry;
  if (!s.env_from.empty()) {
    json list = json::array();
    for (const auto& e : s.env_from) {
      list.push_back({{e.kind == EnvFrom::Kind::kSecret ? "secretRef" : "configMapRef", e.name}});
    }
    j["envFrom"] = list;
  }
  if (s.timeout_ms) j["timeout"] = FormatDuration(*s.timeout_ms);
  if (!s.outputs.empty()) j["outputs"] = TensorsJson(s.outputs);
  return j;
}

}  // namespace

std::string CanonicalJson(const Workload& w) {
  json metadata = {{"name", w.name}, {"namespace", w.namespace_}};
  if (!w.labels.empty()) metadata["labels"] = w.labels;
  if (!w.annotations.empty()) metadata["annotations"] = w.annotations;
  json spec = json::object();
  json res = ResourcesJson(w.resources);
  if (!res.empty()) spec["resources"] = res;
  json data = DataJson(w.data);
  if (!data.empty()) spec["data"] = data;
  if (w.model) {
    const ModelSpec& m = *w.model;
    json model = {{"framework", m.framework}, {"version", m.version}};
    if (!m.build_fingerprint.empty()) model["buildFingerprint"] = m.build_fingerprint;
    if (!m.dependencies.empty()) {
      json deps = json::array();
      for (const auto& d : m.dependencies) deps.push_back(d.ToString());
      model["dependencies"] = deps;
    }
    if (!m.inputs.empty() || !m.outputs.empty()) {
      json sig = json::object();
      if (!m.inputs.empty()) sig["inputs"] = TensorsJson(m.inputs);
      if (!m.outputs.empty()) sig["outputs"] = TensorsJson(m.outputs);
      model["signature"] = sig;
    }
    spec["model"] = model;
  }
  json steps = json::array();
  for (const auto& s : w.pipeline.steps) steps.push_back(StepJson(s));
  spec["pipeline"] = {{"atomic", w.pipeline.atomic}, {"steps", steps}};
  if (w.timeout_ms) spec["timeout"] = FormatDuration(*w.timeout_ms);
  json root = {
      {"apiVersion", w.api_version}, {"kind", w.kind}, {"metadata", metadata}, {"spec", spec}};
  return root.dump();
}

std::string SpecDigest(const Workload& workload) {
  return "sha256:" + Sha256Hex(CanonicalJson(workload));
}

Result<Workload> FromCanonicalJson(const std::string& json_text) {
  ParseResult r = ParseWorkload(json_text, "<canonical>");
  if (!r.ok()) return r.errors.front();
  r.workload.positions.clear();
  r.workload.source_file.clear();
  return std::move(r.workload);
}

}  // namespace rsl::spec
