// The web console's files. They are public: they hold no data, and every call the console
// makes for data carries the signed-in token like any other API client.
#include "api/routes.h"
#include "api/ui_assets.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api::routes {

namespace {

// The headers of every /ui/ answer: what the page may load and run, and no MIME sniffing.
void SecurityHeaders(HttpResponse& res) {
  res.SetHeader("Content-Security-Policy", kUiContentSecurityPolicy);
  res.SetHeader("X-Content-Type-Options", "nosniff");
  res.SetHeader("Referrer-Policy", "no-referrer");
  res.SetHeader("X-Frame-Options", "DENY");
}

}  // namespace

Result<Reply> UiRedirect(const Services&, RequestContext& c) {
  SecurityHeaders(c.res);
  c.res.SetHeader("Location", "/ui/");
  Reply r;
  r.status = 301;
  r.text = "see /ui/\n";
  r.content_type = "text/plain; charset=utf-8";
  return r;
}

Result<Reply> UiFile(const Services&, RequestContext& c) {
  std::string file = c.PathParam("file");
  const UiAsset* asset = FindUiAsset(file);
  if (!asset) {
    return Error(codes::kNotFound, "no console file " + Quote(file))
        .Value(file)
        .Hint("the console starts at /ui/");
  }
  SecurityHeaders(c.res);
  // Revalidated on every load (file names carry no hash), answered 304 while unchanged.
  std::string etag = UiAssetEtag(*asset);
  c.res.SetHeader("Cache-Control", "no-cache");
  c.res.SetHeader("ETag", etag);
  Reply r;
  r.content_type = asset->content_type;
  if (c.req.Header("If-None-Match") == etag) {
    r.status = 304;
    return r;
  }
  r.text.assign(reinterpret_cast<const char*>(asset->data), asset->size);
  return r;
}

}  // namespace rsl::api::routes
