// Model artifacts and their fingerprints (docs/model.md "Fingerprints").
//
// An artifact is the set of model files a step leaves in its output directory: regular files
// anywhere under it whose names end in one of kModelFileExtensions, except .safetensors
// files that hold only tensors named after signature outputs (those are predictions, not
// weights). A .safetensors file that cannot be parsed still counts as a model file.
//
// fingerprint = "sha256:" + hex sha256 of the concatenation, over the files sorted bytewise
// by their relative path ('/'-separated), of
//     <relative path> NUL <hex sha256 of the file's contents> LF
// so `find . -type f ... | LC_ALL=C sort | while read f; do printf '%s\0%s\n' "$f"
// "$(sha256sum < "$f" | cut -c1-64)"; done | sha256sum` reproduces it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "spec/workload.h"

namespace rsl::model {

inline constexpr const char* kModelFileExtensions[] = {
    ".safetensors", ".pt",   ".pth",  ".onnx",   ".pkl", ".joblib", ".pb",     ".h5",
    ".keras",       ".ckpt", ".gguf", ".tflite", ".xgb", ".ubj",    ".mlmodel"};

struct ArtifactFile {
  std::string path;    //!< relative to the artifact's directory
  std::string sha256;  //!< hex
  int64_t size = 0;
};

struct Fingerprint {
  std::string digest;  //!< "sha256:<64 hex>"
  std::vector<ArtifactFile> files;
};

//! True when the name ends in one of kModelFileExtensions.
bool HasModelExtension(const std::string& path);

//! The artifact's files under `dir` (relative, sorted). `model` (may be null) identifies
//! signature outputs so prediction-only .safetensors files are left out.
Result<std::vector<std::string>> FindModelFiles(const std::string& dir,
                                                const spec::ModelSpec* model);

//! Hashes `files` (relative to `dir`). Errors: IO_ERROR naming a file that cannot be read.
Result<Fingerprint> ComputeFingerprint(const std::string& dir,
                                       const std::vector<std::string>& files);

//! The digest of already hashed files (the same formula; for verification and tests).
std::string FingerprintOf(std::vector<ArtifactFile> files);

}  // namespace rsl::model
