// The image cache of the local backend: each manifest digest pulled once (skopeo copy to an OCI
// layout) and unpacked once (umoci unpack) into a runtime bundle under
// <state-dir>/images/bundles/<hex>/ (rootfs/, umoci's config.json, image.json, in-use),
// atomically (unpacked in a temporary directory, then renamed) and under one lock per cache
// (two attempts wanting one digest: one pull). The cache keeps to a size bound by evicting
// the least recently used bundles that are not in use: a bundle is in use while someone holds
// a shared flock on its `in-use` file (the local backend from Ensure until the attempt's exit
// is reported, rsl-shim while the attempt runs), and eviction takes that file's exclusive
// lock without waiting.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::image {

struct CachedImage {
  std::string digest;     //!< the manifest digest, "sha256:<hex>"
  std::string reference;  //!< what it was pulled by: registry/repository@digest
  std::string dir;        //!< the bundle directory
  std::string rootfs;     //!< dir + "/rootfs"
  int64_t bytes = 0;      //!< the unpacked size (regular files under rootfs)
  int64_t last_used_ms = 0;
  bool in_use = false;
  //! From the image's config (umoci's runtime config): environment, working directory, user.
  std::vector<std::string> env;
  std::string cwd;
  int64_t uid = 0, gid = 0;
  //! The in-use file's descriptor holding a shared lock (Ensure only); the caller closes it
  //! when the attempt has ended (and not before it has been handed on).
  int in_use_fd = -1;
};

struct PruneResult {
  std::vector<CachedImage> removed;
  int64_t freed_bytes = 0;
  int64_t kept_bytes = 0;
};

class BundleCache {
 public:
  //! The default size bound: 10 GiB (RSL_IMAGE_CACHE_BYTES overrides it for the backend).
  static constexpr int64_t kDefaultMaxBytes = int64_t(10) << 30;

  //! `state_dir`: the local backend's state directory; the cache is state_dir/images/bundles.
  BundleCache(std::string state_dir, int64_t max_bytes = kDefaultMaxBytes);

  const std::string& dir() const { return dir_; }

  //! The bundle of `pinned` (registry/repository@sha256:...), pulled and unpacked when it is
  //! not cached yet, marked used now and locked in use (see CachedImage::in_use_fd); then
  //! bundles beyond the size bound are evicted. `plain_http`: the registry is reached without
  //! TLS (loopback or marked insecure). IMAGE_PULL_FAILED with skopeo's or umoci's answer.
  Result<CachedImage> Ensure(const std::string& pinned, const std::string& digest, bool plain_http);

  //! Every cached bundle, least recently used first.
  Result<std::vector<CachedImage>> List() const;

  //! Evicts least recently used bundles that are not in use until at most `keep_bytes`
  //! remain (0: all that are not in use).
  Result<PruneResult> Prune(int64_t keep_bytes);

 private:
  Result<PruneResult> PruneLocked(int64_t keep_bytes, const std::string& keep_digest);
  std::string dir_;
  int64_t max_bytes_;
};

}  // namespace rsl::image
