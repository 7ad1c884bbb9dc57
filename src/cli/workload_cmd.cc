// seedctl workload submit|list|status|logs|events|describe|lineage|cancel|history and
// seedctl rollback: the commands that talk to rsl-controller about workloads (docs/cli.md).
// The cluster-wide and credential commands live in workload_admin_cmd.cc.
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "api/client.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "cli/cli.h"
#include "cli/workload_client.h"
#include "cli/workload_format.h"

namespace rsl::cli {

void RegisterWorkloadAdminCommands(CLI::App& app);  // workload_admin_cmd.cc

namespace {

constexpr int kDefaultWatchIntervalMs = 1000;

bool IsTerminal(const std::string& phase) {
  return phase == "SUCCEEDED" || phase == "FAILED" || phase == "TIMED_OUT" ||
         phase == "CANCELLED" || phase == "REJECTED";
}

std::string IdPath(const std::string& id, const std::string& what = "") {
  return "/api/v1/workloads/" + api::UrlEncode(id) + (what.empty() ? "" : "/" + what);
}

struct IdOpts {
  ConnFlags conn;
  std::string id;
};

CLI::App* IdCommand(CLI::App* parent, const std::string& name, const std::string& help,
                    IdOpts* o) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  cmd->add_option("--id", o->id, "workload id (wl-YYYYMMDD-<8 hex>)")->required();
  AddConnFlags(cmd, &o->conn, /*namespaced=*/false);
  return cmd;
}

void Submit(CLI::App* wl) {
  struct Opts {
    ConnFlags conn;
    std::string file;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = wl->add_subcommand("submit", "Submit an AIWorkload YAML as a new immutable version");
  cmd->add_option("-f,--filename", o->file, "the workload YAML")->required();
  AddConnFlags(cmd, &o->conn);
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  cmd->callback([o] {
    auto text = ReadFile(o->file);
    if (!text.ok()) FailWith(text.error());
    api::Client client = MakeClient(o->conn);
    std::string path = client.config().namespace_.empty()
                           ? "/api/v1/workloads"
                           : "/api/v1/namespaces/" + api::UrlEncode(client.config().namespace_) +
                                 "/workloads";
    // Relative data URIs in the file mean its directory: the controller resolves them there.
    std::error_code ec;
    std::string base_dir = std::filesystem::absolute(o->file, ec).parent_path().string();
    auto w = OrFail(client, client.Post(path, *text, "application/yaml",
                                        {{"X-Rsl-Source", o->file}, {"X-Rsl-Base-Dir", base_dir}}));
    if (!o->conn.output.empty()) return PrintStructured(w, o->conn.output);
    std::cout << FormatSubmitted(w, "Workload submitted successfully!");
  });
}

void List(CLI::App* wl) {
  struct Opts {
    ConnFlags conn;
    bool all = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = wl->add_subcommand("list", "List workload versions, newest first");
  cmd->add_flag("-A,--all-namespaces", o->all, "every namespace the token can read");
  AddConnFlags(cmd, &o->conn);
  AddOutputFlag(cmd, &o->conn, {"json", "yaml", "wide"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    std::string path = o->all ? "/api/v1/workloads?allNamespaces=true"
                              : NamespacedPath(client, "workloads");
    auto list = OrFail(client, client.Get(path));
    if (o->conn.output == "json" || o->conn.output == "yaml") {
      return PrintStructured(list, o->conn.output);
    }
    std::cout << FormatList(list, o->conn.output == "wide", o->all, Env::Default()->NowMs());
  });
}

void StatusCmd(CLI::App* wl) {
  struct Opts : IdOpts {
    bool watch = false;
    int interval_ms = kDefaultWatchIntervalMs;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = IdCommand(wl, "status", "Phase, current step, progress and resource use", o.get());
  cmd->add_flag("-w,--watch", o->watch,
                "follow until the workload ends: progress bars on a terminal, one line per "
                "change when piped");
  cmd->add_option("--interval-ms", o->interval_ms, "polling interval for --watch")
      ->check(CLI::Range(100, 60000));
  AddOutputFlag(cmd, &o->conn, {"json", "yaml", "wide"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto w = OrFail(client, client.Get(IdPath(o->id)));
    bool structured = o->conn.output == "json" || o->conn.output == "yaml";
    if (!o->watch) {
      if (structured) return PrintStructured(w, o->conn.output);
      std::cout << FormatStatus(w, o->conn.output == "wide");
      return;
    }
    bool tty = StdoutIsTty() && !structured;
    std::string last;
    int drawn_lines = 0;
    for (;;) {
      std::string phase = w["status"].value("phase", "");
      if (tty) {
        std::string frame = FormatStatusBars(w);
        if (drawn_lines > 0) std::cout << "\033[" << drawn_lines << "A\033[J";
        std::cout << frame << std::flush;
        drawn_lines = static_cast<int>(std::count(frame.begin(), frame.end(), '\n'));
      } else if (structured) {
        std::string now = w.dump();
        if (now != last) PrintStructured(w, o->conn.output);
        last = now;
      } else {
        std::string line = FormatStatusLine(w);
        if (line != last)
          std::cout << LocalTime(Env::Default()->NowMs()) << " " << line << std::endl;
        last = line;
      }
      if (IsTerminal(phase)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(o->interval_ms));
      w = OrFail(client, client.Get(IdPath(o->id)));
    }
    if (!structured) std::cout << "\n" << FormatStatus(w, o->conn.output == "wide");
  });
}

void Logs(CLI::App* wl) {
  struct Opts : IdOpts {
    std::string step;
    bool follow = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = IdCommand(wl, "logs", "A step's captured output (secret values masked)", o.get());
  cmd->add_option("--step", o->step, "the step (default: every step, in pipeline order)");
  cmd->add_flag("-f,--follow", o->follow, "keep streaming until the step(s) end");
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    std::string path = IdPath(o->id, "logs") +
                       api::QueryString({{"step", o->step}, {"follow", o->follow ? "true" : ""}});
    Status st = client.Stream(path, [](std::string_view chunk) {
      std::cout.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      std::cout.flush();
      return true;
    });
    if (!st.ok()) FailWithClient(client);
  });
}

void Events(CLI::App* wl) {
  auto o = std::make_shared<IdOpts>();
  CLI::App* cmd = IdCommand(wl, "events", "What happened, in order (reasons and messages)", o.get());
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto ev = OrFail(client, client.Get(IdPath(o->id, "events")));
    if (!o->conn.output.empty()) return PrintStructured(ev, o->conn.output);
    std::cout << FormatEvents(ev);
  });
}

void Describe(CLI::App* wl) {
  auto o = std::make_shared<IdOpts>();
  CLI::App* cmd = IdCommand(wl, "describe",
                            "Canonical spec (secrets redacted), placement, step timings, exit codes",
                            o.get());
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto d = OrFail(client, client.Get(IdPath(o->id, "describe")));
    if (!o->conn.output.empty()) return PrintStructured(d, o->conn.output);
    std::cout << FormatDescribe(d);
  });
}

void Lineage(CLI::App* wl) {
  auto o = std::make_shared<IdOpts>();
  CLI::App* cmd = IdCommand(wl, "lineage", "Input -> steps -> outputs with sizes", o.get());
  AddOutputFlag(cmd, &o->conn, {"json", "yaml", "openlineage"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    std::string format = o->conn.output == "openlineage" ? "openlineage" : "";
    auto l = OrFail(client, client.Get(IdPath(o->id, "lineage") + api::QueryString({{"format", format}})));
    if (o->conn.output == "openlineage" || o->conn.output == "json") {
      return PrintStructured(l, "json");
    }
    if (o->conn.output == "yaml") return PrintStructured(l, "yaml");
    std::cout << l.value("text", "");
  });
}

void Cancel(CLI::App* wl) {
  auto o = std::make_shared<IdOpts>();
  CLI::App* cmd = IdCommand(wl, "cancel", "Stop a run: running steps get SIGTERM, outputs are discarded",
                            o.get());
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto w = OrFail(client, client.Post(IdPath(o->id, "cancel"), "{}"));
    std::string phase = w["status"].value("phase", "");
    if (IsTerminal(phase)) {
      std::cout << "workload " << o->id << " cancelled (status " << phase << ")\n";
    } else {
      std::cout << "workload " << o->id << " cancelling (status " << phase
                << "; steps get SIGTERM, then SIGKILL after the grace period)\n";
    }
  });
}

void History(CLI::App* wl) {
  struct Opts {
    ConnFlags conn;
    std::string name;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = wl->add_subcommand("history", "Every version of a workload name, oldest first");
  cmd->add_option("--name", o->name, "metadata.name of the workload")->required();
  AddConnFlags(cmd, &o->conn);
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto list = OrFail(client, client.Get(NamespacedPath(client, "workloads") +
                                          api::QueryString({{"name", o->name}})));
    if (!o->conn.output.empty()) return PrintStructured(list, o->conn.output);
    std::cout << FormatHistory(list);
  });
}

void Rollback(CLI::App& app) {
  auto o = std::make_shared<IdOpts>();
  CLI::App* cmd = IdCommand(&app, "rollback",
                            "Run an earlier version's stored snapshot again, as a new version",
                            o.get());
  AddOutputFlag(cmd, &o->conn, {"json", "yaml"});
  cmd->callback([o] {
    api::Client client = MakeClient(o->conn);
    auto w = OrFail(client, client.Post(IdPath(o->id, "rollback"), "{}"));
    if (!o->conn.output.empty()) return PrintStructured(w, o->conn.output);
    std::cout << FormatSubmitted(w, "Rolled back " + o->id + " as a new version!");
  });
}

}  // namespace

void RegisterWorkloadCommands(CLI::App& app) {
  CLI::App* wl = app.add_subcommand("workload", "Submit and inspect workloads on rsl-controller");
  wl->require_subcommand(1);
  Submit(wl);
  List(wl);
  StatusCmd(wl);
  Logs(wl);
  Events(wl);
  Describe(wl);
  Lineage(wl);
  Cancel(wl);
  History(wl);
  Rollback(app);
  RegisterWorkloadAdminCommands(app);
}

}  // namespace rsl::cli
