#include "k8s/kubeconfig.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::k8s {

namespace {

namespace fs = std::filesystem;

SourcePos PosOf(const std::string& file, const YAML::Node& node) {
  SourcePos pos;
  pos.file = file;
  if (node && node.Mark().line >= 0) {
    pos.line = node.Mark().line + 1;
    pos.column = node.Mark().column + 1;
  }
  return pos;
}

Error Invalid(const std::string& file, const YAML::Node& at, const std::string& path,
              const std::string& message, const std::string& hint = "") {
  Error e(codes::kKubeconfigInvalid, message);
  e.At(PosOf(file, at)).Path(path);
  if (!hint.empty()) e.Hint(hint);
  return e;
}

// base64 (standard alphabet, padding optional, whitespace ignored) as kubeconfig's *-data
// fields hold it.
bool DecodeBase64(const std::string& in, std::string* out) {
  std::string clean;
  for (char c : in) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  }
  while (clean.size() % 4 != 0) clean.push_back('=');
  std::string buf(clean.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()),
                          static_cast<int>(clean.size()));
  if (n < 0) return false;
  size_t pad = 0;
  for (size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i) ++pad;
  buf.resize(static_cast<size_t>(n) - std::min<size_t>(pad, static_cast<size_t>(n)));
  *out = std::move(buf);
  return true;
}

std::string Resolve(const std::string& file, const std::string& p) {
  if (p.empty() || p[0] == '/' || file.empty()) return p;
  return (fs::path(file).parent_path() / p).string();
}

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts).
YAML::Node FindNamed(const YAML::Node& list, const std::string& name, size_t* index) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& item = list[i];
    if (item.IsMap() && item["name"] && item["name"].IsScalar() &&
        item["name"].as<std::string>() == name) {
      *index = i;
      return item;
    }
  }
  return YAML::Node();
}

std::string Scalar(const YAML::Node& map, const char* key) {
  const YAML::Node& n = map[key];
  return n && n.IsScalar() ? n.as<std::string>() : std::string();
}

// Reads `<key>-data` (base64) or `<key>` (a file) of `map` into *out; "" when neither.
Status ReadPemField(const std::string& file, const YAML::Node& map, const std::string& path,
                    const std::string& key, std::string* out) {
  const std::string data_key = key + "-data";
  if (map[data_key]) {
    if (!map[data_key].IsScalar() || !DecodeBase64(map[data_key].as<std::string>(), out)) {
      return Invalid(file, map[data_key], path + "." + data_key, "not base64",
                     "write the PEM file's contents base64-encoded, or use " + key + ": PATH");
    }
    return Status::Ok();
  }
  if (map[key]) {
    std::string p = Resolve(file, Scalar(map, key.c_str()));
    auto text = ReadFile(p);
    if (!text.ok()) {
      return Invalid(file, map[key], path + "." + key, "cannot read " + p,
                     "check the path (relative paths are relative to the kubeconfig file)")
          .Value(p);
    }
    *out = std::move(*text);
  }
  return Status::Ok();
}

std::string CertSubject(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), (int)pem.size()),
                                                &BIO_free);
  if (!bio) return "";
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert) return "";
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(cert.get()), buf, sizeof buf);
  return buf;
}

}  // namespace

std::string Connection::Describe() const {
  std::string auth;
  if (!client_cert_pem.empty()) {
    std::string subject = CertSubject(client_cert_pem);
    auth = "client certificate" + (subject.empty() ? "" : " " + subject);
  }
  if (!token.empty()) auth += std::string(auth.empty() ? "" : " + ") + "bearer token";
  if (auth.empty()) auth = "no credentials";
  std::string out = server + " (context " + context + ", " + auth;
  if (insecure_skip_tls_verify) out += ", TLS NOT VERIFIED";
  if (!namespace_.empty()) out += ", namespace " + namespace_;
  return out + ", from " + source + ")";
}

namespace {

// One kubeconfig file, parsed. A list of them is merged as kubectl merges KUBECONFIG's files:
// the first file that sets current-context gives it, and a context, cluster or user is taken
// from the first file that defines its name (its relative paths from that file's directory).
struct Doc {
  YAML::Node root;
  std::string file;
};

Result<Connection> ParseDocs(const std::vector<Doc>& docs, const std::string& context);

Result<Doc> LoadDoc(const std::string& yaml, const std::string& file) {
  Doc d;
  d.file = file;
  try {
    d.root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    SourcePos pos{file, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                  e.mark.column >= 0 ? e.mark.column + 1 : 0};
    return Error(codes::kKubeconfigInvalid, "not YAML: " + e.msg).At(pos);
  }
  return d;
}

Result<Connection> Parse(const std::vector<Doc>& docs, const std::string& context) {
  try {
    return ParseDocs(docs, context);
  } catch (const YAML::Exception& e) {
    // A shape the checks below did not foresee (yaml-cpp throws on a bad subscript).
    SourcePos pos{docs.empty() ? std::string() : docs.front().file,
                  e.mark.line >= 0 ? e.mark.line + 1 : 0,
                  e.mark.column >= 0 ? e.mark.column + 1 : 0};
    return Error(codes::kKubeconfigInvalid, "unexpected structure: " + e.msg).At(pos);
  }
}

}  // namespace

Result<Connection> ParseKubeconfig(const std::string& yaml, const std::string& file,
                                   const std::string& context) {
  auto doc = LoadDoc(yaml, file);
  if (!doc.ok()) return doc.error();
  return Parse({std::move(*doc)}, context);
}

namespace {

// The first document whose list `key` (contexts, clusters, users) has an entry named `name`.
const Doc* FindInDocs(const std::vector<Doc>& docs, const char* key, const std::string& name,
                      YAML::Node* entry, size_t* index) {
  for (const Doc& d : docs) {
    *entry = FindNamed(d.root[key], name, index);
    if (entry->IsMap()) return &d;
  }
  return nullptr;
}

Result<Connection> ParseDocs(const std::vector<Doc>& docs, const std::string& context) {
  for (const Doc& d : docs) {
    // An empty file in a list is an empty configuration, as kubectl takes it.
    if (docs.size() > 1 && d.root.IsNull()) continue;
    if (!d.root.IsMap()) {
      return Invalid(d.file, d.root, "",
                     "a kubeconfig is a mapping (apiVersion, clusters, users, ...)");
    }
  }
  const Doc& first = docs.front();
  Connection c;
  c.context = context;
  for (size_t i = 0; i < docs.size() && c.context.empty(); ++i) {
    if (docs[i].root.IsMap()) c.context = Scalar(docs[i].root, "current-context");
  }
  if (c.context.empty()) {
    return Invalid(first.file, first.root, "current-context",
                   "no current-context and no context chosen",
                   "pass --context NAME or run `kubectl config use-context NAME`");
  }
  size_t ci = 0;
  YAML::Node ctx_entry;
  const Doc* ctx_doc = FindInDocs(docs, "contexts", c.context, &ctx_entry, &ci);
  if (!ctx_doc) {
    std::string where = docs.size() > 1
                            ? " in any of the " + std::to_string(docs.size()) + " files of the list"
                            : "";
    return Invalid(first.file, first.root["contexts"] ? first.root["contexts"] : first.root,
                   "contexts", "no context named \"" + c.context + "\"" + where,
                   "`kubectl config get-contexts` lists them")
        .Value(c.context);
  }
  std::string file = ctx_doc->file;
  c.source = file;
  const std::string ctx_path = "contexts[" + std::to_string(ci) + "].context";
  YAML::Node ctx = ctx_entry["context"];
  if (!ctx || !ctx.IsMap()) return Invalid(file, ctx_entry, ctx_path, "missing");
  c.namespace_ = Scalar(ctx, "namespace");
  const std::string cluster_name = Scalar(ctx, "cluster");
  const std::string user_name = Scalar(ctx, "user");

  size_t cli = 0;
  YAML::Node cluster_entry;
  const Doc* cluster_doc = FindInDocs(docs, "clusters", cluster_name, &cluster_entry, &cli);
  if (!cluster_doc) {
    return Invalid(file, ctx, ctx_path + ".cluster",
                   "no cluster named \"" + cluster_name + "\" in clusters")
        .Value(cluster_name);
  }
  const std::string ctx_file = file;
  file = cluster_doc->file;  // the cluster's errors and relative paths are its file's
  const std::string cl_path = "clusters[" + std::to_string(cli) + "].cluster";
  YAML::Node cluster = cluster_entry["cluster"];
  if (!cluster || !cluster.IsMap()) return Invalid(file, cluster_entry, cl_path, "missing");
  c.server = Scalar(cluster, "server");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (!StartsWith(c.server, "https://") && !StartsWith(c.server, "http://")) {
    return Invalid(file, cluster["server"] ? cluster["server"] : cluster, cl_path + ".server",
                   c.server.empty() ? "missing" : "not an http(s) URL",
                   "write server: https://HOST:PORT")
        .Value(c.server);
  }
  if (cluster["insecure-skip-tls-verify"]) {
    std::string v = Scalar(cluster, "insecure-skip-tls-verify");
    if (v != "true" && v != "false") {
      return Invalid(file, cluster["insecure-skip-tls-verify"],
                     cl_path + ".insecure-skip-tls-verify", "expected true or false")
          .Value(v);
    }
    c.insecure_skip_tls_verify = v == "true";
  }
  RSL_RETURN_IF_ERROR(ReadPemField(file, cluster, cl_path, "certificate-authority", &c.ca_pem));

  if (!user_name.empty()) {
    size_t ui = 0;
    YAML::Node user_entry;
    const Doc* user_doc = FindInDocs(docs, "users", user_name, &user_entry, &ui);
    if (!user_doc) {
      return Invalid(ctx_file, ctx, ctx_path + ".user",
                     "no user named \"" + user_name + "\" in users")
          .Value(user_name);
    }
    file = user_doc->file;
    const std::string u_path = "users[" + std::to_string(ui) + "].user";
    YAML::Node user = user_entry["user"];
    if (user && user.IsMap()) {
      if (user["exec"]) {
        return Invalid(file, user["exec"], u_path + ".exec",
                       "exec credential plugins are not supported",
                       "use a token (e.g. a service account's: kubectl create token NAME) or a "
                       "client certificate");
      }
      if (user["auth-provider"]) {
        return Invalid(file, user["auth-provider"], u_path + ".auth-provider",
                       "auth-provider plugins are not supported",
                       "use a token or a client certificate");
      }
      if (user["username"] || user["password"]) {
        const char* key = user["username"] ? "username" : "password";
        return Invalid(file, user[key], u_path + "." + key,
                       "basic authentication (username/password) is not supported (Kubernetes "
                       "removed it in 1.19)",
                       "use a token or a client certificate");
      }
      c.token = Scalar(user, "token");
      if (c.token.empty() && user["tokenFile"]) {
        std::string p = Resolve(file, Scalar(user, "tokenFile"));
        auto text = ReadFile(p);
        if (!text.ok()) {
          return Invalid(file, user["tokenFile"], u_path + ".tokenFile", "cannot read " + p)
              .Value(p);
        }
        c.token = std::string(Trim(*text));
      }
      RSL_RETURN_IF_ERROR(
          ReadPemField(file, user, u_path, "client-certificate", &c.client_cert_pem));
      RSL_RETURN_IF_ERROR(ReadPemField(file, user, u_path, "client-key", &c.client_key_pem));
      if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
        const char* missing = c.client_cert_pem.empty() ? "client-certificate" : "client-key";
        return Invalid(file, user, u_path + "." + missing,
                       std::string("missing: a client certificate needs both ") +
                           "client-certificate and client-key");
      }
    }
  }
  return c;
}

}  // namespace

Result<Connection> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParseKubeconfig(*text, path, context);
}

std::vector<std::string> KubeconfigFiles(const std::string& list) {
  std::error_code ec;
  if (fs::is_regular_file(list, ec)) return {list};  // one file whose name has a ':'
  std::vector<std::string> files;
  size_t from = 0;
  while (from <= list.size()) {
    size_t to = list.find(':', from);
    if (to == std::string::npos) to = list.size();
    std::string p = list.substr(from, to - from);
    if (!p.empty() && std::find(files.begin(), files.end(), p) == files.end()) files.push_back(p);
    from = to + 1;
  }
  return files;
}

Result<Connection> LoadKubeconfigList(const std::string& list, const std::string& context) {
  std::vector<std::string> files = KubeconfigFiles(list);
  if (files.size() == 1) return LoadKubeconfig(files.front(), context);
  std::vector<Doc> docs;
  for (const auto& f : files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) continue;  // kubectl skips a listed file that does not exist
    auto text = ReadFile(f);
    if (!text.ok()) return text.error();
    auto doc = LoadDoc(*text, f);
    if (!doc.ok()) return doc.error();
    docs.push_back(std::move(*doc));
  }
  if (docs.empty()) {
    return Error(codes::kIoError, "none of the kubeconfig files listed exists")
        .Value(list)
        .Hint("KUBECONFIG (or --kubeconfig) is a ':'-separated list of files");
  }
  return Parse(docs, context);
}

Result<Connection> InClusterConnection(const std::map<std::string, std::string>& env,
                                       const std::string& dir) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  std::string host = get("KUBERNETES_SERVICE_HOST");
  std::string port = get("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Error(codes::kKubeconfigInvalid,
                 "no kubeconfig and not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)")
        .Hint("set KUBECONFIG or pass --kubeconfig FILE");
  }
  Connection c;
  c.context = "in-cluster";
  c.source = dir;
  // An IPv6 service address needs brackets in a URL.
  c.server =
      "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  auto token = ReadFile(dir + "/token");
  if (!token.ok()) {
    return Error(codes::kKubeconfigInvalid, "in a cluster but no service account token")
        .Value(dir + "/token")
        .Hint("mount the service account token (automountServiceAccountToken: true)");
  }
  c.token = std::string(Trim(*token));
  auto ca = ReadFile(dir + "/ca.crt");
  if (!ca.ok()) {
    return Error(codes::kKubeconfigInvalid, "in a cluster but no service account CA")
        .Value(dir + "/ca.crt");
  }
  c.ca_pem = std::move(*ca);
  auto ns = ReadFile(dir + "/namespace");
  if (ns.ok()) c.namespace_ = std::string(Trim(*ns));
  return c;
}

Result<Connection> ResolveConnection(const std::map<std::string, std::string>& env,
                                     const std::string& explicit_path, const std::string& context,
                                     const std::string& service_account_dir) {
  if (!explicit_path.empty()) return LoadKubeconfigList(explicit_path, context);
  auto it = env.find("KUBECONFIG");
  if (it != env.end() && !it->second.empty()) return LoadKubeconfigList(it->second, context);
  it = env.find("HOME");
  if (it != env.end() && !it->second.empty()) {
    std::string p = it->second + "/.kube/config";
    std::error_code ec;
    if (fs::exists(p, ec)) return LoadKubeconfig(p, context);
  }
  if (!context.empty()) {
    return Error(codes::kKubeconfigInvalid,
                 "context \"" + context + "\" chosen but no kubeconfig found")
        .Hint("set KUBECONFIG or pass --kubeconfig FILE");
  }
  return InClusterConnection(env, service_account_dir);
}

}  // namespace rsl::k8s
