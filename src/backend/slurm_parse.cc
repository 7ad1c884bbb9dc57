#include "backend/slurm_parse.h"

#include <nlohmann/json.hpp>

#include <string.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <set>

#include "base/codes.h"
#include "base/strings.h"
#include "spec/quantity.h"

namespace rsl::backend::slurm {
namespace {

using nlohmann::json;

constexpr size_t kQuoteBytes = 120;  // how much of unexpected output an error message quotes

Error BadOutput(const std::string& what, std::string_view text, const std::string& detail) {
  std::string head(text.substr(0, std::min(text.size(), kQuoteBytes)));
  return Error(codes::kInternal, "cannot parse " + what + " output: " + detail)
      .Value(head)
      .Hint("is this Slurm 22.05 or newer (JSON output)?");
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
  if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
  // Slurm 23.02+ wraps numbers as {"set": true, "infinite": false, "number": N}.
  if (it->is_object() && it->contains("number")) return Int(*it, "number");
  return 0;
}

int64_t ParseInt(std::string_view s, int64_t fallback) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return (ec == std::errc() && p == s.data() + s.size()) ? v : fallback;
}

// "2026-11-29T07:55:57" (local time, as sacct prints it) -> unix seconds; 0 if unknown.
int64_t ParseSlurmTime(std::string_view s) {
  struct tm tm = {};
  std::string str(s);
  if (::strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(::mktime(&tm));
}

std::vector<std::string> SplitNonEmpty(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (auto& part : Split(s, sep)) {
    std::string t(Trim(part));
    if (!t.empty() && t != "(null)") out.push_back(t);
  }
  return out;
}

spec::NodeState NodeStateOf(const NodeState& st) {
  if (st.down()) return spec::NodeState::kDown;
  for (const auto& f : st.flags) {
    if (f == "DRAIN") return spec::NodeState::kDrained;
    if (f == "NOT_RESPONDING") return spec::NodeState::kNotReady;
  }
  static const std::set<std::string> kReady = {"idle",       "mixed",    "allocated",
                                               "completing", "reserved", "planned"};
  return kReady.count(st.state) ? spec::NodeState::kReady : spec::NodeState::kNotReady;
}

// Slurm 22.05's --json commands exit 0 while slurmctld is down, with an "errors" array and
// empty lists: such a reply carries no information and must not be read as "no jobs".
Status ReplyErrors(const std::string& command, const nlohmann::json& doc) {
  auto errors = doc.find("errors");
  if (errors == doc.end() || !errors->is_array() || errors->empty()) return Status::Ok();
  std::vector<std::string> what;
  for (const auto& e : *errors) {
    std::string text = e.is_object() ? Str(e, "description") : "";
    if (text.empty() && e.is_object()) text = Str(e, "error");
    if (text.empty()) text = e.dump();
    what.push_back(text);
  }
  return Error(codes::kInternal,
               "Slurm unreachable: " + command + " --json reported " + Join(what, "; "))
      .Value(command)
      .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

bool NodeState::down() const {
  return state == "down" || state == "fail" ||
         std::find(flags.begin(), flags.end(), "DOWN") != flags.end();
}

Result<std::vector<Job>> ParseSqueueJson(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return BadOutput("squeue --json", text, "not JSON");
  RSL_RETURN_IF_ERROR(ReplyErrors("squeue", doc));
  auto jobs = doc.find("jobs");
  if (jobs == doc.end() || !jobs->is_array()) {
    return BadOutput("squeue --json", text, "no \"jobs\" array");
  }
  std::vector<Job> out;
  for (const auto& j : *jobs) {
    if (!j.is_object()) continue;
    Job job;
    job.job_id = Int(j, "job_id");
    job.name = Str(j, "name");
    job.state = Str(j, "job_state");
    if (job.state.empty() && j.contains("job_state") && j["job_state"].is_array() &&
        !j["job_state"].empty() && j["job_state"][0].is_string()) {
      job.state = j["job_state"][0].get<std::string>();  // 23.02+: a list of flags
    }
    job.reason = Str(j, "state_reason");
    job.nodes = Str(j, "nodes");
    job.comment = Str(j, "comment");
    // squeue reports the raw wait status: exit code in the high byte, signal in the low bits.
    int64_t status = Int(j, "exit_code");
    job.exit_code = static_cast<int>((status >> 8) & 0xff);
    job.signal = static_cast<int>(status & 0x7f);
    job.start_time = Int(j, "start_time");
    job.end_time = Int(j, "end_time");
    out.push_back(std::move(job));
  }
  return out;
}

Result<std::vector<Job>> ParseSacct(std::string_view text) {
  std::vector<Job> out;
  int line_no = 0;
  for (const auto& raw : Split(text, '\n')) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    auto f = Split(line, '|');
    if (f.size() < 7) {
      return BadOutput("sacct", line,
                       "line " + std::to_string(line_no) + " has " + std::to_string(f.size()) +
                           " fields, expected 7");
    }
    Job job;
    job.job_id = ParseInt(f[0], -1);
    if (job.job_id < 0) continue;  // job steps ("12.batch") are not jobs
    job.name = f[1];
    // "CANCELLED by 0" -> "CANCELLED"
    job.state = std::string(Trim(f[2].substr(0, f[2].find(' '))));
    auto code = Split(f[3], ':');
    job.exit_code = static_cast<int>(ParseInt(code[0], 0));
    job.signal = code.size() > 1 ? static_cast<int>(ParseInt(code[1], 0)) : 0;
    job.nodes = (f[4] == "(null)" || f[4] == "None assigned") ? "" : f[4];
    job.start_time = ParseSlurmTime(f[5]);
    job.end_time = ParseSlurmTime(f[6]);
    out.push_back(std::move(job));
  }
  return out;
}

int64_t GpuCount(std::string_view gres, std::string* model) {
  int64_t total = 0;
  // Entries are comma separated, but "(S:0-1)" / "(IDX:0,2)" may contain commas too.
  std::vector<std::string> entries;
  std::string cur;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    if (c == ')') depth = std::max(0, depth - 1);
    if (c == ',' && depth == 0) {
      entries.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  entries.push_back(cur);
  for (std::string entry : entries) {
    entry = entry.substr(0, entry.find('('));
    auto parts = Split(entry, ':');
    if (parts.empty() || Trim(parts[0]) != "gpu") continue;
    if (parts.size() == 2) {
      total += std::max<int64_t>(0, ParseInt(Trim(parts[1]), 0));
    } else if (parts.size() >= 3) {
      if (model != nullptr && model->empty()) *model = std::string(Trim(parts[1]));
      total += std::max<int64_t>(0, ParseInt(Trim(parts[2]), 0));
    }
  }
  return total;
}

Result<std::vector<sched::Node>> ParseSinfoJson(std::string_view text, const std::string& partition,
                                                std::vector<NodeState>* states) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return BadOutput("sinfo --json", text, "not JSON");
  RSL_RETURN_IF_ERROR(ReplyErrors("sinfo", doc));
  auto nodes = doc.find("nodes");
  if (nodes == doc.end() || !nodes->is_array()) {
    return BadOutput("sinfo --json", text, "no \"nodes\" array");
  }
  std::vector<sched::Node> out;
  for (const auto& n : *nodes) {
    if (!n.is_object()) continue;
    std::vector<std::string> partitions;
    if (n.contains("partitions") && n["partitions"].is_array()) {
      for (const auto& p : n["partitions"]) {
        if (p.is_string()) partitions.push_back(p.get<std::string>());
      }
    }
    if (!partition.empty() &&
        std::find(partitions.begin(), partitions.end(), partition) == partitions.end()) {
      continue;
    }
    NodeState st;
    st.name = Str(n, "name");
    st.state = ToLower(Str(n, "state"));
    if (n.contains("state_flags") && n["state_flags"].is_array()) {
      for (const auto& f : n["state_flags"]) {
        if (f.is_string()) st.flags.push_back(f.get<std::string>());
      }
    }
    st.reason = Str(n, "reason");

    sched::Node node;
    node.name = st.name;
    node.state = NodeStateOf(st);
    node.cpu_millis = Int(n, "cpus") * 1000;
    node.memory_bytes = Int(n, "real_memory") * kMiB;
    std::string features = Str(n, "active_features");
    if (features.empty()) features = Str(n, "features");
    node.capabilities = SplitNonEmpty(features, ',');
    std::string model;
    int64_t gpus = GpuCount(Str(n, "gres"), &model);
    int64_t gpu_memory = GpuMemoryBytes(model, node.capabilities);
    for (int64_t i = 0; i < gpus; ++i) {
      sched::Device dev;
      dev.model = model.empty() ? "gpu" : model;
      dev.memory_bytes = gpu_memory;
      dev.capabilities = node.capabilities;  // Slurm Features describe the node's GPUs too
      dev.probed = false;                    // declared in Slurm's gres.conf, not probed
      node.gpus.push_back(std::move(dev));
    }
    node.used_cpu_millis = Int(n, "alloc_cpus") * 1000;
    node.used_memory_bytes = Int(n, "alloc_memory") * kMiB;
    node.used_gpus = GpuCount(Str(n, "gres_used"));
    std::string raw_state = st.state;
    for (const auto& f : st.flags) raw_state += "+" + ToLower(f);
    node.labels["slurm.state"] = raw_state;
    // Where the node is reached (NodeAddr): serving replicas listen there.
    if (std::string addr = Str(n, "address"); !addr.empty()) node.labels["slurm.address"] = addr;
    node.labels["slurm.partitions"] = Join(partitions, ",");
    if (!st.reason.empty()) node.labels["slurm.reason"] = st.reason;
    out.push_back(std::move(node));
    if (states != nullptr) states->push_back(std::move(st));
  }
  return out;
}

int64_t GpuMemoryBytes(const std::string& gres_type, const std::vector<std::string>& features) {
  // "<anything>_<N>g" (case-insensitive): N GiB.
  auto from = [](std::string word) -> int64_t {
    word = ToLower(word);
    size_t us = word.rfind('_');
    if (us == std::string::npos || word.size() < us + 3 || word.back() != 'g') return 0;
    int64_t gib = ParseInt(std::string_view(word).substr(us + 1, word.size() - us - 2), 0);
    return gib > 0 ? gib << 30 : 0;
  };
  for (const auto& f : features) {
    if (ToLower(f).rfind("gpumem_", 0) == 0) {
      if (int64_t b = from(f)) return b;
    }
  }
  return from(gres_type);
}

Result<int64_t> ParseSbatchOutput(std::string_view out) {
  std::string_view line = Trim(out);
  line = line.substr(0, line.find(';'));
  int64_t id = ParseInt(line, -1);
  if (id <= 0) return BadOutput("sbatch --parsable", out, "expected a job id");
  return id;
}

Outcome Classify(const Job& job, bool stop_requested, bool stop_for_timeout, int64_t memory_bytes) {
  const std::string& s = job.state;
  Outcome o;
  auto finished = [&](ExitKind kind, std::string message) {
    o.phase = Phase::kFinished;
    o.kind = kind;
    o.message = std::move(message);
    return o;
  };
  std::string where = job.nodes.empty() ? "" : " on " + job.nodes;
  std::string id = "Slurm job " + std::to_string(job.job_id);
  if (s == "COMPLETED") {
    if (job.exit_code == 0 && job.signal == 0) return finished(ExitKind::kSucceeded, "");
    return finished(ExitKind::kFailed, id + " exited with " + std::to_string(job.exit_code));
  }
  if (s == "FAILED") {
    std::string why = job.signal != 0 ? "killed by " + SignalName(job.signal)
                                      : "exited with " + std::to_string(job.exit_code);
    if (!job.reason.empty() && job.reason != "None" && job.reason != "NonZeroExitCode") {
      why += " (" + job.reason + ")";
    }
    return finished(ExitKind::kFailed, id + " failed" + where + ": " + why);
  }
  if (s == "TIMEOUT" || s == "DEADLINE") {
    return finished(ExitKind::kTimedOut, id + " reached its Slurm time limit" + where);
  }
  if (s == "OUT_OF_MEMORY") {
    std::string limit =
        memory_bytes > 0 ? "of " + spec::FormatBytes(memory_bytes) +
                               " (--mem=" + std::to_string((memory_bytes + kMiB - 1) / kMiB) + "M)"
                         : "(no memory request: Slurm's DefMemPerCPU)";
    return finished(ExitKind::kOomKilled,
                    id + " exceeded its memory limit " + limit + where + ", OOM-killed");
  }
  if (s == "NODE_FAIL" || s == "BOOT_FAIL") {
    return finished(ExitKind::kNodeLost, id + ": node failure" + where);
  }
  if (s == "PREEMPTED") {
    return finished(ExitKind::kNodeLost, id + " was preempted" + where);
  }
  if (s == "CANCELLED" || s == "REVOKED") {
    if (stop_requested && stop_for_timeout) {
      return finished(ExitKind::kTimedOut, id + " cancelled by RSL: time limit");
    }
    if (stop_requested) return finished(ExitKind::kCancelled, id + " cancelled by RSL");
    // Nobody here asked for it (an admin's scancel, a reservation ending): the attempt
    // failed, and the step's retryPolicy decides what happens next.
    return finished(ExitKind::kFailed, id + " cancelled outside RSL" + where);
  }
  if (s == "RUNNING" || s == "COMPLETING" || s == "SUSPENDED" || s == "STOPPED" ||
      s == "SIGNALING" || s == "STAGE_OUT") {
    o.phase = Phase::kRunning;
    return o;
  }
  o.phase = (s == "PENDING" || s == "CONFIGURING" || s == "REQUEUED" || s == "REQUEUE_HOLD" ||
             s == "REQUEUE_FED" || s == "RESV_DEL_HOLD" || s == "RESIZING" || job.nodes.empty())
                ? Phase::kPending
                : Phase::kRunning;
  return o;
}

}  // namespace rsl::backend::slurm
