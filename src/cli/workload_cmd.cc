// seedctl workload submit|list|status|logs|events|describe|lineage|cancel|history and
// seedctl rollback: the commands that talk to rsl-controller about workloads (docs/cli.md).
// The cluster-wide and credential commands live in workload_admin_cmd.cc.
#include "cli/workload_cmd.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "api/client.h"
#include "api/sse.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "cli/cli.h"
#include "cli/workload_client.h"
#include "cli/workload_format.h"
#include "spec/phase.h"

namespace rsl::cli {

void RegisterWorkloadAdminCommands(CLI::App& app);  // workload_admin_cmd.cc

namespace {

// The API's phase names (an unknown one, from a newer controller, is not terminal).
bool IsTerminal(const std::string& phase) {
  auto p = spec::ParseRunPhase(phase);
  return p.ok() && spec::IsTerminal(*p);
}

// How an ended run failed, as an error (nullopt when it succeeded): its failure code, or
// WORKLOAD_CANCELLED / STEP_FAILED when it has none.
std::optional<Error> RunOutcome(const Json& status) {
  std::string phase = status.value("phase", "");
  if (phase == spec::Name(spec::RunPhase::kSucceeded)) return std::nullopt;
  std::string code = status.value("failureCode", "");
  if (code.empty()) {
    code = phase == spec::Name(spec::RunPhase::kCancelled) ? codes::kWorkloadCancelled
                                                           : codes::kStepFailed;
  }
  std::string message = status.value("failureMessage", "");
  return Error(code, "workload ended " + phase + (message.empty() ? "" : ": " + message));
}

std::string IdPath(const std::string& id, const std::string& what = "") {
  return "/api/v1/workloads/" + api::UrlEncode(id) + (what.empty() ? "" : "/" + what);
}

// Reads the event stream at `path` (GET .../watch, docs/api.md) and hands each event to
// `on_event` (type, data) until the run is terminal (the stream's `end`) or `on_event` answers
// false. A dropped stream is opened again after `retry`, as long as `still_running()` says so;
// a refusal (an error answer) ends the command with its error.
void FollowStreamAt(api::Client& client, const std::string& path, std::chrono::milliseconds retry,
                    const std::function<bool(const std::string&, const Json&)>& on_event,
                    const std::function<bool()>& still_running) {
  for (;;) {
    api::SseParser parser;
    bool ended = false;
    Status st = client.Stream(path, [&](std::string_view piece) {
      for (auto& m : parser.Feed(piece)) {
        Json data = Json::parse(m.data, nullptr, false);
        if (data.is_discarded()) continue;
        ended |= !on_event(m.type, data);
        ended |= m.type == "end" || m.type == "error";
        if (ended) break;
      }
      return !ended;
    });
    if (!st.ok() && !client.last_errors().empty() &&
        client.last_errors().front().code != codes::kIoError) {
      FailWithClient(client);
    }
    if (ended || !still_running()) return;
    std::this_thread::sleep_for(retry);
  }
}

// FollowStreamAt on workload `id`'s own stream.
void FollowStream(api::Client& client, const std::string& id, std::chrono::milliseconds retry,
                  const std::function<void(const std::string&, const Json&)>& on_event,
                  const std::function<bool()>& still_running) {
  FollowStreamAt(
      client, IdPath(id, "watch"), retry,
      [&](const std::string& type, const Json& data) {
        on_event(type, data);
        return true;
      },
      still_running);
}

// `logs -f`: the step logs as the workload's event stream carries them (`log` pieces in step
// order, `logEnd` when a step's log is whole), printed as GET .../logs prints them, with
// "==> step <==" headers when there are several steps. A dropped stream is reopened from the
// logs' start and what was printed already is skipped, so nothing is printed twice.
class LogFollower {
 public:
  LogFollower(bool headers, size_t steps) : headers_(headers), steps_(steps) {}

  //! Called at the start of each (re)opened stream.
  void Reopen() { seen_.clear(); }

  //! Handles one event; false once every followed log has ended.
  bool OnEvent(const std::string& type, const Json& data) {
    std::string step = data.value("step", std::string());
    if (type == "log") {
      std::string text = data.value("text", std::string());
      size_t& seen = seen_[step];
      size_t& printed = printed_[step];
      size_t skip = printed > seen ? std::min(text.size(), printed - seen) : 0;
      seen += text.size();
      if (skip < text.size()) {
        Header(step);
        std::cout.write(text.data() + skip, static_cast<std::streamsize>(text.size() - skip));
        std::cout.flush();
        printed += text.size() - skip;
      }
    } else if (type == "logEnd") {
      Header(step);
      ended_.insert(step);
    }
    return ended_.size() < steps_;
  }

 private:
  void Header(const std::string& step) {
    if (!headers_ || headed_.count(step) != 0) return;
    headed_.insert(step);
    std::cout << "==> " << step << " <==\n";
  }

  bool headers_;
  size_t steps_;
  std::map<std::string, size_t> seen_;     // this stream's bytes per step
  std::map<std::string, size_t> printed_;  // bytes printed per step, over every stream
  std::set<std::string> headed_;
  std::set<std::string> ended_;
};

}  // namespace

void RunWorkloadSubmit(const WorkloadSubmitFlags& f) {
  auto text = ReadFile(f.file);
  if (!text.ok()) FailWith(text.error());
  api::Client client = MakeClient(f.conn);
  std::string path =
      client.config().namespace_.empty()
          ? "/api/v1/workloads"
          : "/api/v1/namespaces/" + api::UrlEncode(client.config().namespace_) + "/workloads";
  // Relative data URIs in the file mean its directory: the controller resolves them there.
  std::error_code ec;
  std::string base_dir = std::filesystem::absolute(f.file, ec).parent_path().string();
  auto w = OrFail(client, client.Post(path, *text, "application/yaml",
                                      {{"X-Rsl-Source", f.file}, {"X-Rsl-Base-Dir", base_dir}}));
  if (!f.conn.output.empty()) return PrintStructured(w, f.conn.output);
  std::cout << FormatSubmitted(w, "Workload submitted successfully!");
}

void RunWorkloadList(const WorkloadListFlags& f) {
  api::Client client = MakeClient(f.conn);
  std::string path = f.all_namespaces ? "/api/v1/workloads?allNamespaces=true"
                                      : NamespacedPath(client, "workloads");
  // Pages as Kubernetes lists do: ?limit=N, then ?continue= the token the last page gave.
  auto query = [&path](const std::string& kv) {
    path += path.find('?') == std::string::npos ? "?" : "&";
    path += kv;
  };
  if (f.limit > 0) query("limit=" + std::to_string(f.limit));
  if (!f.continue_from.empty()) query("continue=" + f.continue_from);
  auto list = OrFail(client, client.Get(path));
  if (f.conn.output == "json" || f.conn.output == "yaml") {
    return PrintStructured(list, f.conn.output);
  }
  std::cout << FormatList(list, f.conn.output == "wide", f.all_namespaces, Env::Default()->NowMs());
  const Json* more = nullptr;
  if (auto m = list.find("metadata"); m != list.end() && m->is_object()) {
    if (auto c = m->find("continue");
        c != m->end() && c->is_string() && !c->get<std::string>().empty())
      more = &*c;
  }
  if (more != nullptr) {
    std::cerr << "more workloads follow: add --continue " << more->get<std::string>() << "\n";
  }
}

void RunWorkloadStatus(const WorkloadStatusFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto w = OrFail(client, client.Get(IdPath(f.id)));
  bool structured = f.conn.output == "json" || f.conn.output == "yaml";
  if (!f.watch) {
    if (structured) return PrintStructured(w, f.conn.output);
    std::cout << FormatStatus(w, f.conn.output == "wide");
    return;
  }
  bool tty = StdoutIsTty() && !structured;
  std::string last;
  int drawn_lines = 0;
  auto show = [&]() {
    if (tty) {
      std::string frame = FormatStatusBars(w);
      if (drawn_lines > 0) std::cout << "\033[" << drawn_lines << "A\033[J";
      std::cout << frame << std::flush;
      drawn_lines = static_cast<int>(std::count(frame.begin(), frame.end(), '\n'));
    } else if (structured) {
      std::string now = w.dump();
      if (now != last) PrintStructured(w, f.conn.output);
      last = now;
    } else {
      std::string line = FormatStatusLine(w);
      if (line != last) std::cout << LocalTime(Env::Default()->NowMs()) << " " << line << std::endl;
      last = line;
    }
  };
  show();
  // Changes come from the controller's event stream as they happen; no polling.
  if (!IsTerminal(w["status"].value("phase", ""))) {
    FollowStream(
        client, f.id, std::chrono::milliseconds(f.interval_ms),
        [&](const std::string& type, const Json& data) {
          api::ApplyWatchEvent(type, data, &w);
          if (type == "workload" || type == "status" || type == "step") show();
        },
        [&]() {
          w = OrFail(client, client.Get(IdPath(f.id)));
          show();
          return !IsTerminal(w["status"].value("phase", ""));
        });
    // The object as the API has it at the end (the summary below reads every field).
    w = OrFail(client, client.Get(IdPath(f.id)));
  }
  if (!structured) std::cout << "\n" << FormatStatus(w, f.conn.output == "wide");
  std::cout.flush();
  // Like `seedctl run`: a script can branch on how the workload ended.
  if (auto end = RunOutcome(w["status"])) FailWith(*end);
}

void RunWorkloadLogs(const WorkloadLogsFlags& f) {
  api::Client client = MakeClient(f.conn);
  // Without -f, and for one replica of a serving step, the logs route (it follows too).
  if (!f.follow || f.replica >= 0) {
    std::string path =
        IdPath(f.id, "logs") +
        api::QueryString({{"step", f.step},
                          {"replica", f.replica >= 0 ? std::to_string(f.replica) : ""},
                          {"follow", f.follow ? "true" : ""}});
    Status st = client.Stream(path, [](std::string_view chunk) {
      std::cout.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      std::cout.flush();
      return true;
    });
    if (!st.ok()) FailWithClient(client);
    return;
  }
  // -f: the logs from their start, then each new line as the workload's event stream brings
  // it, until the step(s) end.
  auto w = OrFail(client, client.Get(IdPath(f.id)));
  // stepCount: status.steps is a page of a big run.
  size_t steps = f.step.empty() ? w["status"].value("stepCount", size_t{0}) : 1;
  if (steps == 0) return;
  LogFollower follower(f.step.empty() && steps > 1, steps);
  std::string path =
      IdPath(f.id, "watch") +
      api::QueryString(
          {{"logStep", f.step}, {"allLogs", f.step.empty() ? "true" : ""}, {"tailBytes", "0"}});
  bool more = true;
  FollowStreamAt(
      client, path, std::chrono::milliseconds(1000),
      [&](const std::string& type, const Json& data) {
        if (type == "workload") follower.Reopen();  // the first event of every stream
        if (type == "error")
          FailWith(Error(data.value("code", std::string(codes::kIoError)),
                         data.value("message", std::string())));
        more = follower.OnEvent(type, data);
        return more;
      },
      [&]() { return more; });
}

void RunWorkloadEvents(const WorkloadEventsFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto ev = OrFail(client, client.Get(IdPath(f.id, "events")));
  if (!f.watch) {
    if (!f.conn.output.empty()) return PrintStructured(ev, f.conn.output);
    std::cout << FormatEvents(ev);
    return;
  }
  // --watch: what there is, then each new event as it is recorded, until the run ends.
  int64_t last_seq = 0;
  bool json = f.conn.output == "json";
  auto print = [&](const Json& e) {
    last_seq = std::max(last_seq, e.value("seq", int64_t{0}));
    if (json) {
      std::cout << e.dump() << std::endl;
    } else {
      std::cout << FormatEventLine(e) << std::endl;
    }
  };
  if (!json) std::cout << FormatEventHeader() << std::endl;
  for (const auto& e : ev.value("items", Json::array())) print(e);
  std::string phase;
  FollowStream(
      client, f.id, std::chrono::milliseconds(1000),
      [&](const std::string& type, const Json& data) {
        if (type == "event" && data.value("seq", int64_t{0}) > last_seq) print(data);
      },
      [&]() {
        auto more = OrFail(client, client.Get(IdPath(f.id, "events")));
        for (const auto& e : more.value("items", Json::array())) {
          if (e.value("seq", int64_t{0}) > last_seq) print(e);
        }
        auto w = OrFail(client, client.Get(IdPath(f.id)));
        return !IsTerminal(w["status"].value("phase", ""));
      });
}

void RunWorkloadDescribe(const WorkloadDescribeFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto number = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string(); };
  auto d = OrFail(client, client.Get(IdPath(f.id, "describe") +
                                     api::QueryString({{"limit", number(f.limit)},
                                                       {"continue", f.continue_from},
                                                       {"eventLimit", number(f.event_limit)}})));
  if (!f.conn.output.empty()) return PrintStructured(d, f.conn.output);
  std::cout << FormatDescribe(d, f.limit);
}

void RunWorkloadLineage(const WorkloadIdFlags& f) {
  api::Client client = MakeClient(f.conn);
  std::string format = f.conn.output == "openlineage" ? "openlineage" : "";
  auto l =
      OrFail(client, client.Get(IdPath(f.id, "lineage") + api::QueryString({{"format", format}})));
  if (f.conn.output == "openlineage" || f.conn.output == "json") {
    return PrintStructured(l, "json");
  }
  if (f.conn.output == "yaml") return PrintStructured(l, "yaml");
  std::cout << l.value("text", "");
}

void RunWorkloadCancel(const WorkloadIdFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto w = OrFail(client, client.Post(IdPath(f.id, "cancel"), "{}"));
  std::string phase = w["status"].value("phase", "");
  if (IsTerminal(phase)) {
    std::cout << "workload " << f.id << " cancelled (status " << phase << ")\n";
  } else {
    std::cout << "workload " << f.id << " cancelling (status " << phase
              << "; steps get SIGTERM, then SIGKILL after the grace period)\n";
  }
}

void RunWorkloadHistory(const WorkloadHistoryFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto list = OrFail(client, client.Get(NamespacedPath(client, "workloads") +
                                        api::QueryString({{"name", f.name}})));
  if (!f.conn.output.empty()) return PrintStructured(list, f.conn.output);
  std::cout << FormatHistory(list);
}

void RunRollback(const WorkloadIdFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto w = OrFail(client, client.Post(IdPath(f.id, "rollback"), "{}"));
  if (!f.conn.output.empty()) return PrintStructured(w, f.conn.output);
  std::cout << FormatSubmitted(w, "Rolled back " + f.id + " as a new version!");
}

namespace {

CLI::App* IdCommand(CLI::App* parent, const std::string& name, const std::string& help,
                    WorkloadIdFlags* o) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  cmd->add_option("--id", o->id, "workload id (wl-YYYYMMDD-<8 hex>)")->required();
  AddConnFlags(cmd, &o->conn, /*namespaced=*/false);
  return cmd;
}

// `events`, `describe`: an id and -o json|yaml.
void IdOutputCommand(CLI::App* parent, const std::string& name, const std::string& help,
                     void (*run)(const WorkloadIdFlags&)) {
  auto o = std::make_shared<WorkloadIdFlags>();
  CLI::App* cmd = IdCommand(parent, name, help, o.get());
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  Bind(cmd, o, run);
}

}  // namespace

void RegisterWorkloadCommands(CLI::App& app) {
  CLI::App* wl = app.add_subcommand("workload", "Submit and inspect workloads on rsl-controller");
  wl->require_subcommand(1);

  auto submit = std::make_shared<WorkloadSubmitFlags>();
  CLI::App* cmd =
      wl->add_subcommand("submit", "Submit an AIWorkload YAML as a new immutable version");
  cmd->add_option("-f,--filename", submit->file, "the workload YAML")->required();
  AddConnFlags(cmd, &submit->conn);
  AddOutputFlag(cmd, &submit->conn, {"json", "yaml"});
  Bind(cmd, submit, &RunWorkloadSubmit);

  auto list = std::make_shared<WorkloadListFlags>();
  cmd = wl->add_subcommand("list", "List workload versions, newest first");
  cmd->add_flag("-A,--all-namespaces", list->all_namespaces, "every namespace the token can read");
  cmd->add_option("--limit", list->limit, "at most this many (a page); the rest via --continue")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->add_option("--continue", list->continue_from,
                  "the token the previous page printed (\"more workloads follow: ...\")");
  AddConnFlags(cmd, &list->conn);
  AddOutputFlag(cmd, &list->conn, {"json", "yaml", "wide"});
  Bind(cmd, list, &RunWorkloadList);

  auto status = std::make_shared<WorkloadStatusFlags>();
  cmd = IdCommand(wl, "status", "Phase, current step, progress and resource use", status.get());
  cmd->add_flag("-w,--watch", status->watch,
                "follow until the workload ends: progress bars on a terminal, one line per "
                "change when piped");
  cmd->add_option("--interval-ms", status->interval_ms,
                  "--watch: wait before reopening a dropped event stream")
      ->check(CLI::Range(100, 60000));
  AddOutputFlag(cmd, &status->conn, {"json", "yaml", "wide"});
  Bind(cmd, status, &RunWorkloadStatus);

  auto logs = std::make_shared<WorkloadLogsFlags>();
  cmd = IdCommand(wl, "logs", "A step's captured output (secret values masked)", logs.get());
  cmd->add_option("--step", logs->step, "the step (default: every step, in pipeline order)");
  cmd->add_option("--replica", logs->replica,
                  "a serving step's replica (default: every replica, each under a header)");
  cmd->add_flag("-f,--follow", logs->follow, "keep streaming until the step(s) end");
  Bind(cmd, logs, &RunWorkloadLogs);

  auto events = std::make_shared<WorkloadEventsFlags>();
  cmd = IdCommand(wl, "events", "What happened, in order (reasons and messages)", events.get());
  cmd->add_flag("-w,--watch", events->watch,
                "then print each new event as it is recorded, until the workload ends");
  AddOutputFlag(cmd, &events->conn, {"json", "yaml"});
  Bind(cmd, events, &RunWorkloadEvents);
  auto describe = std::make_shared<WorkloadDescribeFlags>();
  cmd = IdCommand(wl, "describe",
                  "Canonical spec (secrets redacted), placement, step timings, exit codes",
                  describe.get());
  cmd->add_option("--limit", describe->limit,
                  "steps per page (default 500; 0: every step); the rest via --continue")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  cmd->add_option("--continue", describe->continue_from,
                  "the token the previous page printed (\"more: ... --continue step-N\")");
  cmd->add_option("--event-limit", describe->event_limit,
                  "the last this many events (default 500; 0: every event)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
  AddOutputFlag(cmd, &describe->conn, {"json", "yaml"});
  Bind(cmd, describe, &RunWorkloadDescribe);

  auto lineage = std::make_shared<WorkloadIdFlags>();
  cmd = IdCommand(wl, "lineage", "Input -> steps -> outputs with sizes", lineage.get());
  AddOutputFlag(cmd, &lineage->conn, {"json", "yaml", "openlineage"});
  Bind(cmd, lineage, &RunWorkloadLineage);

  auto cancel = std::make_shared<WorkloadIdFlags>();
  cmd = IdCommand(wl, "cancel", "Stop a run: running steps get SIGTERM, outputs are discarded",
                  cancel.get());
  Bind(cmd, cancel, &RunWorkloadCancel);

  auto history = std::make_shared<WorkloadHistoryFlags>();
  cmd = wl->add_subcommand("history", "Every version of a workload name, oldest first");
  cmd->add_option("--name", history->name, "metadata.name of the workload")->required();
  AddConnFlags(cmd, &history->conn);
  AddOutputFlag(cmd, &history->conn, {"json", "yaml"});
  Bind(cmd, history, &RunWorkloadHistory);

  IdOutputCommand(&app, "rollback",
                  "Run an earlier version's stored snapshot again, as a new version", &RunRollback);

  RegisterWorkloadAdminCommands(app);
}

}  // namespace rsl::cli
