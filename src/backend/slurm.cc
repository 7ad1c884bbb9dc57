#include "backend/slurm.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>

#include "backend/slurm_backend.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "image/reference.h"
#include "spec/quantity.h"

namespace rsl::backend {
namespace {

// A hung slurmctld must not hang the engine: every client command is killed after this.
constexpr int64_t kCommandTimeoutMs = 30000;
// Launch checks feasibility against a node list at most this old (sinfo is cheap, but a
// 20-step DAG should not run it 20 times in a row).
constexpr int64_t kNodeCacheMs = 10000;

std::string Mi(int64_t bytes) {
  return std::to_string((bytes + slurm::kMiB - 1) / slurm::kMiB) + "Mi";
}

std::string ParentDir(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// sbatch's refusals that mean "no node could ever run this" rather than "Slurm is broken".
bool IsUnsatisfiable(const std::string& err) {
  static const char* kPhrases[] = {"Requested node configuration is not available",
                                   "Invalid feature specification",
                                   "Memory specification can not be satisfied",
                                   "Invalid generic resource", "More processors requested"};
  for (const char* p : kPhrases) {
    if (err.find(p) != std::string::npos) return true;
  }
  return false;
}

// sbatch's failures that mean "Slurm did not answer" (try again later), not "no".
bool IsUnreachable(const std::string& err) {
  static const char* kPhrases[] = {
      "Unable to contact slurm controller", "Socket timed out",   "temporarily unable",
      "Zero Bytes were transmitted",        "Connection refused", "killed after"};
  for (const char* p : kPhrases) {
    if (err.find(p) != std::string::npos) return true;
  }
  return false;
}

// Every client the backend runs, looked up now rather than at the first launch.
Status CheckSlurmClients() {
  for (const char* cmd : {"sbatch", "squeue", "sinfo", "scancel", "sacct"}) {
    if (FindInPath(cmd).empty()) {
      return Error(codes::kInvalidArgument, std::string("Slurm client '") + cmd + "' not found")
          .Value(cmd)
          .Hint("install Slurm's client commands (slurm-client) and put them on PATH");
    }
  }
  return Status::Ok();
}

// slurmctld answers (22.05's sinfo --json exits 0 with an "errors" array when it does not)
// and the partition, if one is named, exists and has nodes.
Status CheckSlurmAnswers(CommandRunner* runner, const std::string& partition) {
  auto ping = runner->Run({"sinfo", "--json"});
  if (!ping.ok()) return ping.error();
  if (ping->exit_code != 0) {
    return Error(codes::kInternal, "cannot reach Slurm: " + std::string(Trim(ping->err)))
        .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  }
  auto all = slurm::ParseSinfoJson(ping->out, "", nullptr);
  if (!all.ok()) {
    Error e = all.error();
    e.message = "cannot reach Slurm: " + e.message;
    return e;
  }
  if (partition.empty()) return Status::Ok();
  std::set<std::string> known;
  for (const auto& n : *all) {
    for (const auto& p : Split(n.labels.at("slurm.partitions"), ',')) {
      if (!p.empty()) known.insert(p);
    }
  }
  if (known.count(partition)) return Status::Ok();
  std::vector<std::string> names(known.begin(), known.end());
  return Error(codes::kInvalidArgument, "Slurm partition " + Quote(partition) + " not found")
      .Value(partition)
      .Hint(ClosestHint(partition, names,
                        "partitions with nodes: " + (names.empty() ? "none" : Join(names, ", "))));
}

}  // namespace

SlurmBackend::SlurmBackend(SlurmBackendOptions options, std::unique_ptr<CommandRunner> runner)
    : options_(std::move(options)),
      env_(options_.env ? options_.env : Env::Default()),
      runner_(std::move(runner)) {
  files_dir_ = options_.files_dir;
  if (files_dir_.empty()) {
    files_dir_ =
        (options_.backend.state_dir.empty() ? std::string(".") : options_.backend.state_dir) +
        "/slurm";
  }
  identities_ = std::make_unique<IdentityMap>(
      options_.backend.state_dir.empty() ? std::string(".") : options_.backend.state_dir,
      options_.isolation.uid_base);
  if (options_.start_monitor) monitor_ = std::thread([this] { MonitorLoop(); });
}

SlurmBackend::~SlurmBackend() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  std::vector<std::thread> pullers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pullers.swap(pullers_);
  }
  for (auto& t : pullers) t.join();  // a pull in flight finishes (it fills the cache)
  for (auto& [id, a] : attempts_) {
    if (a->in_use_fd >= 0) ::close(a->in_use_fd);
  }
}

void SlurmBackend::SetContainerRuntime(ContainerRuntime runtime) {
  runtime_ = std::move(runtime);
  const char* v = getenv("RSL_IMAGE_CACHE_BYTES");
  char* end = nullptr;
  long long n = v && *v ? strtoll(v, &end, 10) : -1;
  int64_t max = end && *end == 0 && n >= 0 ? int64_t(n) : image::BundleCache::kDefaultMaxBytes;
  cache_ = std::make_unique<image::BundleCache>(
      options_.backend.state_dir.empty() ? std::string(".") : options_.backend.state_dir, max);
}

Result<std::vector<sched::Node>> SlurmBackend::QueryNodes(std::vector<slurm::NodeState>* states) {
  auto out = runner_->Run({"sinfo", "--json"});
  Result<std::vector<sched::Node>> nodes = Error(codes::kInternal, "");
  if (!out.ok()) {
    nodes = out.error();
  } else if (out->exit_code != 0) {
    nodes =
        Error(codes::kInternal, "Slurm unreachable: sinfo failed: " + std::string(Trim(out->err)))
            .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  } else {
    nodes = slurm::ParseSinfoJson(out->out, options_.backend.slurm_partition, states);
  }
  if (!nodes.ok()) {
    MarkReachable(false, nodes.error().message);
    return nodes;
  }
  bool report = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    node_cache_ = *nodes;
    node_cache_ms_ = env_->MonotonicMs();
    // The engine hears of it every node_refresh_ms, not on every poll.
    report =
        nodes_reported_ms_ == 0 || node_cache_ms_ - nodes_reported_ms_ >= options_.node_refresh_ms;
    if (report) nodes_reported_ms_ = node_cache_ms_;
  }
  MarkReachable(true, "");
  if (report && on_nodes) on_nodes(*nodes);
  return nodes;
}

Result<std::vector<sched::Node>> SlurmBackend::ListNodes() { return QueryNodes(nullptr); }

std::vector<std::string> SlurmBackend::DeclaredCapabilities() {
  std::set<std::string> caps;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : node_cache_) caps.insert(n.capabilities.begin(), n.capabilities.end());
  return {caps.begin(), caps.end()};
}

void SlurmBackend::RefreshNodes(bool force) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!force && env_->MonotonicMs() - node_cache_ms_ < options_.node_refresh_ms) return;
  }
  (void)QueryNodes(nullptr);
}

void SlurmBackend::MarkReachable(bool reachable, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reachable) {
    unreachable_since_ms_ = 0;
    unreachable_why_.clear();
  } else if (unreachable_since_ms_ == 0) {
    unreachable_since_ms_ = std::max<int64_t>(1, env_->MonotonicMs());
    constexpr std::string_view kSaid = "Slurm unreachable: ";  // said by the messages using it
    unreachable_why_ = why.rfind(kSaid, 0) == 0 ? why.substr(kSaid.size()) : why;
  }
}

Status SlurmBackend::CheckFeasible(const LaunchSpec& spec) {
  std::vector<sched::Node> nodes;
  bool known = false, down = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    down = unreachable_since_ms_ > 0;
    known = node_cache_ms_ > 0 && (down || env_->MonotonicMs() - node_cache_ms_ <= kNodeCacheMs);
    if (known) nodes = node_cache_;
  }
  if (!known && !down) {
    auto fresh = QueryNodes(nullptr);
    if (fresh.ok()) {
      nodes = *fresh;
      known = true;
    }
  }
  // Nothing known (Slurm does not answer): sbatch decides, now or once Slurm is back.
  if (!known) return Status::Ok();
  auto fail = [&](const std::string& message, const std::string& value) {
    return Error(codes::kInsufficientResources, "step '" + spec.step + "': " + message)
        .Value(value)
        .Hint("no node of the Slurm cluster (partition '" +
              (options_.backend.slurm_partition.empty() ? std::string("default")
                                                        : options_.backend.slurm_partition) +
              "') can ever run it; lower the request or add nodes (seedctl node list)");
  };
  if (nodes.empty()) return fail("the Slurm partition has no nodes", "");
  std::vector<const sched::Node*> fit;
  for (const auto& cap : spec.capabilities) {
    bool any = std::any_of(nodes.begin(), nodes.end(), [&](const sched::Node& n) {
      return std::find(n.capabilities.begin(), n.capabilities.end(), cap) != n.capabilities.end();
    });
    if (!any) {
      std::vector<std::string> have;
      for (const auto& n : nodes) have.push_back(n.name + ": " + Join(n.capabilities, ","));
      return fail(
          "no Slurm node has capability '" + cap + "' (node features: " + Join(have, "; ") + ")",
          cap);
    }
  }
  for (const auto& n : nodes) {
    bool all = std::all_of(spec.capabilities.begin(), spec.capabilities.end(), [&](auto& c) {
      return std::find(n.capabilities.begin(), n.capabilities.end(), c) != n.capabilities.end();
    });
    if (all) fit.push_back(&n);
  }
  std::string with =
      spec.capabilities.empty() ? "" : " with [" + Join(spec.capabilities, ",") + "]";
  if (fit.empty()) {
    return fail("no Slurm node has all of [" + Join(spec.capabilities, ",") + "] at once",
                Join(spec.capabilities, "&"));
  }
  auto best = [&](auto metric) {
    const sched::Node* b = fit[0];
    for (auto* n : fit) {
      if (metric(*n) > metric(*b)) b = n;
    }
    return b;
  };
  int64_t cpus = std::max<int64_t>(1, (spec.cpu_millis + 999) / 1000);
  auto gpus_of = [](const sched::Node& n) { return static_cast<int64_t>(n.gpus.size()); };
  auto b = best(gpus_of);
  if (gpus_of(*b) < spec.gpus) {
    return fail("no Slurm node" + with + " has " + std::to_string(spec.gpus) +
                    " GPUs (most: " + b->name + " with " + std::to_string(gpus_of(*b)) + ")",
                std::to_string(spec.gpus));
  }
  b = best([](const sched::Node& n) { return n.cpu_millis; });
  if (b->cpu_millis < cpus * 1000) {
    return fail("no Slurm node" + with + " has " + std::to_string(cpus) + " CPUs (most: " +
                    b->name + " with " + std::to_string(b->cpu_millis / 1000) + ")",
                std::to_string(cpus));
  }
  b = best([](const sched::Node& n) { return n.memory_bytes; });
  if (b->memory_bytes < spec.memory_bytes) {
    return fail("no Slurm node" + with + " has " + Mi(spec.memory_bytes) +
                    " memory (most: " + b->name + " with " + Mi(b->memory_bytes) + ")",
                Mi(spec.memory_bytes));
  }
  for (auto* n : fit) {
    if (gpus_of(*n) >= spec.gpus && n->cpu_millis >= cpus * 1000 &&
        n->memory_bytes >= spec.memory_bytes) {
      return Status::Ok();
    }
  }
  return fail("no single Slurm node" + with + " has " + std::to_string(cpus) + " CPUs, " +
                  Mi(spec.memory_bytes) + " memory and " + std::to_string(spec.gpus) +
                  " GPUs at once",
              "");
}

Status SlurmBackend::WriteAttemptFiles(const LaunchSpec& spec, const slurm::AttemptFiles& files,
                                       const std::optional<StepIdentity>& who,
                                       const slurm::ContainerJob* container) {
  // The same attempt id launched again (rescheduled after node loss) reuses the directory:
  // every file is replaced by rename, so an orphan's bash keeps reading its own old script.
  RSL_RETURN_IF_ERROR(MakeDirs(files.dir));
  ::chmod(files.dir.c_str(), 0700);
  RSL_RETURN_IF_ERROR(slurm::WritePrivateFile(files.env, slurm::EnvFileContents(spec), 0600));
  RSL_RETURN_IF_ERROR(
      slurm::WritePrivateFile(files.script, slurm::BatchScript(spec, files, who, container), 0700));
  for (const std::string& file : {spec.log_path, spec.exit_file}) {
    if (file.empty()) continue;
    RSL_RETURN_IF_ERROR(MakeDirs(ParentDir(file)));
    // An isolated step never sees the logs and exit records: they are ours alone.
    if (who) ::chmod(ParentDir(file).c_str(), 0700);
  }
  std::vector<std::string> own = spec.make_dirs;
  if (!spec.workdir.empty()) own.push_back(spec.workdir);
  for (const auto& d : own) {
    RSL_RETURN_IF_ERROR(MakeDirs(d));
    if (who) RSL_RETURN_IF_ERROR(HandDirTo(d, *who));
  }
  return Status::Ok();
}

Result<int64_t> SlurmBackend::Submit(const Attempt& a, bool* unreachable) {
  *unreachable = false;
  const std::string& step = a.spec.step;
  auto out = runner_->Run(a.sbatch_args);
  if (!out.ok()) return out.error();
  if (out->exit_code != 0) {
    std::string err(Trim(out->err));
    if (IsUnsatisfiable(err)) {
      return Error(codes::kInsufficientResources, "step '" + step + "': Slurm refused it: " + err)
          .Value(Join(std::vector<std::string>(a.sbatch_args.begin() + 1, a.sbatch_args.end() - 1),
                      " "))
          .Hint("no node of the Slurm cluster matches; see seedctl node list");
    }
    *unreachable = IsUnreachable(err);
    return Error(codes::kInternal, "sbatch failed for step '" + step + "': " + err)
        .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  }
  return slurm::ParseSbatchOutput(out->out);
}

Status SlurmBackend::Accept(Attempt* a, int64_t job_id, std::vector<AttemptEvent>* events) {
  // The job id file tells the batch script it is still the live job (see BatchScript) and
  // lets Adopt find the job after a controller restart.
  Status s = slurm::WritePrivateFile(a->files.job_id, std::to_string(job_id) + "\n", 0600);
  {
    std::lock_guard<std::mutex> lock(mu_);
    a->job_id = job_id;
  }
  std::string in;
  if (a->container) {
    in = " to run in container " + a->container->id + " (runc) from " +
         a->spec.env.at("RSL_IMAGE_DIGEST") + ", read-only rootfs";
  }
  events->push_back(
      {a->spec.attempt_id, spec::EventReason::kSubmitted,
       "Slurm job " + std::to_string(job_id) + " (" + slurm::JobName(a->spec) + ") submitted" + in,
       ""});
  return s;
}

std::vector<std::string> SlurmBackend::SpreadExclude(const LaunchSpec& spec) {
  if (spec.spread_from.empty()) return {};
  std::vector<sched::Node> nodes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes = node_cache_;
  }
  auto avoided = [&spec](const std::string& name) {
    return std::find(spec.spread_from.begin(), spec.spread_from.end(), name) !=
           spec.spread_from.end();
  };
  int64_t cpus = std::max<int64_t>(1, (spec.cpu_millis + 999) / 1000) * 1000;  // as sbatch asks
  std::vector<std::string> exclude;
  bool elsewhere = false;
  for (const auto& n : nodes) {
    if (avoided(n.name)) {
      exclude.push_back(n.name);
      continue;
    }
    if (n.state != spec::NodeState::kReady) continue;
    bool features = std::all_of(spec.capabilities.begin(), spec.capabilities.end(), [&](auto& c) {
      return std::find(n.capabilities.begin(), n.capabilities.end(), c) != n.capabilities.end();
    });
    if (features && n.cpu_millis - n.used_cpu_millis >= cpus &&
        n.memory_bytes - n.used_memory_bytes >= spec.memory_bytes &&
        int64_t(n.gpus.size()) - n.used_gpus >= spec.gpus) {
      elsewhere = true;
    }
  }
  if (!elsewhere) return {};
  return exclude;
}

Status SlurmBackend::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) {
    return Error(codes::kInvalidArgument, "step '" + spec.step + "' has no command")
        .Value(spec.attempt_id);
  }
  RSL_RETURN_IF_ERROR(CheckFeasible(spec));
  // A stale exit record (an earlier launch with the same path) must not end this attempt.
  if (!spec.exit_file.empty()) ::unlink(spec.exit_file.c_str());
  slurm::AttemptFiles files = slurm::AttemptPaths(files_dir_, spec.attempt_id);
  auto who = StepIdentityFor(options_.isolation, identities_.get(), spec.namespace_);
  if (!who.ok()) return who.error();
  auto a = std::make_unique<Attempt>();
  a->spec = spec;
  a->files = files;
  // A registry image (admission recorded its digest) runs in a container where a runtime is
  // installed: from the cache now, or after a puller has brought it (never on this path).
  auto digest = spec.env.find("RSL_IMAGE_DIGEST");
  auto image_ref = spec.env.find("RSL_IMAGE");
  std::optional<image::Reference> ref;
  if (digest != spec.env.end() && image_ref != spec.env.end() && !runtime_.runc.empty()) {
    auto parsed = image::ParseReference(image_ref->second);
    if (!parsed.ok()) return parsed.error();
    ref = *parsed;
  }
  bool pull = ref && !cache_->Has(digest->second);
  std::optional<image::Credentials> creds;
  if (ref) {
    if (auto it = spec.pull_credentials.find(ref->registry); it != spec.pull_credentials.end()) {
      creds = image::Credentials{it->second.username, it->second.password};
    }
  }
  Status written = Status::Ok();
  if (ref && !pull) {
    auto cached = cache_->Ensure(ref->Name() + "@" + digest->second, digest->second,
                                 ref->plain_http, creds ? &*creds : nullptr);
    if (!cached.ok()) return cached.error();
    a->in_use_fd = cached->in_use_fd;
    auto c = PrepareContainer(spec, files, *who, *cached);
    if (c.ok()) a->container = *c;
    written = c.ok() ? WriteAttemptFiles(spec, files, *who, &*a->container) : c.error();
  } else if (!pull) {
    written = WriteAttemptFiles(spec, files, *who);
  }
  if (!written.ok()) {
    RemoveSecretFiles(a.get());
    return written;
  }
  bool mask = !spec.secret_values.empty() && !spec.log_path.empty();
  std::string output = mask ? files.raw_log : (spec.log_path.empty() ? "/dev/null" : spec.log_path);
  std::vector<std::string> exclude = SpreadExclude(spec);
  a->sbatch_args = slurm::SbatchArgs(spec, options_.backend.slurm_partition, output, exclude);
  a->sbatch_args.push_back(files.script);
  if (mask) a->masker = std::make_unique<slurm::LogMasker>(spec.secret_values);
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unreachable_since_ms_ > 0) why = unreachable_why_;
  }
  std::vector<AttemptEvent> events;
  if (pull) {
    std::string pinned = ref->Name() + "@" + digest->second;
    a->awaiting_image = true;
    events.push_back(
        {spec.attempt_id, spec::EventReason::kImagePulling,
         "pulling " + pinned + " into the image cache (the job is submitted when it is unpacked)",
         ""});
  } else if (why.empty()) {
    bool unreachable = false;
    auto id = Submit(*a, &unreachable);
    if (id.ok()) {
      RSL_RETURN_IF_ERROR(Accept(a.get(), *id, &events));
    } else if (unreachable) {
      why = id.error().message;
      MarkReachable(false, why);
    } else {
      RemoveSecretFiles(a.get());
      return id.error();
    }
  }
  if (!why.empty() && !pull) {
    // Slurm does not answer: the monitor submits it once it does (a dead slurmctld costs
    // the engine's loop one sbatch time-out, not one per step).
    a->awaiting_submit = true;
    events.push_back({spec.attempt_id, spec::EventReason::kPending,
                      "waiting for Slurm to answer before submitting (" + why + ")", ""});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[spec.attempt_id] = std::move(a);
    if (pull) {  // after the attempt is there for the puller to find
      pullers_.emplace_back([this, id = spec.attempt_id,
                             pinned = ref->Name() + "@" + digest->second, d = digest->second,
                             plain = ref->plain_http,
                             creds] { PullThenSubmit(id, pinned, d, plain, creds); });
    }
  }
  cv_.notify_all();
  for (const auto& e : events) {
    if (on_event) on_event(e);
  }
  return Status::Ok();
}

Result<slurm::ContainerJob> SlurmBackend::PrepareContainer(const LaunchSpec& spec,
                                                           const slurm::AttemptFiles& files,
                                                           const std::optional<StepIdentity>& who,
                                                           const image::CachedImage& image) {
  ContainerOptions co;
  co.runc = runtime_.runc;
  co.runc_root = files_dir_ + "/runc";
  co.containers_dir = files.dir;
  co.cinit = runtime_.cinit;
  co.cgroups_path = slurm::kJobCgroupPlaceholder;
  if (who) {
    co.uid = int64_t(who->uid);
    co.gid = int64_t(who->gid);
  }
  // Slurm picks the GPUs on the compute node (gres): the batch script adds their device nodes
  // there (ContainerJob::gpus), not this host's.
  co.gpu_devices = false;
  auto planned = PlanContainer(spec, image, co);
  if (!planned.ok()) return planned.error();
  ContainerPlan plan = std::move(*planned);
  plan.config["process"]["env"].push_back(slurm::kSlurmEnvPlaceholder);
  // Slurm's task/cgroup limits the job's cgroup, whose child the container's is: the limits
  // stay the job's alone, so an OOM kill happens (and is counted, OUT_OF_MEMORY) there.
  plan.config["linux"]["resources"].erase("memory");
  plan.config["linux"]["resources"].erase("cpu");
  slurm::ContainerJob c;
  c.id = plan.id;
  c.config_template = files.container_config;
  c.bundle_dir = plan.bundle_dir;
  c.runc = co.runc;
  c.runc_root = co.runc_root;
  c.in_use = image.dir + "/in-use";
  // PlanContainer's argv is runc --root R [--log L] run --bundle B ID.
  c.args.assign(plan.argv.begin() + 3, plan.argv.end());
  if (spec.gpus > 0) {
    const char* dd = getenv("RSL_GPU_DEVICE_DIR");
    c.gpus = true;
    c.gpu_device_dir = dd && *dd ? dd : "/dev";
    if (c.gpu_device_dir.find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-") !=
        std::string::npos) {
      return Error(codes::kInvalidArgument,
                   "RSL_GPU_DEVICE_DIR has a character the batch script "
                   "cannot use")
          .Value(c.gpu_device_dir)
          .Hint("name a directory with letters, digits and _ . / - only");
    }
    auto& lx = plan.config["linux"];
    if (!lx.contains("devices")) lx["devices"] = nlohmann::json::array();
    lx["devices"].push_back(slurm::kGpuDevicesPlaceholder);
    lx["resources"]["devices"].push_back(slurm::kGpuRulesPlaceholder);
  }
  RSL_RETURN_IF_ERROR(MakeDirs(files.dir));
  ::chmod(files.dir.c_str(), 0700);
  RSL_RETURN_IF_ERROR(MakeDirs(co.runc_root));
  // The step's environment, secrets included: RSL's alone (0600), removed when it ends.
  RSL_RETURN_IF_ERROR(slurm::WritePrivateFile(c.config_template, plan.config.dump(1) + "\n", 0600));
  return c;
}

void SlurmBackend::PullThenSubmit(std::string attempt_id, std::string pinned, std::string digest,
                                  bool plain_http, std::optional<image::Credentials> credentials) {
  auto cached = cache_->Ensure(pinned, digest, plain_http, credentials ? &*credentials : nullptr);
  std::optional<AttemptEvent> event;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(attempt_id);
    Attempt* a = it == attempts_.end() ? nullptr : it->second.get();
    if (a == nullptr || !a->awaiting_image || a->immediate_exit || stopping_) {
      if (cached.ok()) ::close(cached->in_use_fd);  // stopped meanwhile
      return;
    }
    a->awaiting_image = false;
    Status written = cached.ok() ? Status::Ok() : Status(cached.error());
    if (cached.ok()) {
      a->in_use_fd = cached->in_use_fd;
      auto who = StepIdentityFor(options_.isolation, identities_.get(), a->spec.namespace_);
      auto c = who.ok() ? PrepareContainer(a->spec, a->files, *who, *cached)
                        : Result<slurm::ContainerJob>(who.error());
      if (c.ok()) a->container = *c;
      written = c.ok() ? WriteAttemptFiles(a->spec, a->files, *who, &*a->container) : c.error();
    }
    if (!written.ok()) {
      AttemptExit e;
      e.attempt_id = attempt_id;
      e.kind = ExitKind::kFailed;
      e.code = written.error().code;
      e.message = "cannot start: " + written.error().ToString();
      a->immediate_exit = e;
    } else {
      a->awaiting_submit = true;  // the monitor submits it
      event =
          AttemptEvent{attempt_id, spec::EventReason::kImagePulled,
                       (cached->pulled ? "pulled and unpacked " : "found in the cache ") + pinned +
                           " (" + std::to_string(cached->bytes / slurm::kMiB) + " MiB)",
                       ""};
    }
  }
  cv_.notify_all();
  if (event && on_event) on_event(*event);
}

void SlurmBackend::Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) {
  (void)grace_ms;  // scancel sends SIGTERM, SIGKILL after Slurm's own KillWait
  int64_t job_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(attempt_id);
    if (it == attempts_.end()) return;
    Attempt* a = it->second.get();
    a->stop_requested = true;
    a->stop_for_timeout = a->stop_for_timeout || timed_out;
    if (a->job_id == 0 && !a->submitting && !a->immediate_exit) {
      // Never reached Slurm: it ends here (the monitor reports it).
      a->awaiting_submit = false;
      a->awaiting_image = false;  // its pull goes on and fills the cache
      AttemptExit e;
      e.attempt_id = attempt_id;
      e.kind = timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled;
      e.message = "stopped before Slurm had the job";
      a->immediate_exit = e;
    } else if (a->job_id > 0 && !a->cancel_sent && unreachable_since_ms_ == 0) {
      a->cancel_sent = true;
      a->cancel_sent_ms = env_->MonotonicMs();
      job_id = a->job_id;
    }
  }
  // While Slurm does not answer the monitor sends the scancel once it does: Stop runs on
  // the engine's loop and must not wait for a dead slurmctld.
  if (job_id > 0) {
    auto out = runner_->Run({"scancel", std::to_string(job_id)});
    if (!out.ok() || out->exit_code != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = attempts_.find(attempt_id);
      if (it != attempts_.end()) {
        it->second->cancel_sent = false;  // the monitor tries again
        it->second->cancel_sent_ms = 0;
      }
    }
  }
  cv_.notify_all();
}

// The stored LaunchSpec has "***" for secret values; the attempt's environment file (0600,
// RSL's own, removed when the attempt ends) still has them while the job lives.
static std::vector<std::string> SecretsFromEnvFile(const LaunchSpec& spec,
                                                   const std::string& path) {
  std::vector<std::string> out;
  auto text = ReadFile(path);
  if (!text.ok()) return out;
  for (const auto& kv : Split(*text, '\0')) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    auto it = spec.env.find(kv.substr(0, eq));
    if (it != spec.env.end() && it->second == "***" && eq + 1 < kv.size()) {
      out.push_back(kv.substr(eq + 1));
    }
  }
  return out;
}

void SlurmBackend::Adopt(const LaunchSpec& adopted) {
  auto a = std::make_unique<Attempt>();
  LaunchSpec spec = adopted;
  a->files = slurm::AttemptPaths(files_dir_, spec.attempt_id);
  if (spec.secret_values.empty()) spec.secret_values = SecretsFromEnvFile(spec, a->files.env);
  a->spec = spec;
  auto text = ReadFile(a->files.job_id);
  int64_t id = 0;
  if (text.ok()) id = std::atoll(std::string(Trim(*text)).c_str());
  if (id > 0) {
    a->job_id = id;
  } else {
    a->immediate_exit = FromSacctOrExitFile(a.get());
  }
  if (!spec.secret_values.empty() && !spec.log_path.empty()) {
    // Copy the raw log again from its start: exact, whatever the earlier process managed.
    a->masker = std::make_unique<slurm::LogMasker>(spec.secret_values);
    (void)slurm::WritePrivateFile(spec.log_path, "", 0644);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[spec.attempt_id] = std::move(a);
  }
  cv_.notify_all();
}

int64_t SlurmBackend::JobIdOf(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(attempt_id);
  return it == attempts_.end() ? 0 : it->second->job_id;
}

Result<std::unique_ptr<Backend>> NewSlurmBackend(const BackendOptions& options) {
  std::map<std::string, std::string> env;
  if (!options.slurm_conf.empty()) {
    if (!PathExists(options.slurm_conf)) {
      return Error(codes::kInvalidArgument, "Slurm configuration not found")
          .Value(options.slurm_conf)
          .Hint("pass the slurm.conf of the cluster (or leave it empty to use SLURM_CONF)");
    }
    env["SLURM_CONF"] = options.slurm_conf;
  }
  SlurmBackendOptions o;
  o.backend = options;
  // rsl-cinit beside the program running the backend (rsl-controller, seedctl).
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string self_dir = n > 0 ? ParentDir(std::string(self, size_t(n))) : ".";
  auto isolation = ParseIsolation(options.isolation);
  if (!isolation.ok()) return isolation.error();
  if (isolation->mode == IsolationMode::kNamespace) {
    return Error(codes::kInvalidArgument,
                 "step isolation 'namespace' is not available on the Slurm backend")
        .Value(options.isolation)
        .Hint(
            "run the controller as root (steps then run as one user per namespace: "
            "--step-isolation users), or accept no isolation with --step-isolation none");
  }
  if (!options.runs_dir.empty()) {
    RSL_RETURN_IF_ERROR(CheckRunsDirReachable(options.runs_dir, *isolation));
  }
  o.isolation = *isolation;
  if (!options.slurm_patience.empty()) {
    auto ms = spec::ParseDurationMs(options.slurm_patience);
    if (!ms.ok() || *ms <= 0) {
      return Error(codes::kInvalidArgument, "bad Slurm patience " + Quote(options.slurm_patience))
          .Value(options.slurm_patience)
          .Hint("a duration such as 90s or 5m (--slurm-patience)");
    }
    o.patience_ms = *ms;
  }
  RSL_RETURN_IF_ERROR(CheckSlurmClients());
  auto runner = NewProcessRunner(env, kCommandTimeoutMs);
  // Fail early and clearly when there is no Slurm to talk to, or not the partition asked for.
  RSL_RETURN_IF_ERROR(CheckSlurmAnswers(runner.get(), options.slurm_partition));
  auto backend = std::make_unique<SlurmBackend>(std::move(o), std::move(runner));
  ContainerRuntime runtime = FindContainerRuntime(self_dir);
  if (!runtime.runc.empty()) backend->SetContainerRuntime(runtime);
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace rsl::backend
