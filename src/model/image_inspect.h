// What a registry image contains, read from its layers without running it: the package
// metadata (image::IsPackageMetadata) of every layer, whiteouts applied, written as a small
// root file system and scanned like a registered root environment (InspectRoot).
#pragma once

#include <string>

#include "base/status.h"
#include "image/registry.h"
#include "model/env_inspect.h"

namespace rsl::model {

//! Inspects `resolved` (RegistryClient::Resolve's answer): fetches each layer (checked against
//! its digest) and keeps its package metadata. With a `cache_dir`, the metadata tree is kept at
//! <cache_dir>/<manifest digest hex> (written whole, then renamed into place) and a later call
//! for the same digest reads no layer; "" keeps nothing. Paths in the result (locations,
//! search path, interpreter) are the image's own ("/usr/lib/python3/dist-packages/...").
//! Errors: IMAGE_NOT_FOUND (a layer the registry cannot serve or that cannot be read),
//! IO_ERROR (the cache).
Result<Inspection> InspectImage(image::RegistryClient* client, const image::ResolvedImage& resolved,
                                const std::string& cache_dir);

}  // namespace rsl::model
