#include "backend/container.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "base/file.h"

namespace rsl::backend {

namespace {

using nlohmann::json;

json Mount(const std::string& dest, const std::string& type, const std::string& source,
           std::vector<std::string> options) {
  return {{"destination", dest}, {"type", type}, {"source", source}, {"options", options}};
}

json Bind(const std::string& dest, const std::string& source, bool ro) {
  std::vector<std::string> o = {"rbind", "nosuid", "nodev"};
  o.push_back(ro ? "ro" : "rw");
  return Mount(dest, "bind", source, o);
}

std::string Dirname(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : p.substr(0, slash);
}

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

}  // namespace

std::string ContainerId(const std::string& attempt_id) {
  std::string s = "rsl-" + attempt_id;
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  return s;
}

ContainerRuntime FindContainerRuntime(const std::string& cinit_dir) {
  ContainerRuntime r;
  const char* rt = getenv("RSL_CONTAINER_RUNTIME");
  std::string runtime = rt && *rt ? rt : "runc";
  if (runtime == "none") return r;
  std::string runc = runtime.find('/') == std::string::npos ? FindInPath(runtime) : runtime;
  const char* ci = getenv("RSL_CINIT");
  std::string cinit = ci && *ci ? ci : cinit_dir + "/rsl-cinit";
  if (!runc.empty() && access(runc.c_str(), X_OK) == 0 && access(cinit.c_str(), R_OK) == 0) {
    r.runc = runc;
    r.cinit = cinit;
  }
  return r;
}

ContainerPlan PlanContainer(const LaunchSpec& spec, const image::CachedImage& image,
                            const ContainerOptions& o) {
  ContainerPlan p;
  p.id = ContainerId(spec.attempt_id);
  p.bundle_dir = o.containers_dir + "/" + p.id;
  // runc's own messages (its warnings that it cannot remove the attempt's cgroup, which
  // rsl-shim still reads and removes) go beside the step's log; a failure to start is also
  // printed to its stderr, the step's log.
  p.argv = {o.runc, "--root", o.runc_root};
  if (!spec.log_path.empty()) {
    p.argv.push_back("--log");
    p.argv.push_back(spec.log_path + ".runc");
  }
  for (const char* a : {"run", "--bundle"}) p.argv.push_back(a);
  p.argv.push_back(p.bundle_dir);
  p.argv.push_back(p.id);

  // Host directories and where they appear inside: the longest host prefix wins when an
  // RSL_* value is rewritten.
  std::vector<std::pair<std::string, std::string>> maps;  // host -> container
  json mounts = json::array();
  mounts.push_back(Mount("/proc", "proc", "proc", {}));
  mounts.push_back(
      Mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  mounts.push_back(Mount("/dev/pts", "devpts", "devpts",
                         {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}));
  mounts.push_back(
      Mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  mounts.push_back(Mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
  mounts.push_back(Mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}));
  mounts.push_back(
      Mount("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}));
  mounts.push_back(Mount("/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}));
  // Host network: the host's name resolution.
  for (const char* f : {"/etc/resolv.conf", "/etc/hosts"}) {
    struct stat st;
    if (stat(f, &st) == 0) mounts.push_back(Bind(f, f, true));
  }
  mounts.push_back(Bind(kContainerInit, o.cinit, true));
  if (!spec.workdir.empty()) {
    mounts.push_back(Bind(kContainerWorkdir, spec.workdir, false));
    maps.emplace_back(spec.workdir, kContainerWorkdir);
  }
  for (size_t i = 0; i < spec.make_dirs.size(); ++i) {
    std::string dest = i == 0 ? kContainerOutput : kContainerOutput + ("-" + std::to_string(i));
    mounts.push_back(Bind(dest, spec.make_dirs[i], false));
    maps.emplace_back(spec.make_dirs[i], dest);
  }
  for (size_t i = 0; i < spec.read_dirs.size(); ++i) {
    std::string dest = std::string(kContainerInputs) + "/" + std::to_string(i);
    mounts.push_back(Bind(dest, spec.read_dirs[i], true));
    maps.emplace_back(spec.read_dirs[i], dest);
  }
  if (!spec.log_path.empty()) {
    std::string d = Dirname(spec.log_path);
    bool covered = false;
    for (const auto& m : maps) covered |= Under(d, m.first);
    if (!covered) {
      mounts.push_back(Bind(kContainerAttempt, d, false));
      maps.emplace_back(d, kContainerAttempt);
    }
  }
  auto rewrite = [&](const std::string& v) -> std::string {
    const std::pair<std::string, std::string>* best = nullptr;
    for (const auto& m : maps) {
      if (Under(v, m.first) && (!best || m.first.size() > best->first.size())) best = &m;
    }
    return best ? best->second + v.substr(best->first.size()) : v;
  };
  // The environment: the image's, then the step's (complete, as for a host step) over it,
  // except PATH, which the image's wins when it sets one.
  std::map<std::string, std::string> env;
  for (const auto& kv : image.env) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  bool image_path = env.count("PATH") > 0;
  for (const auto& [k, v] : spec.env) {
    if (k == "PATH" && image_path) continue;
    std::string value = v;
    if (k.rfind("RSL_", 0) == 0 && !value.empty() && value[0] == '/') {
      std::string r = rewrite(value);
      struct stat st;
      if (r == value && stat(value.c_str(), &st) == 0) {
        // Another host path (a data file, a dependency's path): bound read-only by its name.
        r = std::string(kContainerPaths) + "/" + k;
        mounts.push_back(Bind(r, value, true));
        maps.emplace_back(value, r);
      }
      value = r;
    }
    env[k] = value;
  }
  if (!env.count("PATH"))
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  env["RSL_CONTAINER"] = p.id;
  std::vector<std::string> env_list;
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);

  std::vector<std::string> args = {kContainerInit};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  int64_t uid = o.uid >= 0 ? o.uid : image.uid;
  int64_t gid = o.uid >= 0 ? o.gid : image.gid;
  std::vector<std::string> caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  json process = {
      {"terminal", false},
      {"user", {{"uid", uid}, {"gid", gid}}},
      {"args", args},
      {"env", env_list},
      {"cwd", spec.workdir.empty() ? "/" : kContainerWorkdir},
      {"capabilities",
       {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}},
      {"rlimits", json::array({{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}})},
      {"noNewPrivileges", true},
  };
  json resources = json::object();
  resources["devices"] = json::array({{{"allow", false}, {"access", "rwm"}}});
  if (spec.memory_bytes > 0) resources["memory"] = {{"limit", spec.memory_bytes}};
  if (spec.cpu_millis > 0) {
    resources["cpu"] = {{"quota", spec.cpu_millis * 100}, {"period", 100000}};
  }
  json linux = {
      {"namespaces",
       json::array({{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}})},
      {"resources", resources},
      {"maskedPaths",
       {"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
        "/proc/scsi"}},
      {"readonlyPaths", {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}},
  };
  if (!o.cgroups_path.empty()) linux["cgroupsPath"] = o.cgroups_path;
  p.config = {
      {"ociVersion", "1.0.2"},
      {"process", process},
      {"root", {{"path", image.rootfs}, {"readonly", true}}},
      {"hostname", "rsl"},
      {"mounts", mounts},
      {"linux", linux},
  };
  return p;
}

}  // namespace rsl::backend
