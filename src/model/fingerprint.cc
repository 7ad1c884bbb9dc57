#include "model/fingerprint.h"

#include <sys/stat.h>

#include <algorithm>

#include "base/sha256.h"
#include "base/strings.h"
#include "model/mapped_file.h"
#include "model/safetensors.h"
#include "model/signature.h"

namespace rsl::model {
namespace {

// A .safetensors file whose every tensor is a signature output holds predictions.
bool OnlySignatureOutputs(const std::string& path, const spec::ModelSpec& model) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return false;
  auto file = ParseSafetensors((*mapped)->bytes(), path);
  if (!file.ok() || file->tensors.empty()) return false;
  for (const auto& t : file->tensors) {
    bool is_output = std::any_of(model.outputs.begin(), model.outputs.end(),
                                 [&](const spec::TensorSpec& o) { return o.name == t.name; });
    if (!is_output) return false;
  }
  return true;
}

}  // namespace

bool HasModelExtension(const std::string& path) {
  std::string lower = ToLower(path);
  for (const char* ext : kModelFileExtensions) {
    if (EndsWith(lower, ext)) return true;
  }
  return false;
}

Result<std::vector<std::string>> FindModelFiles(const std::string& dir,
                                                const spec::ModelSpec* model) {
  auto all = ListFilesRecursive(dir);
  if (!all.ok()) return all.error();
  std::vector<std::string> out;
  for (const auto& rel : *all) {
    if (!HasModelExtension(rel)) continue;
    if (model && EndsWith(ToLower(rel), ".safetensors") &&
        OnlySignatureOutputs(dir + "/" + rel, *model)) {
      continue;
    }
    out.push_back(rel);
  }
  return out;
}

std::string FingerprintOf(std::vector<ArtifactFile> files) {
  std::sort(files.begin(), files.end(),
            [](const ArtifactFile& a, const ArtifactFile& b) { return a.path < b.path; });
  Sha256 h;
  for (const auto& f : files) {
    h.Update(f.path);
    h.Update(std::string_view("\0", 1));
    h.Update(f.sha256);
    h.Update("\n");
  }
  return "sha256:" + h.HexDigest();
}

Result<Fingerprint> ComputeFingerprint(const std::string& dir,
                                       const std::vector<std::string>& files) {
  Fingerprint fp;
  for (const auto& rel : files) {
    std::string full = dir + "/" + rel;
    auto digest = Sha256File(full);
    if (!digest.ok()) return digest.error();
    struct stat st;
    int64_t size = stat(full.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
    fp.files.push_back({rel, *digest, size});
  }
  std::sort(fp.files.begin(), fp.files.end(),
            [](const ArtifactFile& a, const ArtifactFile& b) { return a.path < b.path; });
  fp.digest = FingerprintOf(fp.files);
  return fp;
}

}  // namespace rsl::model
