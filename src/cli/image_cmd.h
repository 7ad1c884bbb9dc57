// seedctl image inspect, ls and prune (docs/image.md): resolve an image reference against its
// registry and show the manifest it names for linux/amd64. Functions print to stdout/stderr and end
// a failing command by throwing Exit (cli.h).
#pragma once

#include <string>
#include <vector>

namespace rsl::cli {

struct ImageInspectFlags {
  std::string ref;
  std::string output;                            //!< "" (summary and layers) | json
  std::vector<std::string> insecure_registries;  //!< reached over plain HTTP
  std::string platform = "linux/amd64";          //!< OS/ARCHITECTURE to pick from an index
  std::string username;
  bool password_stdin = false;  //!< read the password from the first line of stdin
};

//! Resolves flags.ref; exit 1 with IMAGE_REFERENCE_INVALID or IMAGE_NOT_FOUND.
void RunImageInspect(const ImageInspectFlags& flags);

struct ImageCacheFlags {
  std::string state_dir;      //!< the local backend's state directory (its image cache)
  std::string output;         //!< "" (table) | json
  bool all = false;           //!< prune: every bundle not in use
  long long keep_bytes = -1;  //!< prune: evict down to this many bytes
};

//! seedctl image ls: the unpacked bundles of the local backend's image cache.
void RunImageList(const ImageCacheFlags& flags);
//! seedctl image prune [--all | --keep-bytes N]: evicts least recently used bundles that
//! are not in use. Exit 1 with INVALID_ARGUMENT without exactly one of the two.
void RunImagePrune(const ImageCacheFlags& flags);

}  // namespace rsl::cli
