#include "model/image_inspect.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "image/layers.h"

namespace rsl::model {
namespace {

std::string HexOf(const std::string& digest) {
  size_t colon = digest.find(':');
  return colon == std::string::npos ? digest : digest.substr(colon + 1);
}

// The cache's paths become the image's own: "<root>/usr/lib/..." -> "/usr/lib/...".
std::string InImage(const std::string& root, const std::string& path) {
  return StartsWith(path, root + "/") ? path.substr(root.size()) : path;
}

Status WriteTree(const image::LayerFiles& files, const std::string& root) {
  for (const auto& [path, f] : files) {
    std::string full = root + "/" + path;
    size_t slash = full.rfind('/');
    RSL_RETURN_IF_ERROR(MakeDirs(full.substr(0, slash)));
    // An interpreter is only looked for; a link's target may be outside the kept files.
    RSL_RETURN_IF_ERROR(WriteFileAtomic(full, f.symlink ? std::string() : f.content));
  }
  return Status::Ok();
}

}  // namespace

Result<Inspection> InspectImage(image::RegistryClient* client, const image::ResolvedImage& resolved,
                                const std::string& cache_dir) {
  std::string hex = HexOf(resolved.digest);
  std::string root;
  std::string scratch;  // removed at the end when nothing is cached
  if (!cache_dir.empty()) root = cache_dir + "/" + hex;
  if (root.empty() || !IsDirectory(root)) {
    image::LayerFiles files;
    for (size_t i = 0; i < resolved.layers.size(); ++i) {
      const auto& layer = resolved.layers[i];
      auto blob = client->FetchBlob(resolved.reference, layer.digest);
      if (!blob.ok()) return blob.error();
      Status applied = image::ApplyLayer(*blob, layer.media_type, image::IsPackageMetadata, &files);
      if (!applied.ok()) {
        Error e = applied.error();
        e.message = "image " + Quote(resolved.reference.ToString()) + ", layer " +
                    std::to_string(i + 1) + " (" + layer.digest + "): " + e.message;
        return e.Value(resolved.reference.ToString());
      }
    }
    std::string base = cache_dir.empty()
                           ? (std::getenv("TMPDIR") != nullptr ? std::string(std::getenv("TMPDIR"))
                                                               : std::string("/tmp"))
                           : cache_dir;
    std::string tmp = base + "/.tmp-" + hex + "-" + std::to_string(getpid());
    RSL_RETURN_IF_ERROR(RemoveAll(tmp));
    RSL_RETURN_IF_ERROR(MakeDirs(tmp));
    Status written = WriteTree(files, tmp);
    if (!written.ok()) {
      (void)RemoveAll(tmp);
      return written;
    }
    if (root.empty()) {
      root = tmp;
      scratch = tmp;
    } else if (std::rename(tmp.c_str(), root.c_str()) != 0) {
      // Another admission cached the same digest first: theirs is as good.
      (void)RemoveAll(tmp);
      if (!IsDirectory(root)) {
        return Error(codes::kIoError,
                     "cannot cache image metadata at " + root + ": " + std::strerror(errno))
            .Path(root);
      }
    }
  }
  auto ins = InspectRoot(root);
  if (!scratch.empty()) (void)RemoveAll(scratch);
  if (!ins.ok()) return ins.error();
  for (auto& p : ins->packages) p.location = InImage(root, p.location);
  for (auto& d : ins->search_path) d = InImage(root, d);
  ins->interpreter = InImage(root, ins->interpreter);
  return ins;
}

}  // namespace rsl::model
