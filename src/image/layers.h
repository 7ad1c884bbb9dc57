// An image's files read from its layers without unpacking or running it: each layer (a tar,
// plain, gzip'd or zstd-compressed) is applied over the ones below it with the OCI whiteout rules,
// keeping only the files a caller asks for (package metadata, say), so memory holds the compressed
// layer and the kept files, never the image.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl::image {

inline constexpr char kOciLayerTar[] = "application/vnd.oci.image.layer.v1.tar";
inline constexpr char kOciLayerGzip[] = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr char kDockerLayerGzip[] = "application/vnd.docker.image.rootfs.diff.tar.gzip";
inline constexpr char kOciLayerZstd[] = "application/vnd.oci.image.layer.v1.tar+zstd";

//! What a file kept from the layers is: its bytes, or a symbolic link's target.
struct LayerFile {
  std::string content;
  bool symlink = false;
};

//! Paths relative to the image's root ("usr/lib/python3/dist-packages/x.dist-info/METADATA":
//! no leading "/" or "./") -> the file as the topmost layer that has it left it.
using LayerFiles = std::map<std::string, LayerFile>;

//! Which paths to keep (regular files and symbolic links; directories are implied).
using WantFile = std::function<bool(const std::string& path)>;

//! Applies one layer `blob` of `media_type` (tar, gzip'd tar or zstd-compressed tar, OCI or
//! Docker; gzip and zstd are also recognised by their magic bytes) over `files`, which holds the
//! layers below it:
//!  - `.wh..wh..opq` in a directory removes what the lower layers had below it;
//!  - `.wh.NAME` removes NAME (a file, or a directory and everything below it);
//!  - a kept path written again replaces the lower layer's file.
//! Whiteouts act on the lower layers only, whatever their place in the tar.
//! Errors: IMAGE_NOT_FOUND naming the layer for a truncated or corrupt tar, gzip or zstd
//! stream, or a kept file above kMaxKeptFileBytes.
Status ApplyLayer(std::string_view blob, const std::string& media_type, const WantFile& want,
                  LayerFiles* files);

//! A kept file larger than this is refused (metadata files are kilobytes).
inline constexpr size_t kMaxKeptFileBytes = 64 << 20;

//! The package metadata an image's contents are checked against: Python distributions in
//! */site-packages and */dist-packages (NAME.dist-info/METADATA, NAME.egg-info/PKG-INFO, an
//! egg-info file), dpkg's var/lib/dpkg/status, and the interpreters usr/local/bin/python3,
//! usr/bin/python3, opt/conda/bin/python.
bool IsPackageMetadata(const std::string& path);

}  // namespace rsl::image
