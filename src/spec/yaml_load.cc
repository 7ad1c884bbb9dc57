#include "spec/yaml_load.h"

#include "base/codes.h"
#include "spec/parse_text.h"
#include "spec/yaml_merge.h"

namespace rsl::spec {

Result<YAML::Node> LoadYaml(const std::string& text, const std::string& file) {
  try {
    YAML::Node root = YAML::Load(text);
    Errors errors = ResolveYaml(root, file);
    if (!errors.empty()) return errors.front();
    return root;
  } catch (const YAML::Exception& e) {
    if (auto tab = TabIndentError(text, e.mark.line + 1, file)) return *tab;
    return Error(codes::kSpecParseError, e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1});
  }
}

}  // namespace rsl::spec
