#include "runtime/backends.h"

#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "data/storage.h"
#include "k8s/backend.h"
#include "k8s/kubeconfig.h"

extern char** environ;

namespace rsl::runtime {

Status FetchPrefix(const std::string& uri, const std::string& dir) {
  auto storage = data::OpenStorage(uri, nullptr);
  if (!storage.ok()) return storage.error();
  RSL_RETURN_IF_ERROR(MakeDirs(dir));
  auto objects = (*storage)->List(uri);
  // Nothing below the prefix: the step wrote no outputs (S3 and files both say so this way).
  if (!objects.ok() && objects.error().code == codes::kDataSourceNotFound) return Status::Ok();
  if (!objects.ok()) return objects.error();
  for (const auto& o : *objects) {
    if (o.is_dir || o.relative.empty()) continue;
    if (o.relative.find("..") != std::string::npos || o.relative[0] == '/') {
      return Error(codes::kIoError, "staging object " + Quote(o.relative) + " escapes " + uri)
          .Value(o.relative);
    }
    auto blob = (*storage)->ReadAll(o.uri);
    if (!blob.ok()) return blob.error();
    std::string path = dir + "/" + o.relative;
    auto slash = path.find_last_of('/');
    RSL_RETURN_IF_ERROR(MakeDirs(path.substr(0, slash)));
    RSL_RETURN_IF_ERROR(WriteFileAtomic(path, std::string((*blob)->data())));
  }
  return Status::Ok();
}

Result<std::unique_ptr<backend::Backend>> MakeAnyBackend(const std::string& name,
                                                         const backend::BackendOptions& o) {
  if (name != "k8s") return backend::MakeBackend(name, o);
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto conn = k8s::ResolveConnection(env, o.kubeconfig, o.kube_context);
  if (!conn.ok()) return conn.error();
  k8s::K8sBackendOptions ko;
  ko.connection = *conn;
  for (const auto& m : o.k8s_namespaces) {
    auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return Error(codes::kInvalidArgument, "bad --k8s-namespace " + Quote(m))
          .Path("--k8s-namespace")
          .Value(m)
          .Hint("RSLNAMESPACE=KUBERNETESNAMESPACE, e.g. --k8s-namespace fraud=ml-fraud");
    }
    ko.namespaces[m.substr(0, eq)] = m.substr(eq + 1);
  }
  ko.staging_prefix = o.k8s_staging;
  if (!StartsWith(o.k8s_staging, "file://")) ko.fetch_staging = FetchPrefix;
  if (!o.capability_labels.empty()) {
    auto table = k8s::CapabilityLabels::Load(o.capability_labels);
    if (!table.ok()) return table.error();
    ko.capability_labels = *table;
  }
  RSL_RETURN_IF_ERROR(k8s::CheckK8sOptions(ko));
  return std::unique_ptr<backend::Backend>(std::make_unique<k8s::K8sBackend>(std::move(ko)));
}

}  // namespace rsl::runtime
