#include "runtime/data_hooks.h"

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

Status DataPublisher::Publish(const std::string& local_dir, const std::string& dest_uri) {
  std::unique_ptr<data::Storage> storage;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto opened = data::OpenStorage(dest_uri, OpenCatalog());
    if (!opened.ok()) return opened.status();
    storage = std::move(*opened);
  }
  return storage->Publish(local_dir, dest_uri);
}

data::Catalog* DataPublisher::OpenCatalog() {
  if (!catalog_) {
    auto c = data::Catalog::Open(state_dir_);
    if (c.ok()) catalog_ = std::move(*c);
  }
  return catalog_.get();
}

}  // namespace rsl::runtime
