// The web console's files (ui/ at the repository root), compiled into the controller by
// src/api/embed_ui.cmake, and the headers they are served with (routes_ui.cc).
//
// The console runs under a strict Content-Security-Policy: scripts and styles only from
// /ui/ itself (no inline script or style, no eval), connections only to the controller,
// nothing framed, no forms posted anywhere. Everything it shows is set as text, never as HTML.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rsl::api {

//! One file of ui/, e.g. {"app.js", "text/javascript; charset=utf-8", ...}.
struct UiAsset {
  const char* path;  //!< relative to ui/, '/'-separated
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

//! Every embedded file, sorted by path (generated).
const std::vector<UiAsset>& UiAssets();

//! The file at `path` (relative to ui/; "" = index.html), nullptr when there is none.
const UiAsset* FindUiAsset(std::string_view path);

//! A strong validator of an asset's bytes ("\"<16 hex>\"").
std::string UiAssetEtag(const UiAsset& asset);

//! The Content-Security-Policy of every /ui/ answer.
inline constexpr char kUiContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace rsl::api
