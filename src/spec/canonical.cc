// The canonical form is itself a valid AIWorkload in JSON (JSON is YAML): every value
// normalised (quantities as FormatCpu/FormatBytes, durations as FormatDuration, the gpu long
// form, the pipeline as {atomic, steps}, the schema as normalised Avro JSON, defaults filled
// in), keys sorted. So FromCanonicalJson is ParseWorkload, and a stored version validates
// exactly like the file it came from.
//
// The text is written directly, byte for byte what nlohmann::json's dump() gave when the form
// was built as a json tree (the digests of stored versions are sha256 of this text, so it must
// never change): objects' keys in std::map order (byte-wise), "," and ":" without spaces,
// strings escaped as dump() escapes them, numbers as dump() prints them. Building and
// destroying the tree cost ~10x the text itself for a pipeline of many steps.
// canonical_test.cc keeps the tree-based version and checks they agree.
#include "spec/canonical.h"

#include <algorithm>

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/sha256.h"
#include "spec/parse.h"
#include "spec/quantity.h"

namespace rsl::spec {

namespace {

class Writer {
 public:
  std::string out;

  //! As dump() writes a string (ensure_ascii off): '"' '\\' and 0x00-0x1F escaped ("\b" "\t"
  //! "\n" "\f" "\r" short, the rest "\u00xx"), every other ASCII byte as is. A string with
  //! any non-ASCII byte goes to nlohmann itself: it keeps valid UTF-8 as is and throws
  //! type_error 316 on invalid UTF-8 (the parser rejects such files, so only a Workload built
  //! in code can hold one); delegating keeps both exactly as they were.
  void Str(std::string_view s) {
    const size_t mark = out.size();
    out += '"';
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
      if (c >= 0x80) {
        out.resize(mark);
        out += nlohmann::json(std::string(s)).dump();
        return;
      }
      out.append(s.data() + start, i - start);
      start = i + 1;
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case 0x08:
          out += "\\b";
          break;
        case 0x09:
          out += "\\t";
          break;
        case 0x0A:
          out += "\\n";
          break;
        case 0x0C:
          out += "\\f";
          break;
        case 0x0D:
          out += "\\r";
          break;
        default: {
          static constexpr char kHex[] = "0123456789abcdef";
          const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
          out.append(esc, sizeof esc);
        }
      }
    }
    out.append(s.data() + start, s.size() - start);
    out += '"';
  }

  void Int(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }

  void Bool(bool b) { out += b ? "true" : "false"; }

  //! nlohmann prints it (shortest round-trip digits, ".0" on whole numbers, "null" for
  //! NaN/inf); the last one is remembered, as every step has a backoffFactor, mostly 1.
  void Double(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    if (!has_last_double_ || bits != last_double_bits_) {
      last_double_text_ = nlohmann::json(d).dump();
      last_double_bits_ = bits;
      has_last_double_ = true;
    }
    out += last_double_text_;
  }

  //! "[" each(0) "," each(1) ... "]": each(i) writes element i.
  template <class Each>
  void Array(size_t n, Each each) {
    out += '[';
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      each(i);
    }
    out += ']';
  }

  void StrArray(const std::vector<std::string>& v) {
    Array(v.size(), [&](size_t i) { Str(v[i]); });
  }

  void StrMap(const std::map<std::string, std::string>& m) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : m) {
      if (!first) out += ',';
      first = false;
      Str(k);
      out += ':';
      Str(v);
    }
    out += '}';
  }

 private:
  bool has_last_double_ = false;
  uint64_t last_double_bits_ = 0;
  std::string last_double_text_;
};

//! One JSON object's members; the caller names them in sorted (std::map) order.
class Object {
 public:
  explicit Object(Writer& w) : w_(w) { w_.out += '{'; }
  //! `key` is a literal needing no escapes.
  Writer& Key(std::string_view key) {
    if (!first_) w_.out += ',';
    first_ = false;
    w_.out += '"';
    w_.out += key;
    w_.out += "\":";
    return w_;
  }
  void End() { w_.out += '}'; }

 private:
  Writer& w_;
  bool first_ = true;
};

bool Empty(const Resources& r) {
  return !r.cpu_millis && !r.memory_bytes && !r.gpu && !r.autoscaling;
}

void WriteResources(Writer& w, const Resources& r) {
  Object o(w);
  if (r.autoscaling) {
    const Autoscaling& a = *r.autoscaling;
    Object as(o.Key("autoscaling"));
    as.Key("maxReplicas").Int(a.max_replicas);
    as.Key("minReplicas").Int(a.min_replicas);
    as.Key("scaleDownDelay").Str(FormatDuration(a.scale_down_delay_ms));
    as.Key("targetUtilization").Int(a.target_utilization);
    as.End();
  }
  if (r.cpu_millis) o.Key("cpu").Str(FormatCpu(*r.cpu_millis));
  if (r.gpu) {
    Object g(o.Key("gpu"));
    g.Key("capability").StrArray(r.gpu->capabilities);
    g.Key("count").Int(r.gpu->count);
    if (r.gpu->memory_bytes) g.Key("memory").Str(FormatBytes(*r.gpu->memory_bytes));
    g.End();
  }
  if (r.memory_bytes) o.Key("memory").Str(FormatBytes(*r.memory_bytes));
  o.End();
}

void WriteTensors(Writer& w, const std::vector<TensorSpec>& tensors) {
  w.Array(tensors.size(), [&](size_t k) {
    const TensorSpec& t = tensors[k];
    Object o(w);
    if (t.range) {
      Object c(o.Key("constraints"));
      c.Key("range").Array(2, [&](size_t i) { w.Double(i ? t.range->second : t.range->first); });
      c.End();
    }
    o.Key("dtype").Str(t.dtype);
    o.Key("name").Str(t.name);
    o.Key("shape").Array(t.shape.size(), [&](size_t i) { w.Int(t.shape[i]); });
    o.End();
  });
}

void WriteData(Writer& w, const DataSpec& d) {
  Object o(w);
  if (d.input) {
    const DataInput& in = *d.input;
    Object i(o.Key("input"));
    if (!in.format.empty()) i.Key("format").Str(in.format);
    const Quality& q = in.quality;
    if (q.completeness || q.uniqueness || q.unique_key || q.freshness_ms) {
      Object qo(i.Key("quality"));
      if (q.completeness) qo.Key("completeness").Double(*q.completeness);
      if (q.freshness_ms) qo.Key("freshness").Str(FormatDuration(*q.freshness_ms));
      if (q.unique_key) qo.Key("uniqueKey").Str(*q.unique_key);
      if (q.uniqueness) qo.Key("uniqueness").Double(*q.uniqueness);
      qo.End();
    }
    if (in.schema) i.Key("schema").Str(in.schema->ToJson());
    i.Key("uri").Str(in.uri);
    i.End();
  }
  if (d.output) {
    const DataOutput& out = *d.output;
    Object ou(o.Key("output"));
    if (!out.features.empty()) {
      ou.Key("features").Array(out.features.size(), [&](size_t k) {
        Object fo(w);
        fo.Key("name").Str(out.features[k].name);
        fo.Key("type").Str(out.features[k].type);
        fo.End();
      });
    }
    // Omitted when it is the default, so the canonical form (and hash) of every spec
    // written before the field existed stays as it was.
    if (out.policy != OutputPolicy::kReplace) ou.Key("policy").Str(OutputPolicyName(out.policy));
    if (!out.schema_ref.empty()) ou.Key("schemaRef").Str(out.schema_ref);
    ou.Key("uri").Str(out.uri);
    ou.End();
  }
  o.End();
}

void WriteModel(Writer& w, const ModelSpec& m) {
  Object o(w);
  if (!m.build_fingerprint.empty()) o.Key("buildFingerprint").Str(m.build_fingerprint);
  if (!m.dependencies.empty()) {
    o.Key("dependencies").Array(m.dependencies.size(), [&](size_t i) {
      w.Str(m.dependencies[i].ToString());
    });
  }
  o.Key("framework").Str(m.framework);
  if (!m.inputs.empty() || !m.outputs.empty()) {
    Object sig(o.Key("signature"));
    if (!m.inputs.empty()) WriteTensors(sig.Key("inputs"), m.inputs);
    if (!m.outputs.empty()) WriteTensors(sig.Key("outputs"), m.outputs);
    sig.End();
  }
  o.Key("version").Str(m.version);
  o.End();
}

void WritePostProcess(Writer& w, const PostProcess& h) {
  Object o(w);
  std::vector<std::string> on;
  if (h.on_success && h.on_failure) {
    on = {"always"};
  } else {
    on = {h.on_success ? "success" : "failure"};
  }
  o.Key("on").StrArray(on);
  o.Key("required").Bool(h.required);
  {
    Object hook(o.Key("webhook"));
    if (!h.body.empty()) hook.Key("body").Str(h.body);
    if (!h.headers.empty()) {
      std::vector<const HookHeader*> sorted;
      for (const auto& hd : h.headers) sorted.push_back(&hd);
      std::sort(sorted.begin(), sorted.end(),
                [](const HookHeader* a, const HookHeader* b) { return a->name < b->name; });
      Object headers(hook.Key("headers"));
      for (const HookHeader* hd : sorted) {
        if (hd->secret_name.empty()) {
          headers.Key(hd->name).Str(hd->value);
        } else {
          Object ref(headers.Key(hd->name));
          ref.Key("key").Str(hd->secret_key);
          ref.Key("secretRef").Str(hd->secret_name);
          ref.End();
        }
      }
      headers.End();
    }
    hook.Key("method").Str(h.method);
    hook.Key("retries").Int(h.retries);
    hook.Key("timeout").Str(FormatDuration(h.timeout_ms));
    hook.Key("url").Str(h.url);
    hook.End();
  }
  if (!h.when.empty()) o.Key("when").Str(h.when);
  o.End();
}

void WriteStep(Writer& w, const Step& s) {
  Object o(w);
  if (!s.args.empty()) o.Key("args").StrArray(s.args);
  if (!s.command.empty()) o.Key("command").StrArray(s.command);
  if (!s.depends_on.empty()) o.Key("dependsOn").StrArray(s.depends_on);
  if (!s.env.empty()) o.Key("env").StrMap(s.env);
  if (!s.env_from.empty()) {
    o.Key("envFrom").Array(s.env_from.size(), [&](size_t i) {
      Object e(w);
      e.Key(s.env_from[i].kind == EnvFrom::Kind::kSecret ? "secretRef" : "configMapRef")
          .Str(s.env_from[i].name);
      e.End();
    });
  }
  if (!s.image.empty()) o.Key("image").Str(s.image);
  o.Key("keepOnFailure").Bool(s.keep_on_failure);
  o.Key("name").Str(s.name);
  if (!s.outputs.empty()) WriteTensors(o.Key("outputs"), s.outputs);
  if (s.serving && s.port) o.Key("port").Int(*s.port);
  if (!s.post_process.empty()) {
    o.Key("postProcess").Array(s.post_process.size(), [&](size_t i) {
      WritePostProcess(w, s.post_process[i]);
    });
  }
  if (s.serving) {
    Object p(o.Key("readinessProbe"));
    p.Key("failureThreshold").Int(s.readiness.failure_threshold);
    {
      Object g(p.Key("httpGet"));
      g.Key("path").Str(s.readiness.path);
      if (s.readiness.port) g.Key("port").Int(*s.readiness.port);
      g.End();
    }
    p.Key("periodSeconds").Int(s.readiness.period_ms / 1000);
    p.End();
    o.Key("readyTimeout").Str(FormatDuration(s.ready_timeout_ms));
  }
  if (!Empty(s.resources)) WriteResources(o.Key("resources"), s.resources);
  {
    Object r(o.Key("retryPolicy"));
    r.Key("backoff").Str(FormatDuration(s.retry.backoff_ms));
    r.Key("backoffFactor").Double(s.retry.backoff_factor);
    if (s.retry.max_backoff_ms) r.Key("maxBackoff").Str(FormatDuration(*s.retry.max_backoff_ms));
    r.Key("maxRetries").Int(s.retry.max_retries);
    r.End();
  }
  o.Key("serving").Bool(s.serving);
  if (s.timeout_ms) o.Key("timeout").Str(FormatDuration(*s.timeout_ms));
  if (!s.when.empty()) o.Key("when").Str(s.when);
  o.End();
}

}  // namespace

std::string CanonicalJson(const Workload& w) {
  Writer out;
  out.out.reserve(512 + 256 * w.pipeline.steps.size());
  Object root(out);
  root.Key("apiVersion").Str(w.api_version);
  root.Key("kind").Str(w.kind);
  {
    Object m(root.Key("metadata"));
    if (!w.annotations.empty()) m.Key("annotations").StrMap(w.annotations);
    if (!w.labels.empty()) m.Key("labels").StrMap(w.labels);
    m.Key("name").Str(w.name);
    m.Key("namespace").Str(w.namespace_);
    m.End();
  }
  {
    Object spec(root.Key("spec"));
    if (w.data.input || w.data.output) WriteData(spec.Key("data"), w.data);
    if (!w.image_pull_secrets.empty()) spec.Key("imagePullSecrets").StrArray(w.image_pull_secrets);
    if (w.model) WriteModel(spec.Key("model"), *w.model);
    {
      Object p(spec.Key("pipeline"));
      p.Key("atomic").Bool(w.pipeline.atomic);
      Writer& steps = p.Key("steps");
      steps.out += '[';
      for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
        if (i) steps.out += ',';
        WriteStep(steps, w.pipeline.steps[i]);
      }
      steps.out += ']';
      p.End();
    }
    if (!Empty(w.resources)) WriteResources(spec.Key("resources"), w.resources);
    if (w.timeout_ms) spec.Key("timeout").Str(FormatDuration(*w.timeout_ms));
    spec.End();
  }
  root.End();
  return std::move(out.out);
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
