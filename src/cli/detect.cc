#include "cli/detect.h"

#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/codes.h"
#include "base/strings.h"
#include "cli/detect_files.h"
#include "k8s/kubeconfig.h"

extern char** environ;

namespace rsl::cli {

namespace {

std::string Var(const DetectInput& in, const std::string& name) {
  auto it = in.vars.find(name);
  return it == in.vars.end() ? "" : it->second;
}

// `path` with $HOME written as ~, as users see it in their own messages.
std::string Tilde(const DetectInput& in, const std::string& path) {
  std::string home = Var(in, "HOME");
  if (!home.empty() && home != "/" && StartsWith(path, home + "/")) {
    return "~" + path.substr(home.size());
  }
  return path;
}

// `path` from the directory detect runs in, when it is relative.
std::string AbsoluteIn(const DetectInput& in, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (in.cwd == "/" ? "" : in.cwd) + "/" + path;
}

bool IsFile(Env* env, const std::string& path) {
  auto st = env->Stat(path);
  return st.ok() && st->type != FileInfo::Type::kDirectory;
}

// The executable `name` on the PATH of `in` (not of this process: a test hands in its own).
std::string FindOnPath(const DetectInput& in, const std::string& name) {
  for (const auto& dir : Split(Var(in, "PATH"), ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    // access(2) follows a link (/usr/bin/sinfo -> ...) as exec does; Env has no such call.
    if (!in.env->IsDirectory(candidate) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

// The last line of a command's complaint, or what happened to it.
std::string Complaint(const Result<ProcessResult>& r, const std::string& what, int64_t timeout_ms) {
  if (!r.ok()) return r.error().message;
  if (r->timed_out) {
    return what + " did not answer within " +
           (timeout_ms % 1000 == 0 ? std::to_string(timeout_ms / 1000) + " s"
                                   : std::to_string(timeout_ms) + " ms");
  }
  // The last line: the clients log their retries first and say what gave up at the end
  // ("scontrol: fatal: Could not establish a configuration source").
  std::string text(Trim(r->err.empty() ? r->out : r->err));
  text = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  if (text.empty()) text = what + " exited with status " + std::to_string(r->exit_code);
  return text;
}

Result<ProcessResult> Run(const DetectInput& in, std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = in.vars;  // SLURM_CONF and PATH as detect was given them
  spec.timeout_ms = in.command_timeout_ms;
  spec.max_output = 64 << 20;  // sinfo of a large cluster: a few MB
  return in.env->RunProcess(spec);
}

// --- Slurm ----------------------------------------------------------------------------------

void DetectSlurm(const DetectInput& in, Detection* d) {
  SlurmFound& s = d->slurm;
  s.sinfo = FindOnPath(in, "sinfo");
  s.scontrol = FindOnPath(in, "scontrol");
  s.slurm_conf = AbsoluteIn(in, Var(in, "SLURM_CONF"));
  if (s.scontrol.empty() || s.sinfo.empty()) {
    s.error = std::string(s.scontrol.empty() ? "scontrol" : "sinfo") + " not found on PATH";
    return;
  }
  auto ping = Run(in, {s.scontrol, "ping"});
  if (!ping.ok() || ping->exit_code != 0 || ping->out.find("is UP") == std::string::npos) {
    s.error = "scontrol ping: " + Complaint(ping, "scontrol ping", in.command_timeout_ms);
    // A controller that is down: "Slurmctld(primary) at head is DOWN", then a banner.
    for (const auto& line : Split(ping.ok() ? ping->out : "", '\n')) {
      if (StartsWith(line, "Slurmctld(")) s.error = "scontrol ping: " + line;
    }
    return;
  }
  s.answering = true;
  auto config = Run(in, {s.scontrol, "show", "config"});
  if (config.ok() && config->exit_code == 0) {
    for (const auto& line : Split(config->out, '\n')) {
      size_t eq = line.find('=');
      if (eq != std::string::npos && Trim(line.substr(0, eq)) == "ClusterName") {
        s.cluster = std::string(Trim(line.substr(eq + 1)));
      }
    }
  }
  // One line per node and partition: NODE|PARTITION(* = the default)|FEATURES|GRES.
  auto nodes = Run(in, {s.sinfo, "-h", "-N", "-o", "%N|%P|%f|%G"});
  if (!nodes.ok() || nodes->exit_code != 0) {
    d->warnings.push_back(
        Error(codes::kInternal, "sinfo: " + Complaint(nodes, "sinfo", in.command_timeout_ms))
            .Hint("partitions and nodes are not known; check `sinfo -N`"));
    return;
  }
  std::set<std::string> names, partitions, features;
  std::map<std::string, std::set<std::string>> gres_nodes;  // GRES -> the nodes that have it
  for (const auto& line : Split(nodes->out, '\n')) {
    std::vector<std::string> f = Split(line, '|');
    if (f.size() != 4) continue;
    names.insert(f[0]);
    std::string part = f[1];
    if (EndsWith(part, "*")) {
      part.pop_back();
      s.default_partition = part;
    }
    if (!part.empty()) partitions.insert(part);
    for (const auto& x : Split(f[2], ',')) {
      if (!x.empty() && x != "(null)") features.insert(x);
    }
    for (const auto& x : Split(f[3], ',')) {
      if (!x.empty() && x != "(null)") gres_nodes[x].insert(f[0]);
    }
  }
  s.nodes = static_cast<int>(names.size());
  s.partitions.assign(partitions.begin(), partitions.end());
  s.features.assign(features.begin(), features.end());
  for (const auto& [g, on] : gres_nodes) {
    s.gres.push_back(g + " (" + std::to_string(on.size()) +
                     (on.size() == 1 ? " node)" : " nodes)"));
  }
}

// --- Kubernetes -----------------------------------------------------------------------------

void DetectKube(const DetectInput& in, Detection* d) {
  KubeFound& k = d->kube;
  std::string path;
  bool several = false;  // KUBECONFIG lists several files that exist: merged
  std::string kubeconfig = Var(in, "KUBECONFIG");
  if (!kubeconfig.empty()) {
    // Every file of the list, merged as kubectl merges them (k8s::LoadKubeconfigList); the
    // config file gets the list of those that exist.
    std::vector<std::string> listed, present;
    for (const auto& p : Split(kubeconfig, ':')) {
      if (p.empty()) continue;
      std::string abs = AbsoluteIn(in, p);
      if (std::find(listed.begin(), listed.end(), abs) != listed.end()) continue;
      listed.push_back(abs);
      if (in.env->PathExists(abs)) present.push_back(abs);
    }
    k.tried.push_back("$KUBECONFIG (" + Join(listed, ":") + ")");
    if (present.empty()) {
      k.error = listed.size() == 1
                    ? "KUBECONFIG names " + listed[0] + ", which does not exist"
                    : "KUBECONFIG names " + Join(listed, ", ") + ", none of which exists";
      return;
    }
    path = Join(present, ":");
    several = present.size() > 1;
  } else if (!Var(in, "HOME").empty()) {
    std::string home_config = Var(in, "HOME") + "/.kube/config";
    k.tried.push_back(Tilde(in, home_config));
    if (IsFile(in.env, home_config)) path = home_config;
  }
  if (!path.empty()) {
    auto conn = [&]() -> Result<k8s::Connection> {
      if (several) {
        k.source = path;
        return k8s::LoadKubeconfigList(path);
      }
      auto text = in.env->ReadFile(path);
      if (!text.ok()) return text.error();
      k.source = path;
      return k8s::ParseKubeconfig(*text, path);
    }();
    if (!conn.ok()) {
      k.error = conn.error().ToString();
      d->warnings.push_back(conn.error());
      return;
    }
    k.context = conn->context;
    k.server = conn->server;
    k.namespace_ = conn->namespace_;
    k.auth = conn->Describe();
    return;
  }
  k.tried.push_back(in.service_account_dir);
  if (!in.env->PathExists(in.service_account_dir + "/token")) {
    k.error = "no kubeconfig and no in-cluster service account";
    return;
  }
  k.source = in.service_account_dir;
  auto conn = k8s::InClusterConnection(in.vars, in.service_account_dir);
  if (!conn.ok()) {
    k.error = conn.error().ToString();
    return;
  }
  k.in_cluster = true;
  k.context = conn->context;
  k.server = conn->server;
  k.namespace_ = conn->namespace_;
  k.auth = conn->Describe();
}

// --- S3 -------------------------------------------------------------------------------------

using Ini = std::map<std::string, std::map<std::string, std::string>>;

// The INI file at `path`, if there is one; a broken one is a warning.
std::optional<Ini> ReadIni(const DetectInput& in, const std::string& path, Detection* d) {
  if (path.empty() || !IsFile(in.env, path)) return std::nullopt;
  auto text = in.env->ReadFile(path);
  if (!text.ok()) {
    d->warnings.push_back(text.error());
    return std::nullopt;
  }
  d->s3.files.push_back(Tilde(in, path));
  auto ini = ParseAwsIni(*text, path);
  if (!ini.ok()) {
    d->warnings.push_back(ini.error());
    return std::nullopt;
  }
  return *ini;
}

S3Profile& ProfileNamed(S3Found* s3, const std::string& name) {
  for (auto& p : s3->profiles) {
    if (p.name == name) return p;
  }
  s3->profiles.push_back(S3Profile{name, "", "", ""});
  return s3->profiles.back();
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

void DetectS3(const DetectInput& in, Detection* d) {
  S3Found& s3 = d->s3;
  for (const char* var : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (!Var(in, var).empty()) {
      s3.env_endpoint = Var(in, var);
      s3.env_endpoint_var = var;
      break;
    }
  }
  s3.env_region =
      Var(in, "AWS_REGION").empty() ? Var(in, "AWS_DEFAULT_REGION") : Var(in, "AWS_REGION");
  s3.env_keys = !Var(in, "AWS_ACCESS_KEY_ID").empty() && !Var(in, "AWS_SECRET_ACCESS_KEY").empty();
  const std::string home = Var(in, "HOME");
  std::string config_path = Var(in, "AWS_CONFIG_FILE");
  if (config_path.empty() && !home.empty()) config_path = home + "/.aws/config";
  std::string creds_path = Var(in, "AWS_SHARED_CREDENTIALS_FILE");
  if (creds_path.empty() && !home.empty()) creds_path = home + "/.aws/credentials";

  if (auto config = ReadIni(in, config_path, d)) {
    for (const auto& [section, keys] : *config) {
      std::string name = section;
      if (StartsWith(name, "profile ")) name = std::string(Trim(name.substr(8)));
      // [sso-session X] and [services X] are not profiles.
      if (section != "default" && !StartsWith(section, "profile ")) continue;
      S3Profile& p = ProfileNamed(&s3, name);
      p.endpoint = Get(keys, "s3.endpoint_url");
      if (p.endpoint.empty()) p.endpoint = Get(keys, "endpoint_url");
      p.region = Get(keys, "region");
      if (!Get(keys, "aws_access_key_id").empty()) {
        p.credentials = Tilde(in, config_path) + " [" + section + "]";
      }
    }
  }
  if (auto creds = ReadIni(in, creds_path, d)) {
    for (const auto& [section, keys] : *creds) {
      if (Get(keys, "aws_access_key_id").empty()) continue;
      S3Profile& p = ProfileNamed(&s3, section);
      p.credentials = Tilde(in, creds_path) + " [" + section + "]";
    }
  }
}

// --- HDFS and YARN --------------------------------------------------------------------------

using Props = std::map<std::string, std::string>;

Props ReadSite(const DetectInput& in, const std::string& dir, const char* name, Detection* d) {
  std::string path = dir + "/" + name;
  if (!IsFile(in.env, path)) return {};
  auto text = in.env->ReadFile(path);
  if (!text.ok()) {
    d->warnings.push_back(text.error());
    return {};
  }
  auto props = ParseHadoopSite(*text, path);
  if (!props.ok()) {
    d->warnings.push_back(props.error());
    return {};
  }
  d->hadoop.files.push_back(path);
  return *props;
}

// "hdfs://host:port/..." -> "host:port" ("" for another scheme).
std::string Authority(const std::string& uri) {
  if (!StartsWith(uri, "hdfs://")) return "";
  std::string rest = uri.substr(7);
  return rest.substr(0, rest.find('/'));
}

std::string HostOf(const std::string& host_port) {
  return host_port.substr(0, host_port.rfind(':'));
}

// A listen address (0.0.0.0:9870) made an address to reach: the namenode's RPC host.
std::string Reachable(const std::string& address, const std::string& rpc) {
  if (StartsWith(address, "0.0.0.0:") && !rpc.empty()) {
    return HostOf(rpc) + address.substr(7);
  }
  return address;
}

void DetectHadoop(const DetectInput& in, Detection* d) {
  HadoopFound& h = d->hadoop;
  std::string dir = AbsoluteIn(in, Var(in, "HADOOP_CONF_DIR"));
  h.conf_dir_from = "HADOOP_CONF_DIR";
  if (dir.empty()) {
    dir = in.hadoop_default_dir;
    h.conf_dir_from = "default";
  }
  if (!in.env->IsDirectory(dir)) {
    if (h.conf_dir_from == "HADOOP_CONF_DIR") {
      d->warnings.push_back(Error(codes::kNotFound, "HADOOP_CONF_DIR is not a directory")
                                .Value(dir)
                                .Hint("point it at the directory of core-site.xml"));
    }
    return;
  }
  h.conf_dir = dir;
  Props core = ReadSite(in, dir, "core-site.xml", d);
  Props hdfs = ReadSite(in, dir, "hdfs-site.xml", d);
  Props yarn = ReadSite(in, dir, "yarn-site.xml", d);
  h.default_fs = Get(core, "fs.defaultFS");
  if (h.default_fs.empty()) h.default_fs = Get(core, "fs.default.name");  // Hadoop 1's name
  h.kerberos = ToLower(Get(core, "hadoop.security.authentication")) == "kerberos";
  const bool https = Get(hdfs, "dfs.http.policy") == "HTTPS_ONLY";
  const std::string web_key = https ? "dfs.namenode.https-address" : "dfs.namenode.http-address";
  const std::string web_port = https ? ":9871" : ":9870";  // Hadoop 3's defaults
  const std::string scheme = https ? "https://" : "http://";

  std::string nameservices = Get(hdfs, "dfs.nameservices");
  std::string ns = nameservices.empty() ? "" : Split(nameservices, ',')[0];
  ns = std::string(Trim(ns));
  if (!ns.empty()) {
    h.nameservice = ns;
    for (const auto& raw : Split(Get(hdfs, "dfs.ha.namenodes." + ns), ',')) {
      std::string nn(Trim(raw));
      if (nn.empty()) continue;
      std::string rpc = Get(hdfs, "dfs.namenode.rpc-address." + ns + "." + nn);
      std::string web = Get(hdfs, web_key + "." + ns + "." + nn);
      if (rpc.empty()) continue;
      h.namenodes.push_back(rpc);
      h.webhdfs.push_back(scheme + Reachable(web.empty() ? HostOf(rpc) + web_port : web, rpc));
    }
  }
  if (h.namenodes.empty()) {
    std::string rpc = Get(hdfs, "dfs.namenode.rpc-address");
    if (rpc.empty()) rpc = Authority(h.default_fs);
    if (!rpc.empty() && rpc.find(':') == std::string::npos) rpc += ":8020";
    if (!rpc.empty()) {
      if (h.nameservice.empty()) h.nameservice = HostOf(rpc);
      std::string web = Get(hdfs, web_key);
      h.namenodes.push_back(rpc);
      h.webhdfs.push_back(scheme + Reachable(web.empty() ? HostOf(rpc) + web_port : web, rpc));
    }
  }

  std::vector<std::string> rms;
  for (const auto& raw : Split(Get(yarn, "yarn.resourcemanager.ha.rm-ids"), ',')) {
    std::string id(Trim(raw));
    if (id.empty()) continue;
    std::string a = Get(yarn, "yarn.resourcemanager.address." + id);
    if (a.empty() && !Get(yarn, "yarn.resourcemanager.hostname." + id).empty()) {
      a = Get(yarn, "yarn.resourcemanager.hostname." + id) + ":8032";
    }
    if (!a.empty()) rms.push_back(a);
  }
  if (rms.empty()) {
    std::string a = Get(yarn, "yarn.resourcemanager.address");
    if (a.empty() && !Get(yarn, "yarn.resourcemanager.hostname").empty()) {
      a = Get(yarn, "yarn.resourcemanager.hostname") + ":8032";
    }
    if (!a.empty()) rms.push_back(a);
  }
  h.resource_manager = Join(rms, ",");
}

// --- Output ---------------------------------------------------------------------------------

// A value inside a YAML comment: one line, whatever the file it came from held.
std::string CommentSafe(const std::string& s) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return out;
}

// A YAML scalar that reads back as exactly `s` (JSON's string syntax is YAML's double-quoted).
std::string Scalar(const std::string& s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// A word of a shell command line, quoted when it needs to be.
std::string ShellWord(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string("-_./:,=@").find(c) == std::string::npos) {
      plain = false;
    }
  }
  return plain ? s : ShellQuote(s);
}

// The config's keys and values, in the order they are written.
std::vector<std::pair<std::string, std::string>> ConfigKeys(const Detection& d,
                                                            const DetectInput& in) {
  std::vector<std::pair<std::string, std::string>> kv = {
      {"listen", in.listen}, {"stateDir", in.state_dir}, {"backend", d.backend}};
  if (d.backend == "slurm") {
    if (!d.slurm.slurm_conf.empty()) kv.emplace_back("slurmConf", d.slurm.slurm_conf);
    if (!d.slurm.default_partition.empty()) {
      kv.emplace_back("slurmPartition", d.slurm.default_partition);
    }
  }
  if (d.backend == "k8s" && !d.kube.in_cluster) {
    kv.emplace_back("kubeconfig", d.kube.source);
    kv.emplace_back("context", d.kube.context);
  }
  return kv;
}

// The `seedctl datasource register` commands for the data systems found.
std::vector<std::string> DatasourceCommands(const Detection& d) {
  std::vector<std::string> cmds;
  const HadoopFound& h = d.hadoop;
  if (!h.namenodes.empty()) {
    std::string c = "seedctl datasource register hdfs --name " + ShellWord(h.nameservice) +
                    " --namenodes " + ShellWord(Join(h.namenodes, ",")) + " --webhdfs-url " +
                    ShellWord(Join(h.webhdfs, ","));
    if (h.kerberos) c += " --kerberos";
    cmds.push_back(c);
  }
  for (const auto& p : d.s3.profiles) {
    std::string endpoint = p.endpoint.empty() ? d.s3.env_endpoint : p.endpoint;
    std::string c = "seedctl datasource register s3 --name " + ShellWord(p.name);
    if (!endpoint.empty()) c += " --endpoint " + ShellWord(endpoint);
    if (!p.region.empty()) c += " --region " + ShellWord(p.region);
    c += " --access-key KEY --secret-key SECRET";
    c +=
        p.credentials.empty() ? "  # no keys found for this profile" : "  # keys: " + p.credentials;
    cmds.push_back(c);
  }
  if (d.s3.profiles.empty() && (!d.s3.env_endpoint.empty() || d.s3.env_keys)) {
    std::string c = "seedctl datasource register s3 --name s3";
    if (!d.s3.env_endpoint.empty()) c += " --endpoint " + ShellWord(d.s3.env_endpoint);
    if (!d.s3.env_region.empty()) c += " --region " + ShellWord(d.s3.env_region);
    c += " --access-key \"$AWS_ACCESS_KEY_ID\" --secret-key \"$AWS_SECRET_ACCESS_KEY\"";
    cmds.push_back(c);
  }
  return cmds;
}

// What was found, as the lines of the report (without the leading "# ").
std::vector<std::string> Findings(const Detection& d, const DetectInput& in) {
  std::vector<std::string> out;
  const SlurmFound& s = d.slurm;
  if (s.answering) {
    out.push_back("Slurm: slurmctld answers (" + s.scontrol + " ping)" +
                  (s.slurm_conf.empty() ? "" : ", SLURM_CONF=" + s.slurm_conf));
    out.push_back("  cluster " + (s.cluster.empty() ? "(unnamed)" : s.cluster) + ", " +
                  std::to_string(s.nodes) + (s.nodes == 1 ? " node" : " nodes") + ", partitions " +
                  (s.partitions.empty() ? "none" : Join(s.partitions, ", ")) + " (default " +
                  (s.default_partition.empty() ? "none" : s.default_partition) + ")");
    out.push_back("  features: " + (s.features.empty() ? "none" : Join(s.features, ", ")));
    out.push_back("  GRES: " + (s.gres.empty() ? "none" : Join(s.gres, ", ")));
  } else {
    out.push_back("Slurm: not used: " + s.error);
  }
  const KubeFound& k = d.kube;
  if (!k.context.empty()) {
    out.push_back(
        "Kubernetes: " + std::string(k.in_cluster ? "in-cluster service account " : "kubeconfig ") +
        Tilde(in, k.source) + ", context " + k.context);
    out.push_back("  server " + k.server + ", namespace " +
                  (k.namespace_.empty() ? "(not set)" : k.namespace_));
    out.push_back("  " + k.auth);
    out.push_back("  reachability: not checked (detect does not contact the API server)");
  } else {
    out.push_back("Kubernetes: not used: " + k.error + " (looked at " + Join(k.tried, ", ") + ")");
  }
  const S3Found& s3 = d.s3;
  if (!s3.env_endpoint.empty())
    out.push_back("S3: endpoint " + s3.env_endpoint + " from $" + s3.env_endpoint_var);
  if (s3.env_keys)
    out.push_back("S3: credentials found in $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY");
  for (const auto& p : s3.profiles) {
    std::string line = "S3: profile " + p.name;
    if (!p.endpoint.empty()) line += ", endpoint " + p.endpoint;
    if (!p.region.empty()) line += ", region " + p.region;
    line += p.credentials.empty() ? ", no credentials" : ", credentials found in " + p.credentials;
    out.push_back(line);
  }
  if (s3.env_endpoint.empty() && !s3.env_keys && s3.profiles.empty()) {
    out.push_back("S3: nothing found (AWS_ENDPOINT_URL, ~/.aws/config, ~/.aws/credentials)");
  }
  const HadoopFound& h = d.hadoop;
  if (h.conf_dir.empty()) {
    out.push_back("HDFS: no Hadoop configuration (" +
                  (h.conf_dir_from == "default" ? in.hadoop_default_dir + ", HADOOP_CONF_DIR unset"
                                                : "HADOOP_CONF_DIR=" + Var(in, "HADOOP_CONF_DIR")) +
                  ")");
  } else {
    out.push_back("HDFS: " + h.conf_dir + " (" +
                  (h.files.empty() ? std::string("no readable *-site.xml") : Join(h.files, ", ")) +
                  ")");
    if (!h.default_fs.empty()) out.push_back("  fs.defaultFS " + h.default_fs);
    if (!h.namenodes.empty()) {
      out.push_back("  namenodes " + Join(h.namenodes, ", ") +
                    (h.namenodes.size() > 1 ? " (HA nameservice " + h.nameservice + ")" : ""));
      std::vector<std::string> urls;
      for (const auto& w : h.webhdfs) urls.push_back(w + "/webhdfs/v1");
      out.push_back("  WebHDFS " + Join(urls, ", "));
    }
    if (h.kerberos) {
      out.push_back(
          "  Kerberos: hadoop.security.authentication=kerberos (found; RSL does not get "
          "tickets: kinit as the controller's user)");
    }
    out.push_back("YARN: " + (h.resource_manager.empty()
                                  ? std::string("no yarn.resourcemanager.address")
                                  : "resource manager " + h.resource_manager +
                                        " (found; RSL has no YARN backend)"));
  }
  for (const auto& w : d.warnings) out.push_back("warning: " + w.ToString());
  return out;
}

std::string Comment(const std::string& text) { return "# " + CommentSafe(text) + "\n"; }

}  // namespace

Detection Detect(const DetectInput& in) {
  Detection d;
  DetectSlurm(in, &d);
  DetectKube(in, &d);
  DetectS3(in, &d);
  DetectHadoop(in, &d);
  if (d.slurm.answering) {
    d.backend = "slurm";
    d.backend_reason = "slurmctld answers";
  } else if (!d.kube.context.empty()) {
    d.backend = "k8s";
    d.backend_reason = d.kube.in_cluster ? "the in-cluster service account is there"
                                         : "the kubeconfig has a current context";
  } else {
    d.backend = "local";
    d.backend_reason = "no Slurm answers and no Kubernetes context";
  }
  return d;
}

std::string DetectionYaml(const Detection& d, const DetectInput& in) {
  std::string y;
  y += "# rsl-controller configuration, as `rsl-controller detect` found the machine.\n";
  y += "# Save it as the file of `rsl-controller --config FILE` (docs/controller-config.md).\n";
  y += "#\n";
  for (const auto& line : Findings(d, in)) y += Comment(line);
  y += "#\n";
  y += Comment("backend " + d.backend + ": " + d.backend_reason);
  for (const auto& [key, value] : ConfigKeys(d, in)) y += key + ": " + Scalar(value) + "\n";
  if (d.backend == "k8s") {
    y += "# where pods write their outputs (s3://bucket/prefix or file:///shared/dir):\n";
    y += "# k8sStaging: s3://BUCKET/rsl-staging\n";
  }
  std::vector<std::string> cmds = DatasourceCommands(d);
  if (!cmds.empty()) {
    y += "#\n# Datasources are kept in seedctl's catalog (docs/data.md), not in this file:\n";
    for (const auto& c : cmds) y += Comment("  " + c);
  }
  return y;
}

std::string DetectionJson(const Detection& d, const DetectInput& in) {
  using nlohmann::json;
  json config = json::object();
  for (const auto& [key, value] : ConfigKeys(d, in)) config[key] = value;
  json slurm = {{"answering", d.slurm.answering},
                {"sinfo", d.slurm.sinfo},
                {"scontrol", d.slurm.scontrol},
                {"error", d.slurm.error},
                {"cluster", d.slurm.cluster},
                {"partitions", d.slurm.partitions},
                {"defaultPartition", d.slurm.default_partition},
                {"nodes", d.slurm.nodes},
                {"features", d.slurm.features},
                {"gres", d.slurm.gres}};
  json kube = {{"source", d.kube.source},        {"inCluster", d.kube.in_cluster},
               {"context", d.kube.context},      {"server", d.kube.server},
               {"namespace", d.kube.namespace_}, {"auth", d.kube.auth},
               {"error", d.kube.error},          {"reachability", "not checked"}};
  json profiles = json::array();
  for (const auto& p : d.s3.profiles) {
    profiles.push_back({{"name", p.name},
                        {"endpoint", p.endpoint},
                        {"region", p.region},
                        {"credentials", p.credentials}});
  }
  json s3 = {{"endpoint", d.s3.env_endpoint},
             {"endpointFrom", d.s3.env_endpoint_var},
             {"region", d.s3.env_region},
             {"envCredentials", d.s3.env_keys},
             {"profiles", profiles}};
  json hdfs = {
      {"confDir", d.hadoop.conf_dir},     {"files", d.hadoop.files},
      {"defaultFS", d.hadoop.default_fs}, {"nameservice", d.hadoop.nameservice},
      {"namenodes", d.hadoop.namenodes},  {"webhdfs", d.hadoop.webhdfs},
      {"kerberos", d.hadoop.kerberos},    {"yarnResourceManager", d.hadoop.resource_manager}};
  json warnings = json::array();
  for (const auto& w : d.warnings) warnings.push_back(w.ToString());
  json out = {{"config", config},
              {"backendReason", d.backend_reason},
              {"found", {{"slurm", slurm}, {"kubernetes", kube}, {"s3", s3}, {"hdfs", hdfs}}},
              {"datasourceCommands", DatasourceCommands(d)},
              {"warnings", warnings}};
  return out.dump(2) + "\n";
}

int RunDetect(int argc, char** argv) {
  DetectInput in;
  in.env = Env::Default();
  std::string output = "yaml";
  CLI::App app{
      "rsl-controller detect: finds Slurm, Kubernetes, S3 and HDFS around this machine "
      "and prints the controller config file it would use (docs/controller-config.md)",
      "rsl-controller detect"};
  app.add_option("--state-dir", in.state_dir, "stateDir to write (default /var/lib/rsl)");
  app.add_option("--listen", in.listen, "listen address to write (default 127.0.0.1:7070)");
  app.add_option("--output,-o", output, "yaml (the config file) | json")
      ->check(CLI::IsMember({"yaml", "json"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (app.exit(e) == 0) return 0;
    std::cerr << "INVALID_ARGUMENT\n";
    return 1;
  }
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) in.cwd = cwd;
  in.state_dir = AbsoluteIn(in, in.state_dir);
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) in.vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  Detection d = Detect(in);
  for (const auto& w : d.warnings)
    std::cerr << "rsl-controller detect: warning: " << w.ToString() << "\n";
  std::cerr << "rsl-controller detect: backend " << d.backend << " (" << d.backend_reason << ")\n";
  std::cout << (output == "json" ? DetectionJson(d, in) : DetectionYaml(d, in));
  return 0;
}

}  // namespace rsl::cli
