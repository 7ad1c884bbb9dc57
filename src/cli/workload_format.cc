#include "cli/workload_format.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "cli/table.h"

namespace rsl::cli {

namespace {

std::string Str(const Json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

int64_t Int(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

// "63% (127/200)"
std::string ProgressText(const Json& p) {
  if (!p.is_object()) return "-";
  double pct = p.value("percent", 0.0);
  auto num = [](double v) {
    return v == std::floor(v) ? std::to_string(static_cast<int64_t>(v)) : Fixed(v, 1);
  };
  return std::to_string(static_cast<int>(pct)) + "% (" + num(p.value("done", 0.0)) + "/" +
         num(p.value("total", 0.0)) + ")";
}

// `workload list`'s STEPS: succeeded/total, and the skipped ones apart ("3/4 (1 skipped)").
std::string StepsText(const Json& st) {
  std::string text =
      std::to_string(Int(st, "stepsSucceeded")) + "/" + std::to_string(Int(st, "stepCount"));
  if (int64_t skipped = Int(st, "stepsSkipped"); skipped > 0) {
    text += " (" + std::to_string(skipped) + " skipped)";
  }
  return text;
}

// "train (3/4)": currentStep.index is 0-based, as steps[].index; people count from 1.
std::string CurrentStepText(const Json& st) {
  const Json& cur = st["currentStep"];
  return Str(cur, "name") + " (" + std::to_string(Int(cur, "index") + 1) + "/" +
         std::to_string(Int(st, "stepCount")) + ")";
}

int64_t StepDuration(const Json& s) {
  int64_t start = Int(s, "startedAtMs");
  int64_t end = Int(s, "finishedAtMs");
  if (Int(s, "wallMs") > 0) return Int(s, "wallMs");
  if (start > 0 && end >= start) return end - start;
  return -1;
}

std::string ExitText(const Json& s) {
  int sig = static_cast<int>(Int(s, "signal"));
  if (sig > 0) return "signal " + std::to_string(sig);
  int64_t code = s.value("exitCode", -1);
  return code < 0 ? "-" : std::to_string(code);
}

// Every line of `text` prefixed with two spaces (describe's sections).
std::string Indent(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out += "  " + text.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  return out;
}

void EmitYaml(YAML::Emitter& out, const Json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key << k << YAML::Value;
      EmitYaml(out, v);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& v : j) EmitYaml(out, v);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

// An amount of a cost document in its currency: cents from a cent up ("12.35 USD"), more
// digits below (a short CPU step costs a fraction of a cent: "0.000412 USD").
std::string Money(const Json& cost, const char* key) {
  double v = cost.contains(key) && cost[key].is_number() ? cost[key].get<double>() : 0;
  return Fixed(v, v == 0 || v >= 0.01 ? 2 : 6) + " " + cost.value("currency", std::string("USD"));
}

// A step's CPU peak as a share of its CPU limit ("78%"), in cores without a limit ("1.85
// cores"), "-" when it was not sampled.
std::string CpuPeakText(const Json& s) {
  int64_t peak = Int(s, "peakCpuMillicores");
  if (peak <= 0) return "-";
  int64_t limit = Int(s, "cpuLimitMillis");
  if (limit > 0) return std::to_string((peak * 100 + limit / 2) / limit) + "%";
  return Fixed(static_cast<double>(peak) / 1000, 2) + " cores";
}

// Whether an object's status.steps is a page that does not hold every step (the API cut a
// big run: status.stepsContinue or status.activeSteps).
bool PartialSteps(const Json& st) {
  return st.contains("stepsContinue") || st.contains("activeSteps");
}

// "100000 (SUCCEEDED 99990, FAILED 10)": every step by phase, the most common first.
std::string StepCountsText(const Json& st) {
  std::vector<std::pair<int64_t, std::string>> phases;
  const Json counts = st.value("stepCounts", Json::object());
  for (const auto& [phase, n] : counts.items()) {
    if (n.is_number()) phases.emplace_back(n.get<int64_t>(), phase);
  }
  std::stable_sort(phases.begin(), phases.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string parts;
  for (const auto& [n, phase] : phases) {
    parts += (parts.empty() ? "" : ", ") + phase + " " + std::to_string(n);
  }
  return std::to_string(Int(st, "stepCount")) + (parts.empty() ? "" : " (" + parts + ")");
}

}  // namespace

std::string LocalTime(int64_t ms) {
  if (ms <= 0) return "-";
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Age(int64_t ms, int64_t now_ms) {
  if (ms <= 0) return "-";
  int64_t s = std::max<int64_t>(0, (now_ms - ms) / 1000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 120 * 60) return std::to_string(s / 60) + "m";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string Duration(int64_t ms) {
  if (ms < 0) return "-";
  if (ms < 60'000) return Fixed(ms / 1000.0, 1) + "s";
  int64_t s = ms / 1000;
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string((s % 3600) / 60) + "m";
}

std::string BinaryBytes(int64_t bytes) {
  if (bytes <= 0) return "0";
  const char* units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes);
  return (v == std::floor(v) ? std::to_string(static_cast<int64_t>(v)) : Fixed(v, 1)) + units[u];
}

std::string ProgressBar(double percent, int width) {
  percent = std::max(0.0, std::min(100.0, percent));
  int full = static_cast<int>(percent / 100.0 * width + 0.5);
  return "[" + std::string(static_cast<size_t>(full), '#') +
         std::string(static_cast<size_t>(width - full), '-') + "]";
}

std::string FormatSubmitted(const Json& w, const std::string& headline) {
  std::string id = Str(w["metadata"], "id");
  return headline + "\nID: " + id + "\nStatus: " + Str(w["status"], "phase") +
         "\nLogs: seedctl workload logs --id " + id + "\n";
}

std::string FormatStatus(const Json& w, bool wide) {
  const Json& st = w["status"];
  std::string phase = Str(st, "phase");
  std::string out = "STATUS: " + phase + "\n";
  int64_t count = Int(st, "stepCount");
  const Json cur = st.contains("currentStep") ? st["currentStep"] : Json(nullptr);
  if (cur.is_object()) {
    out += "STEP: " + CurrentStepText(st) + "\n";
    if (cur["progress"].is_object()) out += "PROGRESS: " + ProgressText(cur["progress"]) + "\n";
    int64_t wall = Int(cur, "wallMs");
    int64_t cpu = Int(cur, "cpuMs");
    int64_t cpu_limit = Int(cur, "cpuLimitMillis");
    if (wall > 0) {
      out += "CPU: " + Fixed(static_cast<double>(cpu) / wall, 2) + " cores";
      if (cpu_limit > 0)
        out += " (limit " + Fixed(cpu_limit / 1000.0, cpu_limit % 1000 ? 1 : 0) + ")";
      if (Int(cur, "peakCpuMillicores") > 0) out += ", peak " + CpuPeakText(cur);
      out += "\n";
    }
    if (cur.contains("gpuUtilPercent") && cur["gpuUtilPercent"].is_number()) {
      out += "GPU_UTIL: " + std::to_string(cur["gpuUtilPercent"].get<int>()) + "%\n";
    }
    int64_t limit = Int(cur, "memoryLimitBytes");
    out += "MEMORY_USED: " + BinaryBytes(Int(cur, "peakMemoryBytes")) + "/" +
           (limit > 0 ? BinaryBytes(limit) : std::string("unlimited")) + "\n";
  } else {
    out += "STEP: - (0/" + std::to_string(count) + ")\n";
  }
  std::string code = Str(st, "failureCode");
  if (!code.empty()) out += "REASON: " + code + ": " + Str(st, "failureMessage") + "\n";
  // A big run: its counts and the steps that need attention, not a table of every step.
  const bool partial = PartialSteps(st);
  const char* table_of = partial ? "activeSteps" : "steps";
  if (partial) out += "STEPS: " + StepCountsText(st) + "\n";
  if (st.contains(table_of) && st[table_of].is_array() && !st[table_of].empty()) {
    std::vector<std::string> headers = {"STEP", "PHASE", "PROGRESS", "DURATION", "EXIT"};
    if (wide) {
      headers.insert(headers.end(), {"ATTEMPTS", "NODE", "CPU-TIME", "MAX-MEMORY", "MESSAGE"});
    }
    Table t(headers);
    std::map<std::string, int64_t> shown;  // per phase
    for (const auto& s : st[table_of]) {
      shown[Str(s, "phase")] += 1;
      std::vector<std::string> row = {Str(s, "name"), Str(s, "phase"), ProgressText(s["progress"]),
                                      Duration(StepDuration(s)), ExitText(s)};
      if (wide) {
        row.insert(row.end(), {std::to_string(Int(s, "attempts")), Str(s, "node", "-"),
                               Duration(Int(s, "cpuMs")), BinaryBytes(Int(s, "peakMemoryBytes")),
                               Str(s, "message")});
      }
      t.AddRow(row);
    }
    out += "\n" + t.Render();
    if (partial) {
      const Json counts = st.value("stepCounts", Json::object());
      for (const auto& [phase, n] : shown) {
        int64_t all = Int(counts, phase.c_str());
        if (all > n) out += "... and " + std::to_string(all - n) + " more " + phase + "\n";
      }
    }
  }
  if (partial) {
    out += "(steps that need attention only; every step: seedctl workload describe --id " +
           Str(w["metadata"], "id") + " --limit 0)\n";
  }
  if (st.contains("serving") && st["serving"].is_object()) out += "\n" + ServingText(st["serving"]);
  return out;
}

std::string ServingText(const Json& sv) {
  auto pct = [](const Json& j) {
    double u = j.contains("utilization") && j["utilization"].is_number()
                   ? j["utilization"].get<double>()
                   : 0.0;
    return std::to_string(int(u * 100 + 0.5)) + "%";
  };
  std::string out = "ENDPOINT: " + Str(sv, "endpoint") + "\n";
  out += "REPLICAS: " + std::to_string(Int(sv, "readyReplicas")) + "/" +
         std::to_string(Int(sv, "desiredReplicas")) + " ready\n";
  out += "UTILIZATION: " + pct(sv) + " of request\n";
  Table t({"REPLICA", "NODE", "PORT", "STATE", "RESTARTS", "UTILIZATION"});
  if (sv.contains("replicaList") && sv["replicaList"].is_array()) {
    for (const auto& r : sv["replicaList"]) {
      t.AddRow({std::to_string(Int(r, "index")), Str(r, "node", "-"),
                std::to_string(Int(r, "port")), Str(r, "state"), std::to_string(Int(r, "restarts")),
                pct(r)});
    }
  }
  return out + "\n" + t.Render();
}

std::string FormatStatusLine(const Json& w) {
  const Json& st = w["status"];
  std::string line = Str(st, "phase");
  if (st.contains("currentStep") && st["currentStep"].is_object()) {
    const Json& cur = st["currentStep"];
    line += " step " + CurrentStepText(st);
    if (cur["progress"].is_object()) line += " " + ProgressText(cur["progress"]);
  }
  return line;
}

std::string FormatStatusBars(const Json& w) {
  const Json& st = w["status"];
  std::string out = Str(w["metadata"], "id") + "  " + Str(st, "phase") + "\n";
  Table t({"STEP", "PHASE", "PROGRESS", ""});
  for (const auto& s : st.value("steps", Json::array())) {
    std::string phase = Str(s, "phase");
    double pct = 0;
    if (s["progress"].is_object()) pct = s["progress"].value("percent", 0.0);
    if (phase == "SUCCEEDED") pct = 100;
    std::string label = s["progress"].is_object() ? ProgressText(s["progress"])
                                                  : (phase == "SUCCEEDED" ? "100%" : "");
    t.AddRow({Str(s, "name"), phase, ProgressBar(pct, 24), label});
  }
  return out + t.Render();
}

std::string FormatList(const Json& list, bool wide, bool show_namespace, int64_t now_ms) {
  std::vector<std::string> headers = {"ID", "NAME"};
  if (show_namespace) headers.push_back("NAMESPACE");
  headers.insert(headers.end(), {"VERSION", "STATUS", "STEPS", "AGE"});
  if (wide) headers.insert(headers.end(), {"DIGEST", "CREATED-BY", "ROLLBACK-OF"});
  Table t(headers);
  for (const auto& w : list.value("items", Json::array())) {
    const Json& m = w["metadata"];
    const Json& st = w["status"];
    std::vector<std::string> row = {Str(m, "id"), Str(m, "name")};
    if (show_namespace) row.push_back(Str(m, "namespace"));
    row.insert(row.end(), {std::to_string(Int(m, "version")), Str(st, "phase"), StepsText(st),
                           Age(Int(m, "createdAtMs"), now_ms)});
    if (wide) {
      std::string digest = Str(m, "digest");
      row.insert(row.end(), {digest.substr(0, 19), Str(m, "createdBy"), Str(m, "rollbackOf", "-")});
    }
    t.AddRow(row);
  }
  if (t.size() == 0) return "No workloads found.\n";
  return t.Render();
}

std::string FormatHistory(const Json& list) {
  Table t({"VERSION", "ID", "STATUS", "DIGEST", "CREATED", "BY", "ROLLBACK-OF"});
  auto items = list.value("items", Json::array());
  for (auto it = items.rbegin(); it != items.rend(); ++it) {  // oldest first
    const Json& m = (*it)["metadata"];
    t.AddRow({std::to_string(Int(m, "version")), Str(m, "id"), Str((*it)["status"], "phase"),
              Str(m, "digest").substr(0, 19), LocalTime(Int(m, "createdAtMs")), Str(m, "createdBy"),
              Str(m, "rollbackOf", "-")});
  }
  if (t.size() == 0) return "No versions found.\n";
  return t.Render();
}

std::string FormatEventHeader() { return "TIME  TYPE  REASON  STEP  MESSAGE"; }

std::string FormatEventLine(const Json& e) {
  std::string step = Str(e, "step");
  return LocalTime(Int(e, "timeMs")) + "  " + Str(e, "type") + "  " + Str(e, "reason") + "  " +
         (step.empty() ? "-" : step) + "  " + Str(e, "message");
}

std::string FormatEvents(const Json& events) {
  Table t({"TIME", "TYPE", "REASON", "STEP", "MESSAGE"});
  for (const auto& e : events.value("items", Json::array())) {
    t.AddRow({LocalTime(Int(e, "timeMs")), Str(e, "type"), Str(e, "reason"),
              Str(e, "step").empty() ? "-" : Str(e, "step"), Str(e, "message")});
  }
  if (t.size() == 0) return "No events found.\n";
  return t.Render();
}

std::string FormatDescribe(const Json& d, int64_t limit) {
  const Json& m = d["metadata"];
  const Json& st = d["status"];
  auto field = [](const std::string& k, const std::string& v) {
    std::string key = k + ":";
    return key + std::string(key.size() < 14 ? 14 - key.size() : 1, ' ') + v + "\n";
  };
  std::string labels;
  const Json label_map = m.value("labels", Json::object());
  for (const auto& [k, v] : label_map.items()) {
    labels +=
        (labels.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  std::string out;
  out += field("Name", Str(m, "name"));
  out += field("Namespace", Str(m, "namespace"));
  out += field("ID", Str(m, "id"));
  std::string version = std::to_string(Int(m, "version"));
  if (!Str(m, "rollbackOf").empty()) version += " (rollback of " + Str(m, "rollbackOf") + ")";
  out += field("Version", version);
  out += field("Digest", Str(m, "digest"));
  out += field("Labels", labels.empty() ? "<none>" : labels);
  out += field("Created", LocalTime(Int(m, "createdAtMs")) + " by " + Str(m, "createdBy"));
  out += field("Status", Str(st, "phase"));
  if (!Str(st, "failureCode").empty()) {
    out += field("Reason", Str(st, "failureCode") + ": " + Str(st, "failureMessage"));
  }
  out += field("Started", LocalTime(Int(st, "startedAtMs")));
  int64_t took = Int(st, "finishedAtMs") > 0 && Int(st, "startedAtMs") > 0
                     ? Int(st, "finishedAtMs") - Int(st, "startedAtMs")
                     : -1;
  out += field("Finished", LocalTime(Int(st, "finishedAtMs")) +
                               (took >= 0 ? " (took " + Duration(took) + ")" : ""));
  std::string commit = Str(st, "commitState");
  out +=
      field("Output",
            commit.empty()
                ? "-"
                : commit + (Str(st, "committedUri").empty() ? "" : " " + Str(st, "committedUri")));
  if (!Str(st, "historyCollectedAt").empty()) {
    out += field("History", "collected " + Str(st, "historyCollectedAt") +
                                " by the retention policy (steps, events and logs are gone; the "
                                "spec, outcome, outputs and lineage stay)");
  }
  if (st.contains("cost") && st["cost"].is_object()) {
    const Json& c = st["cost"];
    out += field("Cost", Money(c, "total") + " (GPU " + Money(c, "gpuCost") + ", CPU " +
                             Money(c, "cpuCost") + ", memory " + Money(c, "memoryCost") + "; " +
                             std::to_string(Int(c, "attempts")) + " attempts)");
  }
  out += "Steps:\n";
  Table t({"NAME", "PHASE", "NODE", "ATTEMPTS", "STARTED", "FINISHED", "DURATION", "EXIT",
           "CPU-TIME", "CPU-PEAK", "MAX-MEMORY", "LIMIT"});
  for (const auto& s : st.value("steps", Json::array())) {
    int64_t limit = Int(s, "memoryLimitBytes");
    t.AddRow({Str(s, "name"), Str(s, "phase"), Str(s, "node").empty() ? "-" : Str(s, "node"),
              std::to_string(Int(s, "attempts")), LocalTime(Int(s, "startedAtMs")),
              LocalTime(Int(s, "finishedAtMs")), Duration(StepDuration(s)), ExitText(s),
              Duration(Int(s, "cpuMs")), CpuPeakText(s), BinaryBytes(Int(s, "peakMemoryBytes")),
              limit > 0 ? BinaryBytes(limit) : "-"});
  }
  out += Indent(t.Render());
  if (PartialSteps(st)) {
    const Json page = st.value("steps", Json::array());
    std::string id = Str(m, "id");
    std::string shown = page.empty() ? "no steps"
                                     : "steps " + std::to_string(Int(page.front(), "index") + 1) +
                                           "-" + std::to_string(Int(page.back(), "index") + 1);
    out += Indent("(" + shown + " of " + StepCountsText(st) + ")");
    if (st.contains("stepsContinue")) {
      std::string page_size = limit > 0 ? " --limit " + std::to_string(limit) : "";
      out += Indent("more: seedctl workload describe --id " + id + page_size + " --continue " +
                    Str(st, "stepsContinue") + "; every step: --limit 0");
    }
  }
  if (st.contains("admission") && st["admission"].is_object() && !st["admission"].empty()) {
    out += "Admission:\n" + Indent(JsonToYaml(st["admission"]));
  }
  out += "Spec:\n" + Indent(d.contains("spec") ? JsonToYaml(d["spec"]) : "");
  const Json events = d.value("events", Json::array());
  out += "Events:\n" + Indent(FormatEvents({{"items", events}}));
  if (Int(d, "eventCount") > static_cast<int64_t>(events.size())) {
    out += Indent("(the last " + std::to_string(events.size()) + " of " +
                  std::to_string(Int(d, "eventCount")) +
                  " events; every event: seedctl workload events --id " + Str(m, "id") + ")");
  }
  return out;
}

std::string FormatNodes(const Json& nodes, bool wide) {
  std::vector<std::string> headers = {"NAME", "STATUS", "CPU", "MEMORY", "GPUS", "CAPABILITIES"};
  if (wide) headers.insert(headers.end(), {"CPU-USED", "MEMORY-USED", "GPUS-USED"});
  Table t(headers);
  for (const auto& n : nodes.value("items", Json::array())) {
    const Json& s = n["status"];
    std::map<std::string, int> models;
    for (const auto& g : s.value("gpus", Json::array())) {
      models[Str(g, "model") + (g.value("probed", false) ? "" : "*")] += 1;
    }
    std::string gpus;
    for (const auto& [model, count] : models) {
      gpus += (gpus.empty() ? "" : ",") + std::to_string(count) + "x" + model;
    }
    std::string caps;
    for (const auto& c : s.value("capabilities", Json::array())) {
      caps += (caps.empty() ? "" : ",") + c.get<std::string>();
    }
    int64_t cpu = Int(s, "cpuMillis");
    std::vector<std::string> row = {Str(n["metadata"], "name"),
                                    Str(s, "state"),
                                    Fixed(cpu / 1000.0, cpu % 1000 ? 1 : 0),
                                    BinaryBytes(Int(s, "memoryBytes")),
                                    gpus.empty() ? "-" : gpus,
                                    caps.empty() ? "-" : caps};
    if (wide) {
      int64_t used = Int(s, "usedCpuMillis");
      row.insert(row.end(),
                 {Fixed(used / 1000.0, used % 1000 ? 1 : 0), BinaryBytes(Int(s, "usedMemoryBytes")),
                  std::to_string(Int(s, "usedGpus"))});
    }
    t.AddRow(row);
  }
  if (t.size() == 0) return "No nodes found.\n";
  return t.Render();
}

std::string FormatClusterStatus(const Json& s) {
  const Json& c = s["controller"];
  std::string out = "RSL Controller: " + Str(c, "state") + " (v" + Str(c, "version") +
                    ", backend " + Str(c, "backend") + ")\n";
  const Json& ds = s["dataSources"];
  std::string names;
  for (const auto& n : ds.value("registered", Json::array())) {
    names += (names.empty() ? "" : ", ") + n.get<std::string>();
  }
  out += "Data Sources: " + std::to_string(Int(ds, "total")) + " registered" +
         (names.empty() ? "" : " (" + names + ")") + "\n";
  const Json& g = s["gpuNodes"];
  std::string models;
  const Json model_counts = g.value("models", Json::object());
  for (const auto& [m, n] : model_counts.items()) {
    models += (models.empty() ? "" : ", ") + m + ": " + n.dump();
  }
  out += "GPU Nodes: " + std::to_string(Int(g, "ready")) + "/" + std::to_string(Int(g, "total")) +
         " Ready" + (models.empty() ? "" : " (" + models + ")") + "\n";
  const Json& cpu = s["cpuNodes"];
  out += "CPU Nodes: " + std::to_string(Int(cpu, "ready")) + "/" +
         std::to_string(Int(cpu, "total")) + " Ready\n";
  std::string phases;
  const Json phase_counts = s.value("workloads", Json::object());
  for (const auto& [p, n] : phase_counts.items()) {
    phases += (phases.empty() ? "" : ", ") + p + ": " + n.dump();
  }
  out += "Workloads: " + (phases.empty() ? std::string("none") : phases) + "\n";
  return out;
}

std::string FormatKeyValueList(const Json& list, const std::string& ns) {
  Table t({"NAME", "KEYS", "UPDATED"});
  for (const auto& item : list.value("items", Json::array())) {
    std::vector<std::string> keys;
    if (item.contains("keys")) {  // a secret: its keys only
      for (const auto& k : item["keys"]) keys.push_back(k.get<std::string>());
    } else {
      for (const auto& [k, v] : item.value("data", Json::object()).items()) keys.push_back(k);
    }
    t.AddRow({Str(item["metadata"], "name"), keys.empty() ? "-" : Join(keys, ","),
              LocalTime(Int(item["metadata"], "updatedAtMs"))});
  }
  if (t.size() == 0) return "No " + Str(list, "kind") + " items in namespace " + ns + ".\n";
  return t.Render();
}

std::string FormatAudit(const Json& entries) {
  Table t({"TIME", "SUBJECT", "VERB", "RESOURCE", "NAMESPACE", "OBJECT", "RESULT", "MESSAGE"});
  for (const auto& e : entries.value("items", Json::array())) {
    t.AddRow({LocalTime(Int(e, "timeMs")), Str(e, "subject"), Str(e, "verb"), Str(e, "resource"),
              Str(e, "namespace"), Str(e, "objectId").empty() ? "-" : Str(e, "objectId"),
              Str(e, "result"), Str(e, "message")});
  }
  if (t.size() == 0) return "No audit entries found.\n";
  return t.Render();
}

std::string JsonToYaml(const Json& j) {
  YAML::Emitter out;
  EmitYaml(out, j);
  std::string s = out.c_str();
  if (!s.empty() && s.back() != '\n') s += "\n";
  return s;
}

}  // namespace rsl::cli
