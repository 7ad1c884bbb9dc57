// The data layer inside a run: the admission hook that validates spec.data.input
// (data/admission.h), and the publisher that writes outputs whose URI is not a plain file
// path (hdfs://, s3://, ceph://) through the data layer's storage drivers and the datasource
// catalog (docs/data.md).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/admission.h"
#include "data/catalog.h"
#include "data/storage.h"
#include "engine/hooks.h"

namespace rsl::runtime {

//! data::AdmitInput as an engine admission check, resolving non-file inputs through the
//! datasource catalog of `state_dir` ("" = none). Thread-safe.
class DataAdmissionCheck : public engine::AdmissionCheck {
 public:
  explicit DataAdmissionCheck(std::string state_dir, data::ValidateOptions options = {})
      : state_dir_(std::move(state_dir)), options_(options) {}
  std::string name() const override { return "data"; }
  Status Check(const engine::RunInfo& run, engine::AdmissionReport* report) override;

 private:
  std::string state_dir_;
  data::ValidateOptions options_;
};

//! A `local` datasource serving a URI's authority turns it into a directory, which the engine
//! then publishes by rename; other datasources publish through data::OpenStorage. The
//! catalog of `state_dir` is opened on first use. Thread-safe.
class DataPublisher : public engine::OutputPublisher {
 public:
  explicit DataPublisher(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  std::string LocalPath(const std::string& uri) override;
  bool Handles(const std::string& uri) override;
  Status Publish(const std::string& local_dir, const std::string& dest_uri) override;
  //! s3:// and ceph:// (ETags and conditional PUTs), hdfs:// (WebHDFS: exclusive CREATE and
  //! atomic RENAME), through data::Storage::WriteIf.
  bool ConditionalWrites(const std::string& uri) override;
  Result<engine::StoredObject> ReadObject(const std::string& uri) override;
  Result<std::string> WriteObjectIf(const std::string& uri, const std::string& bytes,
                                    const std::string& if_match) override;
  Status Remove(const std::string& uri) override;
  Result<std::vector<std::string>> ListObjects(const std::string& uri) override;

 private:
  Result<std::unique_ptr<data::Storage>> Open(const std::string& uri);
  // REQUIRES: mu_ held. Opened lazily: runs without non-file outputs never touch it.
  data::Catalog* OpenCatalog();

  std::string state_dir_;
  std::mutex mu_;
  std::unique_ptr<data::Catalog> catalog_;  // GUARDED_BY(mu_)
};

}  // namespace rsl::runtime
