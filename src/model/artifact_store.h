// The ModelArtifact store (SPEC.md "model"): every model a run produces, with its contract
// (framework, version, dependencies, signature), its fingerprint, where it lives, and the
// provenance of how it was made (run, spec digest, inputs, environment digest). Kept in the
// state directory's database (component "model", table model_artifacts).
//
// Life cycle: a step's artifact is recorded "staged" (uri = its staging directory) when the
// step succeeds; when the run commits, it becomes "committed" with uri = <committed uri>/<step>;
// when the run's outputs are discarded, its staged records are deleted.
//
// Threading: calls are serialised; several processes may share the database.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/sqlite.h"
#include "base/status.h"
#include "model/fingerprint.h"

namespace rsl::model {

inline constexpr char kArtifactStaged[] = "staged";
inline constexpr char kArtifactCommitted[] = "committed";

struct ModelArtifact {
  int64_t id = 0;
  std::string name;  //!< the workload's metadata.name
  std::string namespace_;
  std::string version;  //!< model.version
  std::string framework;
  std::vector<std::string> dependencies;  //!< "torch==2.1.2+cu118"
  std::string signature_json;             //!< {"inputs": [...], "outputs": [...]}
  std::string fingerprint;                //!< "sha256:<hex>" (fingerprint.h)
  std::string build_fingerprint;          //!< the pin, if the spec had one
  std::vector<ArtifactFile> files;
  std::string uri;    //!< where the files are (file:// for local directories)
  std::string state;  //!< kArtifactStaged or kArtifactCommitted
  std::string step;
  std::string run_id;
  std::string workload_id;
  std::string spec_digest;
  std::string image;
  std::string environment_digest;
  std::vector<std::string> input_descriptors_json;  //!< DataDescriptor JSON objects
  int64_t created_at_ms = 0;
};

class ArtifactStore {
 public:
  //! Opens <state_dir>/rsl.db (creating it) and applies the model migrations.
  static Result<std::unique_ptr<ArtifactStore>> Open(const std::string& state_dir);
  explicit ArtifactStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  //! Records an artifact (its id and created_at are assigned); returns the id. A record
  //! for the same run and step is replaced (a retried step leaves one artifact).
  Result<int64_t> Record(const ModelArtifact& artifact);
  //! The run committed: its staged artifacts become committed under `committed_uri`/<step>.
  Status Commit(const std::string& run_id, const std::string& committed_uri);
  //! The run's outputs were discarded: its staged artifacts are deleted.
  Status Discard(const std::string& run_id);

  //! Every artifact, newest first.
  Result<std::vector<ModelArtifact>> List();
  //! The newest artifact called `name` (with model version `version` when given), committed
  //! ones preferred. NOT_FOUND with a hint listing what exists.
  Result<ModelArtifact> Find(const std::string& name, const std::string& version);
  //! The newest artifact at `uri` (trailing slashes ignored). NOT_FOUND when none.
  Result<ModelArtifact> FindByUri(const std::string& uri);

 private:
  Result<std::vector<ModelArtifact>> Query(const std::string& where,
                                           const std::vector<std::string>& args);
  std::mutex mu_;
  std::unique_ptr<Db> db_;  // GUARDED_BY(mu_)
};

//! The artifact as JSON (the `-o json` of `model describe`).
std::string ArtifactToJson(const ModelArtifact& artifact);

//! An in-toto Statement v1 (https://in-toto.io/Statement/v1) for the artifact: subject =
//! its files with sha256 digests; predicateType https://rsl.dev/provenance/model/v1;
//! predicate = {workloadId, runId, step, specDigest, inputs (DataDescriptors), environment
//! {image, digest}, model {name, version, framework, fingerprint, uri, dependencies}}.
std::string ProvenanceStatement(const ModelArtifact& artifact);

//! The outcome of recomputing an artifact's fingerprint from its files.
struct Verification {
  std::string computed;                  //!< fingerprint of the model files there now
  std::vector<std::string> differences;  //!< "model.pt: sha256 <new>, recorded <old>", ...
  bool ok() const { return differences.empty(); }
};

//! Recomputes the fingerprint of the model files in `dir` (same selection as when recorded)
//! and lists every file that changed, appeared or disappeared. Errors: IO_ERROR.
Result<Verification> VerifyArtifact(const ModelArtifact& artifact, const std::string& dir);

//! "file:///abs/dir" for a local directory; other URIs unchanged.
std::string DirToUri(const std::string& dir);
//! The local directory of a file:// URI or a plain path; nullopt for other schemes.
std::optional<std::string> UriToLocalDir(const std::string& uri);

}  // namespace rsl::model
