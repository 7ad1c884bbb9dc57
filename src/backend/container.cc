#include "backend/container.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

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

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

// The placed GPUs' host indices from CUDA_VISIBLE_DEVICES ("1,3"); none when unset, empty
// or not all indices (a UUID list the step set itself: left as it is).
std::vector<int> PlacedGpus(const std::map<std::string, std::string>& env) {
  auto it = env.find("CUDA_VISIBLE_DEVICES");
  std::vector<int> out;
  if (it == env.end() || it->second.empty()) return out;
  size_t start = 0;
  while (start <= it->second.size()) {
    size_t comma = it->second.find(',', start);
    if (comma == std::string::npos) comma = it->second.size();
    std::string part = it->second.substr(start, comma - start);
    if (part.empty() || part.size() > 4 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return {};
    out.push_back(std::stoi(part));
    start = comma + 1;
  }
  return out;
}

// A host character device node as an OCI linux.devices entry at `dest` and its allow rule.
bool DeviceEntry(const std::string& host, const std::string& dest, json* device, json* rule) {
  struct stat st;
  if (stat(host.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return false;
  *device = {{"path", dest},
             {"type", "c"},
             {"major", int64_t(major(st.st_rdev))},
             {"minor", int64_t(minor(st.st_rdev))},
             {"fileMode", int64_t(st.st_mode & 07777)},
             {"uid", int64_t(st.st_uid)},
             {"gid", int64_t(st.st_gid)}};
  *rule = {{"allow", true},
           {"type", "c"},
           {"major", int64_t(major(st.st_rdev))},
           {"minor", int64_t(minor(st.st_rdev))},
           {"access", "rwm"}};
  return true;
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

Result<ContainerPlan> PlanContainer(const LaunchSpec& spec, const image::CachedImage& image,
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
  // The placed GPUs (docs/image.md "GPUs in containers"): their nodes (at their host names)
  // and the control nodes that exist; inside numbered 0..n-1, as Docker's --gpus does.
  std::vector<int> gpus = o.gpu_devices ? PlacedGpus(spec.env) : std::vector<int>{};
  json devices = json::array(), rules = json::array();
  std::string host_indices;
  if (!gpus.empty()) {
    const char* dd = getenv("RSL_GPU_DEVICE_DIR");
    std::string dev_dir = dd && *dd ? dd : "/dev";
    auto declared = spec.env.find("RSL_GPUS_DECLARED_NOT_PROBED");
    bool not_probed = declared != spec.env.end() && declared->second == "1";
    std::vector<std::string> passed, missing, renumbered;
    for (size_t i = 0; i < gpus.size(); ++i) {
      std::string name = "nvidia" + std::to_string(gpus[i]);
      json d, r;
      if (DeviceEntry(dev_dir + "/" + name, "/dev/" + name, &d, &r)) {
        devices.push_back(d);
        rules.push_back(r);
        passed.push_back("/dev/" + name);
      } else {
        missing.push_back(dev_dir + "/" + name);
      }
      renumbered.push_back(std::to_string(i));
      host_indices += (i ? "," : "") + std::to_string(gpus[i]);
    }
    if (!missing.empty() && !not_probed) {
      return Error(codes::kGpuDeviceNotFound, "the step's placed GPU " + host_indices +
                                                  " has no device node " + Join(missing, ", "))
          .Value(missing.front())
          .Hint(
              "check the NVIDIA driver on this host (nvidia-smi) and the node's GPU inventory; "
              "RSL_GPU_DEVICE_DIR names another device directory");
    }
    for (const char* c : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
      json d, r;
      if (DeviceEntry(dev_dir + "/" + c, std::string("/dev/") + c, &d, &r)) {
        devices.push_back(d);
        rules.push_back(r);
        passed.push_back(std::string("/dev/") + c);
      }
    }
    env["CUDA_VISIBLE_DEVICES"] = Join(renumbered, ",");
    env["NVIDIA_VISIBLE_DEVICES"] = host_indices;
    env["RSL_GPU_HOST_INDICES"] = host_indices;
    p.gpus = "GPUs " + host_indices + " as " + env["CUDA_VISIBLE_DEVICES"] + ": " +
             (passed.empty() ? std::string("no device nodes") : Join(passed, " "));
    if (!missing.empty()) {
      p.gpus += "; declared, not probed: no device node " + Join(missing, ", ") +
                ", the step runs without it";
    }
  }
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
  for (const auto& r : rules) resources["devices"].push_back(r);
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
  if (!devices.empty()) linux["devices"] = devices;
  p.config = {
      {"ociVersion", "1.0.2"},
      {"process", process},
      {"root", {{"path", image.rootfs}, {"readonly", true}}},
      {"hostname", "rsl"},
      {"mounts", mounts},
      {"linux", linux},
  };
  // The NVIDIA container toolkit, where installed, mounts the driver's libraries and tools.
  std::string hook = gpus.empty() ? "" : FindInPath("nvidia-container-runtime-hook");
  if (!hook.empty()) {
    p.config["hooks"] = {
        {"prestart",
         json::array({{{"path", hook},
                       {"args", {"nvidia-container-runtime-hook", "prestart"}},
                       {"env",
                        {"NVIDIA_VISIBLE_DEVICES=" + host_indices,
                         "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}}})}};
    p.gpus += "; nvidia-container-runtime-hook " + hook;
  }
  return p;
}

}  // namespace rsl::backend
