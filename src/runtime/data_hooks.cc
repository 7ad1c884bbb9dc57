#include "runtime/data_hooks.h"

#include "base/codes.h"
#include "data/storage.h"

namespace rsl::runtime {

Status DataAdmissionCheck::Check(const engine::RunInfo& run, engine::AdmissionReport* report) {
  if (run.workload == nullptr) return Status::Ok();
  data::InputAdmission admission;
  Status st = data::AdmitInput(*run.workload, state_dir_, options_, &admission);
  report->event_reason = std::move(admission.event_reason);
  report->event_message = std::move(admission.event_message);
  report->report_json = std::move(admission.report_json);
  report->input_descriptors_json = std::move(admission.input_descriptors_json);
  return st;
}

std::string DataPublisher::LocalPath(const std::string& uri) {
  auto parsed = data::ParseUri(uri);
  if (!parsed.ok() || parsed->scheme == "file") return "";
  std::lock_guard<std::mutex> lock(mu_);
  data::Catalog* catalog = OpenCatalog();
  if (!catalog) return "";
  auto ds = catalog->Resolve(*parsed);
  if (!ds.ok() || !ds->has_value() || (*ds)->kind != "local") return "";
  std::string dir = (*ds)->path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + parsed->path;
}

bool DataPublisher::Handles(const std::string& uri) {
  auto parsed = data::ParseUri(uri);
  if (!parsed.ok()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  data::Catalog* catalog = OpenCatalog();
  if (!catalog) return false;
  auto ds = catalog->Resolve(*parsed);
  return ds.ok() && ds->has_value();
}

Result<std::unique_ptr<data::Storage>> DataPublisher::Open(const std::string& uri) {
  std::lock_guard<std::mutex> lock(mu_);
  return data::OpenStorage(uri, OpenCatalog());
}

Status DataPublisher::Publish(const std::string& local_dir, const std::string& dest_uri) {
  auto storage = Open(dest_uri);
  if (!storage.ok()) return storage.status();
  return (*storage)->Publish(local_dir, dest_uri);
}

bool DataPublisher::ConditionalWrites(const std::string& uri) {
  auto parsed = data::ParseUri(uri);
  // hdfs:// through WebHDFS: exclusive creates and atomic renames (data/webhdfs.cc).
  return parsed.ok() &&
         (parsed->scheme == "s3" || parsed->scheme == "ceph" || parsed->scheme == "hdfs") &&
         LocalPath(uri).empty() && Handles(uri);
}

Result<engine::StoredObject> DataPublisher::ReadObject(const std::string& uri) {
  auto storage = Open(uri);
  if (!storage.ok()) return storage.error();
  auto got = (*storage)->ReadTagged(uri);
  if (!got.ok()) {
    Error e = got.error();
    if (e.code == codes::kDataSourceNotFound) e.code = codes::kNotFound;  // the hook's contract
    return e;
  }
  return engine::StoredObject{std::move(got->bytes), std::move(got->etag)};
}

Result<std::string> DataPublisher::WriteObjectIf(const std::string& uri, const std::string& bytes,
                                                 const std::string& if_match) {
  auto storage = Open(uri);
  if (!storage.ok()) return storage.error();
  return (*storage)->WriteIf(uri, bytes, if_match);
}

Status DataPublisher::Remove(const std::string& uri) {
  auto storage = Open(uri);
  if (!storage.ok()) return storage.status();
  return (*storage)->Delete(uri);
}

Result<std::vector<std::string>> DataPublisher::ListObjects(const std::string& uri) {
  auto storage = Open(uri);
  if (!storage.ok()) return storage.error();
  auto listed = (*storage)->List(uri);
  if (!listed.ok()) {
    if (listed.status().code() == codes::kDataSourceNotFound) return std::vector<std::string>();
    return listed.error();
  }
  std::vector<std::string> uris;
  for (const auto& o : *listed) uris.push_back(o.uri);
  return uris;
}

data::Catalog* DataPublisher::OpenCatalog() {
  if (!catalog_) {
    auto c = data::Catalog::Open(state_dir_);
    if (c.ok()) catalog_ = std::move(*c);
  }
  return catalog_.get();
}

}  // namespace rsl::runtime
