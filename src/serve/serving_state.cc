#include "serve/serving_state.h"

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::serve {

using nlohmann::json;

std::string SetRecordToJson(const SetRecord& r) {
  json replicas = json::array();
  for (const auto& p : r.replicas) {
    replicas.push_back({{"index", p.index},
                        {"generation", p.generation},
                        {"port", p.port},
                        {"node", p.node},
                        {"host", p.host},
                        {"restarts", p.restarts},
                        {"retiring", p.retiring}});
  }
  json j = {{"proxy_pid", r.proxy_pid},
            {"proxy_dir", r.proxy_dir},
            {"socket", r.socket},
            {"port", r.port},
            {"endpoint", r.endpoint},
            {"server_prefix", r.server_prefix},
            {"desired", r.desired},
            {"next_index", r.next_index},
            {"serving_ready", r.serving_ready},
            {"superseded_by", r.superseded_by},
            {"started_ms", r.started_ms},
            {"replicas", replicas}};
  return j.dump() + "\n";
}

Result<SetRecord> SetRecordFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("proxy_dir") || !j.contains("replicas")) {
    return Error(codes::kInternal, "garbled serving record");
  }
  SetRecord r;
  try {
    r.proxy_pid = j.value("proxy_pid", int64_t{0});
    r.proxy_dir = j.value("proxy_dir", "");
    r.socket = j.value("socket", "");
    r.port = j.value("port", 0);
    r.endpoint = j.value("endpoint", "");
    r.server_prefix = j.value("server_prefix", "");
    r.desired = j.value("desired", 0);
    r.next_index = j.value("next_index", 0);
    r.serving_ready = j.value("serving_ready", false);
    r.superseded_by = j.value("superseded_by", "");
    r.started_ms = j.value("started_ms", int64_t{0});
    for (const auto& p : j["replicas"]) {
      ReplicaRecord rep;
      rep.index = p.value("index", 0);
      rep.generation = p.value("generation", 0);
      rep.port = p.value("port", 0);
      rep.node = p.value("node", "");
      rep.host = p.value("host", "");
      rep.restarts = p.value("restarts", 0);
      rep.retiring = p.value("retiring", false);
      r.replicas.push_back(rep);
    }
  } catch (const json::exception& e) {
    return Error(codes::kInternal, std::string("garbled serving record: ") + e.what());
  }
  return r;
}

std::string SetRecordPath(const backend::LaunchSpec& spec) {
  return spec.exit_file + ".serving.json";
}

std::string ServerPrefix(const backend::LaunchSpec& spec) {
  // The whole id after "run-", its date too: the hex is the second of the day (store/store.h
  // NewVersionId), which a version submitted a day later at the same second can share.
  std::string run = StartsWith(spec.run_id, "run-") ? spec.run_id.substr(4) : spec.run_id;
  std::string out;
  for (char c : run) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out + "." + std::to_string(spec.attempt) + "-";
}

backend::LaunchSpec ReplicaLaunch(const backend::LaunchSpec& parent, int index, int generation,
                                  int port) {
  std::string tag = "r" + std::to_string(index) + "-" + std::to_string(generation);
  backend::LaunchSpec s = parent;
  s.serving.reset();
  s.timeout_ms.reset();
  s.attempt_id = parent.attempt_id + "/" + tag;
  s.workdir = parent.workdir + "." + tag;
  std::string base = parent.exit_file;
  if (EndsWith(base, ".exit")) base.resize(base.size() - 5);
  s.exit_file = base + "." + tag + ".exit";
  s.log_path = base + "." + tag + ".log";
  s.env["RSL_PORT"] = std::to_string(port);
  s.env["RSL_REPLICA"] = std::to_string(index);
  s.env["RSL_METRICS_FILE"] = s.workdir + "/.rsl-metrics.json";
  s.env["RSL_PROGRESS_FILE"] = s.workdir + "/.rsl-progress";
  return s;
}

}  // namespace rsl::serve
