// The rules the console's files must keep (no inline code, data as text only); their routes
// are tested through the real server in server_test.cc.
#include <gtest/gtest.h>

#include <regex>

#include "api/ui_assets.h"

namespace rsl::api {
namespace {

// What the CSP enforces in the browser, checked on the files: no inline script or style, no
// event-handler attributes, no eval, and data is never parsed as HTML.
TEST(UiAssetsTest, HoldNoInlineCodeAndNeverParseDataAsHtml) {
  ASSERT_NE(FindUiAsset(""), nullptr);
  ASSERT_NE(FindUiAsset("app.js"), nullptr);
  for (const UiAsset& a : UiAssets()) {
    std::string text(reinterpret_cast<const char*>(a.data), a.size);
    std::string path = a.path;
    if (path.size() > 5 && path.substr(path.size() - 5) == ".html") {
      EXPECT_FALSE(std::regex_search(text, std::regex("<script(?![^>]*\\bsrc=)[^>]*>")))
          << path << ": an inline script";
      EXPECT_EQ(text.find("<style"), std::string::npos) << path;
      EXPECT_FALSE(std::regex_search(text, std::regex("\\sstyle=|\\son[a-z]+=", std::regex::icase)))
          << path << ": an inline style or event handler";
    }
    if (path.size() > 3 && path.substr(path.size() - 3) == ".js") {
      for (const char* banned :
           {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
            "new Function", "setAttribute('style'", ".style.cssText", "localStorage"}) {
        EXPECT_EQ(text.find(banned), std::string::npos) << path << " uses " << banned;
      }
    }
  }
}

}  // namespace
}  // namespace rsl::api
