#include "cli/default_hooks.h"

#include <mutex>

#include "data/admission.h"
#include "data/catalog.h"
#include "data/storage.h"
#include "govern/cost_hook.h"
#include "govern/policy_hook.h"
#include "model/model_hooks.h"

namespace rsl::cli {

namespace {

// Outputs whose URI is not a plain file path (hdfs://, s3://, ceph://) go through the data
// layer's storage drivers and the datasource catalog. A `local` datasource serving the URI's
// authority turns it into a directory, which the engine then publishes by rename.
class DataPublisher : public engine::OutputPublisher {
 public:
  explicit DataPublisher(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  std::string LocalPath(const std::string& uri) override {
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

  bool Handles(const std::string& uri) override {
    auto parsed = data::ParseUri(uri);
    if (!parsed.ok()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    data::Catalog* catalog = OpenCatalog();
    if (!catalog) return false;
    auto ds = catalog->Resolve(*parsed);
    return ds.ok() && ds->has_value();
  }

  Status Publish(const std::string& local_dir, const std::string& dest_uri) override {
    std::unique_ptr<data::Storage> storage;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto opened = data::OpenStorage(dest_uri, OpenCatalog());
      if (!opened.ok()) return opened.status();
      storage = std::move(*opened);
    }
    return storage->Publish(local_dir, dest_uri);
  }

 private:
  // REQUIRES: mu_ held. Opened lazily: runs without non-file outputs never touch it.
  data::Catalog* OpenCatalog() {
    if (!catalog_) {
      auto c = data::Catalog::Open(state_dir_);
      if (c.ok()) catalog_ = std::move(*c);
    }
    return catalog_.get();
  }

  std::string state_dir_;
  std::mutex mu_;
  std::unique_ptr<data::Catalog> catalog_;
};

}  // namespace

engine::Hooks DefaultHooks(const std::string& state_dir) {
  engine::Hooks hooks;
  // Admission, cheapest first: images, dependencies and declared outputs are answered from the
  // environment registry in milliseconds; the data contract may read the whole input.
  hooks.admission.push_back(model::EnvironmentAdmissionCheck(state_dir));
  hooks.admission.push_back(std::make_shared<data::DataAdmissionCheck>(state_dir));
  // Step hooks: the model hook resolves the image before launch and checks tensors and
  // fingerprints after; policies watch running steps; cost is recorded for every attempt.
  hooks.steps.push_back(model::ModelStepHook(state_dir));
  hooks.steps.push_back(std::make_shared<govern::PolicyHook>(state_dir));
  hooks.steps.push_back(std::make_shared<govern::CostHook>(state_dir));
  hooks.publisher = std::make_shared<DataPublisher>(state_dir);
  return hooks;
}

}  // namespace rsl::cli
