#include "backend/shim_launch.h"

namespace rsl::shim {

namespace {

using nlohmann::json;

std::vector<std::string> Strings(const json& msg, const char* key) {
  std::vector<std::string> out;
  auto it = msg.find(key);
  if (it == msg.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::unique_ptr<Attempt> ParseLaunch(const json& msg) {
  auto a = std::make_unique<Attempt>();
  a->id = msg.value("id", "");
  a->argv = Strings(msg, "argv");
  a->env = Strings(msg, "env");
  a->make_dirs = Strings(msg, "make_dirs");
  a->secrets = Strings(msg, "secrets");
  a->workdir = msg.value("workdir", "");
  a->log_path = msg.value("log", "");
  a->exit_file = msg.value("exit_file", "");
  a->memory = msg.value("memory", 0LL);
  a->cpu_millis = msg.value("cpu_millis", 0LL);
  a->v2_cg = msg.value("v2_cg", "");
  a->mem_cg = msg.value("mem_cg", "");
  a->cpu_cg = msg.value("cpu_cg", "");
  a->grace_ms = msg.value("grace_ms", kDefaultGraceMs);
  a->uid = msg.value("uid", -1LL);
  a->gid = msg.value("gid", -1LL);
  if (a->uid == 0 || (a->uid >= 0 && a->gid < 0)) a->uid = a->gid = -1;  // never root
  a->userns = msg.value("userns", 0) != 0;
  a->hide = Strings(msg, "hide");
  a->ro = Strings(msg, "ro");
  a->in_use = msg.value("in_use", "");
  return a;
}

}  // namespace rsl::shim
