#include "api/ui_assets.h"

#include "base/sha256.h"

namespace rsl::api {

const UiAsset* FindUiAsset(std::string_view path) {
  if (path.empty()) path = "index.html";
  for (const UiAsset& a : UiAssets()) {
    if (path == a.path) return &a;
  }
  return nullptr;
}

std::string UiAssetEtag(const UiAsset& asset) {
  std::string bytes(reinterpret_cast<const char*>(asset.data), asset.size);
  return "\"" + Sha256Hex(bytes).substr(0, 16) + "\"";
}

}  // namespace rsl::api
