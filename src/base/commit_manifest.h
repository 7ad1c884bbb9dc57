// The `_RSL_COMMIT` manifest: the file a publisher writes LAST into a published directory or
// prefix, so readers take the directory as committed once it exists (data readers skip it as
// a hidden name). One shape for every writer:
//
//   {"run_id": ..., "workload_id": ..., "committed_at": <ms>,   (a run's commit only)
//    "outputs": [{"step": ..., "uri": ..., "bytes": N}, ...],    (step output directories)
//    "files": [{"path": ..., "size": N, "sha256": <64 hex>}, ...]}  (every file)
//
// The engine's whole-run commit fills the run fields and `outputs`; Storage::Publish fills
// `files` (hashing every output file at a run's commit would cost a read of all of them).
// The run fields are written only when set; both arrays always. The reader takes every field
// as optional, so manifests written before this module (the engine's {run_id, workload_id,
// committed_at, outputs}, the data layer's {files}) read back as they were.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace rsl {

//! The manifest's file name.
inline constexpr char kCommitManifestName[] = "_RSL_COMMIT";

struct CommitManifest {
  //! One step's published output directory.
  struct Output {
    std::string step;
    std::string uri;
    int64_t bytes = 0;
  };
  //! One published file, relative to the manifest's directory.
  struct File {
    std::string path;
    int64_t size = 0;
    std::string sha256;  //!< 64 lowercase hex
  };
  std::string run_id;  //!< "" when not a run's commit
  std::string workload_id;
  int64_t committed_at = 0;  //!< ms since the epoch; 0 = not recorded
  std::vector<Output> outputs;
  std::vector<File> files;
};

//! The manifest as written: pretty JSON with a final newline.
std::string CommitManifestJson(const CommitManifest& manifest);

//! Strict parse: a JSON object whose known fields have their types; unknown fields are
//! ignored (a newer writer may add some). Errors: DATA_FORMAT_ERROR with the field path.
Result<CommitManifest> ParseCommitManifest(std::string_view json);

}  // namespace rsl
