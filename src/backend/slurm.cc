#include "backend/slurm.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include "backend/slurm_backend.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

// A hung slurmctld must not hang the engine: every client command is killed after this.
constexpr int64_t kCommandTimeoutMs = 30000;
// Launch checks feasibility against a node list at most this old (sinfo is cheap, but a
// 20-step DAG should not run it 20 times in a row).
constexpr int64_t kNodeCacheMs = 2000;
constexpr int64_t kMiB = 1024 * 1024;

// Writes a file only its owner can read (the environment may hold secret values).
Status WritePrivateFile(const std::string& path, const std::string& contents, mode_t mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return OsError(codes::kIoError, "cannot create", tmp, errno);
  ::fchmod(fd, mode);
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return OsError(codes::kIoError, "cannot write", tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return OsError(codes::kIoError, "cannot rename onto", path, errno);
  }
  return Status::Ok();
}

std::string Mi(int64_t bytes) { return std::to_string((bytes + kMiB - 1) / kMiB) + "Mi"; }

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
}

Result<std::vector<sched::Node>> SlurmBackend::QueryNodes(std::vector<slurm::NodeState>* states) {
  auto out = runner_->Run({"sinfo", "--json"});
  if (!out.ok()) return out.error();
  if (out->exit_code != 0) {
    return Error(codes::kInternal, "sinfo failed: " + std::string(Trim(out->err)))
        .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  }
  auto nodes = slurm::ParseSinfoJson(out->out, options_.backend.slurm_partition, states);
  if (nodes.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    node_cache_ = *nodes;
    node_cache_ms_ = env_->MonotonicMs();
  }
  return nodes;
}

Result<std::vector<sched::Node>> SlurmBackend::ListNodes() { return QueryNodes(nullptr); }

Status SlurmBackend::CheckFeasible(const LaunchSpec& spec) {
  std::vector<sched::Node> nodes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (env_->MonotonicMs() - node_cache_ms_ <= kNodeCacheMs) nodes = node_cache_;
  }
  if (nodes.empty()) {
    auto fresh = QueryNodes(nullptr);
    if (!fresh.ok()) return Status::Ok();  // let sbatch decide; it reports its own error
    nodes = *fresh;
  }
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
                                       const std::optional<StepIdentity>& who) {
  // The same attempt id launched again (rescheduled after node loss) reuses the directory:
  // every file is replaced by rename, so an orphan's bash keeps reading its own old script.
  RSL_RETURN_IF_ERROR(MakeDirs(files.dir));
  ::chmod(files.dir.c_str(), 0700);
  RSL_RETURN_IF_ERROR(WritePrivateFile(files.env, slurm::EnvFileContents(spec), 0600));
  RSL_RETURN_IF_ERROR(WritePrivateFile(files.script, slurm::BatchScript(spec, files, who), 0700));
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
  RSL_RETURN_IF_ERROR(WriteAttemptFiles(spec, files, *who));
  bool mask = !spec.secret_values.empty() && !spec.log_path.empty();
  std::string output = mask ? files.raw_log : (spec.log_path.empty() ? "/dev/null" : spec.log_path);
  auto args = slurm::SbatchArgs(spec, options_.backend.slurm_partition, output);
  args.push_back(files.script);
  auto out = runner_->Run(args);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    std::string err(Trim(out->err));
    if (IsUnsatisfiable(err)) {
      return Error(codes::kInsufficientResources,
                   "step '" + spec.step + "': Slurm refused it: " + err)
          .Value(Join(std::vector<std::string>(args.begin() + 1, args.end() - 1), " "))
          .Hint("no node of the Slurm cluster matches; see seedctl node list");
    }
    return Error(codes::kInternal, "sbatch failed for step '" + spec.step + "': " + err)
        .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  }
  auto id = slurm::ParseSbatchOutput(out->out);
  if (!id.ok()) return id.status();
  // The job id file tells the batch script it is still the live job (see BatchScript) and
  // lets Adopt find the job after a controller restart.
  RSL_RETURN_IF_ERROR(WritePrivateFile(files.job_id, std::to_string(*id) + "\n", 0600));
  auto a = std::make_unique<Attempt>();
  a->spec = spec;
  a->files = files;
  a->job_id = *id;
  if (mask) a->masker = std::make_unique<slurm::LogMasker>(spec.secret_values);
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[spec.attempt_id] = std::move(a);
  }
  cv_.notify_all();
  if (on_event) {
    on_event({spec.attempt_id, spec::EventReason::kSubmitted,
              "Slurm job " + std::to_string(*id) + " (" + slurm::JobName(spec) + ") submitted",
              ""});
  }
  return Status::Ok();
}

void SlurmBackend::Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) {
  int64_t job_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(attempt_id);
    if (it == attempts_.end()) return;
    it->second->stop_requested = true;
    it->second->stop_for_timeout = it->second->stop_for_timeout || timed_out;
    job_id = it->second->job_id;
  }
  // scancel sends SIGTERM to every process of the job and SIGKILL after Slurm's KillWait
  // (the cluster's grace period; grace_ms cannot be set per job).
  if (job_id > 0) (void)runner_->Run({"scancel", std::to_string(job_id)});
  cv_.notify_all();
}

void SlurmBackend::Adopt(const LaunchSpec& spec) {
  auto a = std::make_unique<Attempt>();
  a->spec = spec;
  a->files = slurm::AttemptPaths(files_dir_, spec.attempt_id);
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
    (void)WritePrivateFile(spec.log_path, "", 0644);
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

// Reads the exit record the batch script wrote; nullopt if there is none.
static std::optional<AttemptExit> ReadExitRecord(const LaunchSpec& spec) {
  if (spec.exit_file.empty()) return std::nullopt;
  auto text = ReadFile(spec.exit_file);
  if (!text.ok()) return std::nullopt;
  // key=value lines, as the local backend's rsl-shim writes them.
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(*text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (!kv.count("exit_code")) return std::nullopt;
  AttemptExit e;
  e.attempt_id = spec.attempt_id;
  e.exit_code = std::atoi(kv["exit_code"].c_str());
  e.signal = std::atoi(kv["signal"].c_str());
  e.usage.wall_ms = std::atoll(kv["wall_ms"].c_str());
  e.kind = (e.exit_code == 0 && e.signal == 0) ? ExitKind::kSucceeded : ExitKind::kFailed;
  e.message = "from the exit record " + spec.exit_file;
  return e;
}

std::optional<AttemptExit> SlurmBackend::FromSacctOrExitFile(Attempt* a) {
  if (a->job_id > 0) {
    auto out = runner_->Run({"sacct", "-c", "-P", "-n", "-j", std::to_string(a->job_id), "-o",
                             "JobID,JobName,State,ExitCode,NodeList,Start,End"});
    if (out.ok() && out->exit_code == 0) {
      auto jobs = slurm::ParseSacct(out->out);
      if (jobs.ok()) {
        for (const auto& job : *jobs) {
          if (job.job_id != a->job_id) continue;
          auto o = slurm::Classify(job, a->stop_requested, a->stop_for_timeout);
          if (o.phase != slurm::Phase::kFinished) continue;
          AttemptExit e;
          e.attempt_id = a->spec.attempt_id;
          e.kind = o.kind;
          e.exit_code = job.exit_code;
          e.signal = job.signal;
          e.node = job.nodes;
          e.message = o.message;
          if (job.end_time > job.start_time && job.start_time > 0) {
            e.usage.wall_ms = (job.end_time - job.start_time) * 1000;
          }
          return e;
        }
      }
    }
  }
  if (auto e = ReadExitRecord(a->spec)) return e;
  AttemptExit lost;
  lost.attempt_id = a->spec.attempt_id;
  lost.kind = ExitKind::kNodeLost;
  lost.node = a->node;
  lost.message = a->job_id > 0 ? "Slurm no longer knows job " + std::to_string(a->job_id) +
                                     " and it left no exit record"
                               : "no Slurm job was recorded for this attempt";
  return lost;
}

std::optional<AttemptExit> SlurmBackend::Decide(
    Attempt* a, const slurm::Job* job, const std::map<std::string, slurm::NodeState>& nodes,
    std::vector<AttemptEvent>* events, int64_t now_ms) {
  if (a->immediate_exit) return a->immediate_exit;
  if (job == nullptr) {
    if (a->missing_since_ms == 0) a->missing_since_ms = now_ms;
    if (now_ms - a->missing_since_ms < options_.vanished_grace_ms) return std::nullopt;
    return FromSacctOrExitFile(a);
  }
  a->missing_since_ms = 0;
  auto o = slurm::Classify(*job, a->stop_requested, a->stop_for_timeout);
  std::string id = "Slurm job " + std::to_string(job->job_id);
  if (o.phase == slurm::Phase::kPending) {
    if (job->reason != a->pending_reason) {
      a->pending_reason = job->reason;
      if (!job->reason.empty() && job->reason != "None") {
        events->push_back({a->spec.attempt_id,
                           job->reason == "Resources" ? spec::EventReason::kInsufficientResources
                                                      : spec::EventReason::kPending,
                           id + " pending: " + job->reason, ""});
      }
    }
    return std::nullopt;
  }
  if (o.phase == slurm::Phase::kRunning) {
    if (!a->running_reported) {
      a->running_reported = true;
      a->node = job->nodes;
      events->push_back({a->spec.attempt_id, spec::EventReason::kRunning,
                         id + " running on " + job->nodes, job->nodes});
    }
    // The batch script writes the exit record as soon as the step ends; Slurm shows the job
    // RUNNING/COMPLETING for another second or two. A clean exit is final, so report it now
    // (failures wait for Slurm's verdict: it may be OUT_OF_MEMORY or TIMEOUT).
    if (auto rec = ReadExitRecord(a->spec); rec && rec->kind == ExitKind::kSucceeded) {
      rec->node = job->nodes;
      rec->message.clear();
      return rec;
    }
    // Do not wait for Slurm's requeue (we submit with --no-requeue anyway): once Slurm
    // declares the node down, the attempt is lost and the engine may reschedule it.
    auto it = nodes.find(job->nodes);
    if (it != nodes.end() && it->second.down() && !a->stop_requested) {
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      e.kind = ExitKind::kNodeLost;
      e.node = job->nodes;
      e.message = "node " + job->nodes + " is down" +
                  (it->second.reason.empty() ? "" : " (" + it->second.reason + ")") + "; " + id +
                  " given up (its processes may live on there as orphans)";
      return e;
    }
    return std::nullopt;
  }
  if (!a->running_reported && !job->nodes.empty() && job->start_time > 0) {
    // It ran and ended between two polls: say so, so every attempt has its Running event.
    a->running_reported = true;
    events->push_back({a->spec.attempt_id, spec::EventReason::kRunning,
                       id + " ran on " + job->nodes, job->nodes});
  }
  AttemptExit e;
  e.attempt_id = a->spec.attempt_id;
  e.kind = o.kind;
  e.exit_code = job->exit_code;
  e.signal = job->signal;
  e.node = job->nodes.empty() ? a->node : job->nodes;
  e.message = o.message;
  if (job->end_time > job->start_time && job->start_time > 0) {
    e.usage.wall_ms = (job->end_time - job->start_time) * 1000;
  }
  if (o.kind == ExitKind::kSucceeded || o.kind == ExitKind::kFailed) {
    // The batch script measured the step itself, in milliseconds.
    if (auto rec = ReadExitRecord(a->spec); rec && rec->usage.wall_ms > 0) {
      e.usage.wall_ms = rec->usage.wall_ms;
    }
  }
  return e;
}

void SlurmBackend::CopyMaskedLog(Attempt* a, bool final) {
  if (!a->masker) return;
  int fd = ::open(a->files.raw_log.c_str(), O_RDONLY | O_CLOEXEC);
  std::string chunk;
  if (fd >= 0) {
    char buf[1 << 16];
    while (true) {
      ssize_t n = ::pread(fd, buf, sizeof buf, a->raw_log_offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      chunk.append(buf, static_cast<size_t>(n));
      a->raw_log_offset += n;
    }
    ::close(fd);
  }
  std::string masked = a->masker->Feed(chunk);
  if (final) masked += a->masker->Finish();
  if (masked.empty()) return;
  int out = ::open(a->spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return;
  size_t off = 0;
  while (off < masked.size()) {
    ssize_t n = ::write(out, masked.data() + off, masked.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(out);
}

void SlurmBackend::PollOnce() {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempts_.empty()) return;
  }
  auto q = runner_->Run({"squeue", "--json"});
  if (!q.ok() || q->exit_code != 0) return;  // slurmctld unreachable: decide nothing this round
  auto jobs = slurm::ParseSqueueJson(q->out);
  if (!jobs.ok()) return;
  std::map<int64_t, slurm::Job> by_id;
  for (auto& j : *jobs) by_id[j.job_id] = std::move(j);
  std::vector<slurm::NodeState> states;
  std::map<std::string, slurm::NodeState> node_states;
  if (QueryNodes(&states).ok()) {
    for (auto& s : states) node_states[s.name] = std::move(s);
  }

  std::vector<AttemptEvent> events;
  std::vector<AttemptExit> exits;
  std::vector<int64_t> to_cancel;
  int64_t now = env_->MonotonicMs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = attempts_.begin(); it != attempts_.end();) {
      Attempt* a = it->second.get();
      auto job = by_id.find(a->job_id);
      auto exit = Decide(a, job == by_id.end() ? nullptr : &job->second, node_states, &events, now);
      CopyMaskedLog(a, exit.has_value());
      if (!exit) {
        ++it;
        continue;
      }
      if (exit->kind == ExitKind::kNodeLost && a->job_id > 0) {
        to_cancel.push_back(a->job_id);
        // The orphan's batch script checks this file before writing the exit record.
        (void)WritePrivateFile(a->files.job_id, "lost\n", 0600);
      }
      exits.push_back(std::move(*exit));
      it = attempts_.erase(it);
    }
  }
  for (int64_t id : to_cancel) (void)runner_->Run({"scancel", std::to_string(id)});
  for (const auto& e : events) {
    if (on_event) on_event(e);
  }
  for (const auto& e : exits) {
    if (on_exit) on_exit(e);
  }
}

void SlurmBackend::MonitorLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_interval_ms),
                   [this] { return stopping_; });
      if (stopping_) return;
      if (attempts_.empty()) {
        cv_.wait(lock, [this] { return stopping_ || !attempts_.empty(); });
        if (stopping_) return;
      }
    }
    PollOnce();
  }
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
  auto runner = NewProcessRunner(env, kCommandTimeoutMs);
  // Fail early and clearly when there is no Slurm to talk to.
  auto ping = runner->Run({"sinfo", "--json"});
  if (!ping.ok()) return ping.error();
  if (ping->exit_code != 0) {
    return Error(codes::kInternal, "cannot reach Slurm: " + std::string(Trim(ping->err)))
        .Hint("is slurmctld running and SLURM_CONF right? (scontrol ping)");
  }
  return std::unique_ptr<Backend>(std::make_unique<SlurmBackend>(std::move(o), std::move(runner)));
}

}  // namespace rsl::backend
