#include "spec/parse_pipeline.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "base/strings.h"
#include "image/reference.h"
#include "spec/names.h"
#include "spec/parse_model.h"
#include "spec/parse_resources.h"

namespace rsl::spec {

namespace {

constexpr int64_t kMaxRetries = 100;
// Linux's MAX_ARG_STRLEN (32 pages): execve fails with E2BIG on a longer NAME=value.
constexpr size_t kMaxEnvEntryBytes = 128 * 1024;
// A quarter of the usual 2 MiB argument and environment limit (ARG_MAX with an 8 MiB stack):
// the engine's own variables, envFrom and the command line need the rest.
constexpr size_t kMaxEnvBytes = 512 * 1024;
const std::vector<std::string> kPipelineKeys = {"atomic", "steps", "timeout"};
const std::vector<std::string> kStepKeys = {
    "name",    "image",     "command",     "args",           "env",           "dependsOn",
    "when",    "resources", "retryPolicy", "envFrom",        "keepOnFailure", "timeout",
    "outputs", "serving",   "port",        "readinessProbe", "readyTimeout",  "postProcess"};
const std::vector<std::string> kHookKeys = {"when", "on", "required", "webhook"};
const std::vector<std::string> kWebhookKeys = {"url",  "method",  "headers",
                                               "body", "retries", "timeout"};
const std::vector<std::string> kHookOn = {"success", "failure", "always"};
const std::vector<std::string> kHookMethods = {"POST", "PUT", "PATCH", "GET", "DELETE"};
constexpr int64_t kMaxHookRetries = 10;
// One try of a webhook may take at most this long: a hook is a notification, not a job.
constexpr int64_t kMaxHookTimeoutMs = 300'000;
constexpr size_t kMaxHooksPerStep = 16;
const std::vector<std::string> kProbeKeys = {"httpGet", "periodSeconds", "failureThreshold"};
const std::vector<std::string> kHttpGetKeys = {"path", "port"};
constexpr int64_t kMaxPort = 65535;
constexpr int64_t kMaxProbePeriodSeconds = 3600;
constexpr int64_t kMaxFailureThreshold = 1000;
const std::vector<std::string> kRetryKeys = {"maxRetries", "backoff", "backoffFactor",
                                             "maxBackoff"};
const std::vector<std::string> kEnvFromKeys = {"configMapRef", "secretRef"};

class PipelineParser : public FieldParser {
 public:
  using FieldParser::FieldParser;

  void Pipeline(const YAML::Node& n, const YAML::Node& spec) {
    const std::string path = "spec.pipeline";
    YAML::Node steps;
    if (n.IsSequence()) {
      r_.Record(path, n);
      steps = n;
    } else {
      if (!r_.Map(n, path, kPipelineKeys)) return;
      if (Reader::Has(n, "atomic")) {
        if (auto v = r_.Bool(n["atomic"], path + ".atomic")) w_->pipeline.atomic = *v;
      }
      if (Reader::Has(n, "timeout")) {
        if (Reader::Has(spec, "timeout")) {
          r_.Fail(n["timeout"], path + ".timeout", "timeout is set both here and at spec.timeout",
                  "keep one of them");
        } else {
          w_->timeout_ms = Duration(n["timeout"], path + ".timeout", true);
        }
      }
      if (!Reader::Has(n, "steps")) {
        r_.Missing(n, path + ".steps", "add steps: with at least one step");
        return;
      }
      steps = n["steps"];
    }
    const std::string sp = path + ".steps";
    if (!r_.Seq(steps, sp, "steps: [{name: train, image: ...}]")) return;
    if (steps.size() == 0) {
      r_.Fail(steps, sp, "the pipeline has no steps", "add at least one step");
      return;
    }
    w_->pipeline.steps.reserve(steps.size());
    for (size_t i = 0; i < steps.size() && !r_.exhausted(); ++i) {
      Step step;
      StepOf(steps[i], Index(sp, i), &step);
      w_->pipeline.steps.push_back(std::move(step));
    }
  }

  void StepOf(const YAML::Node& n, const std::string& path, Step* step) {
    // A step asks for fourteen keys: read them once (Reader::Keys).
    const Reader::Keys keys(n);
    if (!r_.Map(n, path, kStepKeys)) return;
    if (!keys.Has("name")) {
      r_.Missing(n, path + ".name", "every step needs a name: a-z, 0-9, '-'");
    } else if (auto v = r_.String(n["name"], path + ".name")) {
      step->name = *v;
      std::string why = CheckDns1123Label(*v);
      if (!why.empty()) {
        r_.Fail(n["name"], path + ".name", "step name " + Quote(*v) + " " + why,
                "use a DNS-1123 label such as " + Quote(Suggest(*v)));
      } else if (IsReservedStepName(*v)) {
        r_.Fail(n["name"], path + ".name",
                "step name " + Quote(*v) + " is reserved: its dependents would get its output as " +
                    StepInputVariable(*v) + ", which holds data.input's URI",
                "choose another name, e.g. " + Quote(*v + "-step"));
      }
    }
    if (keys.Has("image")) {
      if (auto v = r_.String(n["image"], path + ".image")) {
        // One grammar for references: the image layer's, as Docker reads them; the error
        // keeps the spec's code and place.
        auto ref = image::ParseReference(*v);
        if (!ref.ok()) r_.Fail(n["image"], path + ".image", ref.error().message, ref.error().hint);
        step->image = *v;
      }
    }
    if (keys.Has("command")) {
      if (auto v = r_.StringList(n["command"], path + ".command")) step->command = *v;
    }
    // Without a command a step runs its image's entrypoint; without either nothing can run.
    bool has_command =
        keys.Has("command") && !(n["command"].IsSequence() && n["command"].size() == 0);
    if (!has_command && !keys.Has("image")) {
      r_.Fail(keys.Has("command") ? n["command"] : n, path + ".command",
              "the step has no command and no image: nothing to run",
              "add command: [python, train.py], or an image registered with an entrypoint");
    }
    if (keys.Has("args")) {
      if (auto v = r_.StringList(n["args"], path + ".args")) step->args = *v;
    }
    if (keys.Has("env")) {
      if (auto env = r_.StringMap(n["env"], path + ".env")) {
        for (const auto& kv : n["env"]) {
          std::string key = kv.first.Scalar();
          std::string why = CheckEnvName(key);
          if (!why.empty()) {
            std::string fixed;
            for (char c : key)
              fixed.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
            r_.Fail(kv.first, path + ".env." + key, "variable name " + Quote(key) + " " + why,
                    "e.g. " + Quote(fixed));
          } else if (StartsWith(key, "RSL_")) {
            r_.Fail(kv.first, path + ".env." + key,
                    "variable " + Quote(key) + " is reserved: RSL sets RSL_* itself",
                    "choose a name without the RSL_ prefix");
          }
        }
        if (EnvValuesFit(n["env"], path + ".env", *env)) step->env = *env;
      }
    }
    if (keys.Has("dependsOn")) {
      if (auto v = r_.StringList(n["dependsOn"], path + ".dependsOn")) step->depends_on = *v;
    }
    if (keys.Has("when")) {
      if (auto v = r_.String(n["when"], path + ".when")) step->when = *v;
    }
    if (keys.Has("resources"))
      ParseResources(c_, n["resources"], path + ".resources", &step->resources);
    if (keys.Has("retryPolicy")) Retry(n["retryPolicy"], path + ".retryPolicy", &step->retry);
    if (keys.Has("envFrom")) EnvFromOf(n["envFrom"], path + ".envFrom", step);
    if (keys.Has("keepOnFailure")) {
      if (auto v = r_.Bool(n["keepOnFailure"], path + ".keepOnFailure")) step->keep_on_failure = *v;
    }
    if (keys.Has("serving")) {
      if (auto v = r_.Bool(n["serving"], path + ".serving")) step->serving = *v;
    }
    if (keys.Has("timeout")) step->timeout_ms = Duration(n["timeout"], path + ".timeout", true);
    if (keys.Has("port")) step->port = r_.Int(n["port"], path + ".port", 1, kMaxPort);
    if (keys.Has("readinessProbe")) Probe(n["readinessProbe"], path + ".readinessProbe", step);
    if (keys.Has("readyTimeout")) {
      if (auto v = Duration(n["readyTimeout"], path + ".readyTimeout", true))
        step->ready_timeout_ms = *v;
    }
    if (keys.Has("outputs")) ParseTensors(c_, n["outputs"], path + ".outputs", &step->outputs);
    if (keys.Has("postProcess")) PostProcessOf(n["postProcess"], path + ".postProcess", step);
  }

  void PostProcessOf(const YAML::Node& n, const std::string& path, Step* step) {
    if (!r_.Seq(n, path,
                "postProcess: [{on: [success], webhook: {url: https://alerts.example/hook}}]"))
      return;
    if (n.size() > kMaxHooksPerStep) {
      r_.Fail(n, path,
              "the step has " + std::to_string(n.size()) + " postProcess hooks, more than " +
                  std::to_string(kMaxHooksPerStep),
              "send one webhook to a receiver that fans out");
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string p = Index(path, i);
      const YAML::Node item = n[i];
      if (!r_.Map(item, p, kHookKeys)) continue;
      PostProcess hook;
      if (Reader::Has(item, "when")) {
        if (auto v = r_.String(item["when"], p + ".when")) hook.when = *v;
      }
      if (Reader::Has(item, "on")) HookOnOf(item["on"], p + ".on", &hook);
      if (Reader::Has(item, "required")) {
        if (auto v = r_.Bool(item["required"], p + ".required")) hook.required = *v;
      }
      if (!Reader::Has(item, "webhook")) {
        r_.Missing(item, p + ".webhook", "add webhook: {url: https://alerts.example/hook}");
      } else {
        WebhookOf(item["webhook"], p + ".webhook", &hook);
      }
      step->post_process.push_back(std::move(hook));
    }
  }

  // `on: [success]`, also a single word (`on: always`).
  void HookOnOf(const YAML::Node& n, const std::string& path, PostProcess* hook) {
    std::vector<std::pair<std::string, YAML::Node>> words;
    if (n.IsScalar()) {
      if (auto v = r_.String(n, path)) words.emplace_back(*v, n);
    } else if (r_.Seq(n, path, "on: [success], on: [failure] or on: [always]")) {
      for (size_t k = 0; k < n.size(); ++k) {
        if (auto v = r_.String(n[k], Index(path, k))) words.emplace_back(*v, n[k]);
      }
      if (n.size() == 0) {
        r_.Fail(n, path, "on lists no outcome", "on: [success], [failure] or [always]");
        return;
      }
    } else {
      return;
    }
    hook->on_success = hook->on_failure = false;
    for (size_t k = 0; k < words.size(); ++k) {
      const std::string& w = words[k].first;
      if (w == "success") {
        hook->on_success = true;
      } else if (w == "failure") {
        hook->on_failure = true;
      } else if (w == "always") {
        hook->on_success = hook->on_failure = true;
      } else {
        r_.Fail(words[k].second, n.IsScalar() ? path : Index(path, k),
                "unknown outcome " + Quote(w), OneOf(w, kHookOn));
      }
    }
  }

  void WebhookOf(const YAML::Node& n, const std::string& path, PostProcess* hook) {
    if (!r_.Map(n, path, kWebhookKeys)) return;
    if (!Reader::Has(n, "url")) {
      r_.Missing(n, path + ".url", "add url: https://alerts.example/hook");
    } else if (auto v = r_.String(n["url"], path + ".url")) {
      std::string why = CheckHookUrl(*v);
      if (!why.empty()) {
        r_.Fail(n["url"], path + ".url", "webhook url " + Quote(*v) + " " + why,
                "e.g. https://alerts.example/hook or http://10.0.0.5:8080/alert");
      } else {
        hook->url = *v;
      }
    }
    if (Reader::Has(n, "method")) {
      if (auto v = r_.String(n["method"], path + ".method")) {
        std::string upper;
        for (char c : *v) upper.push_back(char(std::toupper(static_cast<unsigned char>(c))));
        if (std::find(kHookMethods.begin(), kHookMethods.end(), upper) == kHookMethods.end()) {
          r_.Fail(n["method"], path + ".method", "unknown method " + Quote(*v),
                  OneOf(upper, kHookMethods));
        } else {
          hook->method = upper;
        }
      }
    }
    if (Reader::Has(n, "headers")) HeadersOf(n["headers"], path + ".headers", hook);
    if (Reader::Has(n, "body")) {
      if (auto v = r_.String(n["body"], path + ".body")) hook->body = *v;
    }
    if (Reader::Has(n, "retries")) {
      if (auto v = r_.Int(n["retries"], path + ".retries", 0, kMaxHookRetries)) hook->retries = *v;
    }
    if (Reader::Has(n, "timeout")) {
      if (auto v = Duration(n["timeout"], path + ".timeout", true)) {
        if (*v > kMaxHookTimeoutMs) {
          r_.Fail(n["timeout"], path + ".timeout", "a webhook timeout may be at most 5m",
                  "a hook is a notification: answer quickly and work in the background");
        } else {
          hook->timeout_ms = *v;
        }
      }
    }
  }

  // headers: {X-Token: {secretRef: alert-creds, key: token}, Content-Type: application/json}
  void HeadersOf(const YAML::Node& n, const std::string& path, PostProcess* hook) {
    r_.Record(path, n);
    if (!n.IsMap()) {
      r_.Fail(n, path, "must be a mapping, got " + Reader::Shown(n),
              "headers: {X-Token: {secretRef: alert-creds, key: token}}");
      return;
    }
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar();
      const std::string p = path + "." + name;
      if (!IsHeaderName(name)) {
        r_.Fail(kv.first, p, "header name " + Quote(name) + " is not a valid HTTP header name",
                "use letters, digits and '-', e.g. X-Token");
        continue;
      }
      HookHeader h;
      h.name = name;
      const YAML::Node v = kv.second;
      if (v.IsMap()) {
        if (!r_.Map(v, p, {"secretRef", "key"})) continue;
        if (!Reader::Has(v, "secretRef") || !Reader::Has(v, "key")) {
          r_.Missing(v, p + (Reader::Has(v, "secretRef") ? ".key" : ".secretRef"),
                     "write {secretRef: <secret name>, key: <key in it>}");
          continue;
        }
        auto secret = r_.String(v["secretRef"], p + ".secretRef");
        auto key = r_.String(v["key"], p + ".key");
        if (!secret || !key) continue;
        std::string why = CheckDns1123Subdomain(*secret);
        if (!why.empty()) {
          r_.Fail(v["secretRef"], p + ".secretRef", "secretRef " + Quote(*secret) + " " + why,
                  "use a-z, 0-9, '-' and '.'");
          continue;
        }
        h.secret_name = *secret;
        h.secret_key = *key;
      } else if (auto s = r_.String(v, p)) {
        if (s->find_first_of("\r\n") != std::string::npos || s->find('\0') != std::string::npos) {
          r_.Fail(v, p, "the value of header " + name + " contains a line break or NUL",
                  "a header value is one line");
          continue;
        }
        h.value = *s;
      } else {
        continue;
      }
      hook->headers.push_back(std::move(h));
    }
  }

  static bool IsHeaderName(const std::string& name) {
    if (name.empty()) return false;
    for (unsigned char c : name) {
      if (!std::isalnum(c) &&
          std::string_view("!#$%&'*+-.^_`|~").find(char(c)) == std::string_view::npos)
        return false;
    }
    return true;
  }

  // "" when `url` is an http(s) URL with a host; otherwise why not.
  static std::string CheckHookUrl(const std::string& url) {
    std::string rest;
    if (StartsWith(url, "https://")) {
      rest = url.substr(8);
    } else if (StartsWith(url, "http://")) {
      rest = url.substr(7);
    } else {
      return "is not an http:// or https:// URL";
    }
    size_t end = rest.find_first_of("/?#");
    std::string authority = rest.substr(0, end);
    size_t at = authority.rfind('@');
    std::string host = at == std::string::npos ? authority : authority.substr(at + 1);
    if (host.empty() || host[0] == ':') return "has no host";
    for (unsigned char c : url) {
      if (c <= ' ' || c == 0x7f) return "contains a space or control character";
    }
    return "";
  }

  // What a process environment can hold: no NUL (it would end the value early), each
  // NAME=value within the kernel's limit for one string, and all of them within a share of
  // the limit for the whole argument and environment block.
  bool EnvValuesFit(const YAML::Node& n, const std::string& path,
                    const std::map<std::string, std::string>& env) {
    bool ok = true;
    size_t total = 0;
    for (const auto& [key, value] : env) {
      const std::string p = path + "." + key;
      size_t bytes = key.size() + 1 + value.size() + 1;  // NAME=value and its terminator
      total += bytes;
      if (value.find('\0') != std::string::npos) {
        r_.Fail(n[key], p, "the value of " + key + " contains a NUL byte",
                "an environment value cannot hold NUL; remove the \\0");
        ok = false;
      } else if (bytes > kMaxEnvEntryBytes) {
        r_.Fail(n[key], p,
                "the value of " + key + " is " + std::to_string(value.size()) +
                    " bytes; one variable (NAME=value) may have at most " +
                    std::to_string(kMaxEnvEntryBytes - 2 - key.size()) +
                    " (Linux refuses a longer one)",
                "put a large value in a file (e.g. under data.input) and pass its path");
        ok = false;
      }
    }
    if (ok && total > kMaxEnvBytes) {
      r_.Fail(n, path,
              "the variables take " + std::to_string(total) + " bytes, more than the limit of " +
                  std::to_string(kMaxEnvBytes),
              "put a large value in a file (e.g. under data.input) and pass its path");
      ok = false;
    }
    return ok;
  }

  void Probe(const YAML::Node& n, const std::string& path, Step* step) {
    if (!r_.Map(n, path, kProbeKeys)) return;
    ReadinessProbe& p = step->readiness;
    if (Reader::Has(n, "httpGet")) {
      const YAML::Node g = n["httpGet"];
      const std::string gp = path + ".httpGet";
      if (r_.Map(g, gp, kHttpGetKeys)) {
        if (Reader::Has(g, "path")) {
          if (auto v = r_.String(g["path"], gp + ".path")) {
            if (StartsWith(*v, "/")) {
              p.path = *v;
            } else {
              r_.Fail(g["path"], gp + ".path", "probe path " + Quote(*v) + " does not start with /",
                      "e.g. path: /healthz");
            }
          }
        }
        if (Reader::Has(g, "port")) p.port = r_.Int(g["port"], gp + ".port", 1, kMaxPort);
      }
    }
    if (Reader::Has(n, "periodSeconds")) {
      if (auto v = r_.Int(n["periodSeconds"], path + ".periodSeconds", 1, kMaxProbePeriodSeconds))
        p.period_ms = *v * 1000;
    }
    if (Reader::Has(n, "failureThreshold")) {
      if (auto v =
              r_.Int(n["failureThreshold"], path + ".failureThreshold", 1, kMaxFailureThreshold))
        p.failure_threshold = *v;
    }
  }

  void Retry(const YAML::Node& n, const std::string& path, RetryPolicy* retry) {
    if (!r_.Map(n, path, kRetryKeys)) return;
    if (Reader::Has(n, "maxRetries")) {
      if (auto v = r_.Int(n["maxRetries"], path + ".maxRetries", 0, kMaxRetries)) {
        retry->max_retries = *v;
      }
    }
    if (Reader::Has(n, "backoff")) {
      if (auto v = Duration(n["backoff"], path + ".backoff", false)) retry->backoff_ms = *v;
    }
    if (Reader::Has(n, "backoffFactor")) {
      if (auto v = r_.Number(n["backoffFactor"], path + ".backoffFactor")) {
        if (*v < 1 || *v > kMaxPercent) {
          r_.Fail(n["backoffFactor"], path + ".backoffFactor",
                  "backoffFactor must be between 1 and 100", "1 = constant delay, 2 = doubling");
        } else {
          retry->backoff_factor = *v;
        }
      }
    }
    if (Reader::Has(n, "maxBackoff")) {
      if (auto v = Duration(n["maxBackoff"], path + ".maxBackoff", true)) {
        if (*v < retry->backoff_ms) {
          r_.Fail(n["maxBackoff"], path + ".maxBackoff", "maxBackoff is shorter than backoff",
                  "make maxBackoff >= backoff");
        } else {
          retry->max_backoff_ms = *v;
        }
      }
    }
  }

  void EnvFromOf(const YAML::Node& n, const std::string& path, Step* step) {
    if (!r_.Seq(n, path, "envFrom: [{configMapRef: common-config}, {secretRef: creds}]")) return;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string p = Index(path, i);
      const YAML::Node item = n[i];
      if (!r_.Map(item, p, kEnvFromKeys)) continue;
      if (item.size() != 1) {
        r_.Fail(item, p, "each envFrom entry names exactly one configMapRef or secretRef",
                "split it into two entries");
        continue;
      }
      EnvFrom ef;
      std::string key = item.begin()->first.Scalar();
      ef.kind = key == "secretRef" ? EnvFrom::Kind::kSecret : EnvFrom::Kind::kConfigMap;
      YAML::Node ref = item.begin()->second;
      std::string rp = p + "." + key;
      // Kubernetes writes {configMapRef: {name: x}}; the seed writes {configMapRef: x}.
      if (ref.IsMap()) {
        if (!r_.Map(ref, rp, {"name"})) continue;
        if (!Reader::Has(ref, "name")) {
          r_.Missing(ref, rp + ".name", "add name: the " + key + " name");
          continue;
        }
        ref = ref["name"];
        rp += ".name";
      }
      auto name = r_.String(ref, rp);
      if (!name) continue;
      std::string why = CheckDns1123Subdomain(*name);
      if (!why.empty()) {
        r_.Fail(ref, rp, key + " " + Quote(*name) + " " + why, "use a-z, 0-9, '-' and '.'");
        continue;
      }
      ef.name = *name;
      step->env_from.push_back(ef);
    }
  }
};

}  // namespace

void ParsePipeline(ParseContext* c, const YAML::Node& n, const YAML::Node& spec) {
  PipelineParser(c).Pipeline(n, spec);
}

}  // namespace rsl::spec
