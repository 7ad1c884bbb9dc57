#include "spec/yaml_merge.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::spec {

namespace {

// One bad file should not produce a wall of errors; the first ones say what to fix.
constexpr size_t kMaxErrors = 50;

// `<<` written plainly (a quoted "<<" is an ordinary string key), or tagged as a merge.
bool IsMergeKey(const YAML::Node& key) {
  return key.IsScalar() && key.Scalar() == "<<" &&
         (key.Tag() == "?" || key.Tag() == "tag:yaml.org,2002:merge");
}

// Aliases make a node's own position the anchor's, so errors about a merged value are
// reported at the `<<` key and name the value's kind.
std::string Shown(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "the value " + Quote(node.Scalar());
  return "null";
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

class Resolver {
 public:
  Resolver(std::string file, Errors* errors) : file_(std::move(file)), errors_(errors) {}

  void Visit(const YAML::Node& node, const std::string& path) {
    if (over_budget_ || (!node.IsMap() && !node.IsSequence())) return;
    if (Find(node) != nullptr) return;
    seen_[node.Mark().pos].push_back({node, State::kInProgress});
    if (node.IsSequence()) {
      size_t i = 0;
      for (const auto& item : node) Visit(item, path + "[" + std::to_string(i++) + "]");
    } else {
      VisitMap(node, path);
    }
    *Find(node) = State::kDone;
  }

 private:
  enum class State { kInProgress, kDone };

  // yaml-cpp gives nodes no id, but each parsed node has a position and Node::is compares
  // identity: nodes are looked up by position, then by identity among the few there.
  State* Find(const YAML::Node& node) {
    auto it = seen_.find(node.Mark().pos);
    if (it == seen_.end()) return nullptr;
    for (auto& [seen, state] : it->second) {
      if (seen.is(node)) return &state;
    }
    return nullptr;
  }

  SourcePos Pos(const YAML::Node& node) const {
    return SourcePos{file_, node.Mark().line + 1, node.Mark().column + 1};
  }

  void Fail(const YAML::Node& at, const std::string& path, const std::string& message,
            const std::string& hint) {
    if (errors_->size() >= kMaxErrors) return;
    Error e(codes::kSpecParseError, message);
    e.At(Pos(at)).Path(path).Hint(hint);
    errors_->push_back(std::move(e));
  }

  void VisitMap(const YAML::Node& map, const std::string& path) {
    std::unordered_map<std::string, YAML::Mark> keys;
    YAML::Node merge_key;
    YAML::Node merge_value;
    bool has_merge = false;
    bool duplicate = false;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) continue;  // a collection as a key: never a field name
      const std::string& key = kv.first.Scalar();
      auto [it, fresh] = keys.emplace(key, kv.first.Mark());
      if (!fresh) {
        duplicate = true;
        Fail(kv.first, Child(path, key),
             "duplicate key " + Quote(key) + " (first at line " +
                 std::to_string(it->second.line + 1) + ":" + std::to_string(it->second.column + 1) +
                 ")",
             IsMergeKey(kv.first) ? "merge several mappings with one key: <<: [*a, *b]"
                                  : "keep one of the two; YAML would silently drop one");
        continue;
      }
      if (IsMergeKey(kv.first)) {
        merge_key = kv.first;
        merge_value = kv.second;
        has_merge = true;
      }
    }
    for (const auto& kv : map) {
      if (kv.first.IsScalar()) Visit(kv.second, Child(path, kv.first.Scalar()));
    }
    if (has_merge && !duplicate) Merge(map, path, merge_key, merge_value);
  }

  // Applies `map`'s `<<: value`: the merged mappings' pairs whose keys the map does not write
  // itself are appended, earlier mappings first; the `<<` pair is removed.
  void Merge(YAML::Node map, const std::string& path, const YAML::Node& merge_key,
             const YAML::Node& value) {
    const std::string where = Child(path, "<<");
    const std::string hint = "write <<: *anchor or <<: [*a, *b], each naming a mapping";
    std::vector<YAML::Node> sources;
    if (value.IsMap()) {
      sources.push_back(value);
    } else if (value.IsSequence()) {
      for (const auto& item : value) {
        if (!item.IsMap()) {
          return Fail(merge_key, where, "a merge key (<<) lists " + Shown(item) + ", not a mapping",
                      hint);
        }
        sources.push_back(item);
      }
    } else {
      return Fail(merge_key, where,
                  "a merge key (<<) needs a mapping or a list of mappings, not " + Shown(value),
                  hint);
    }
    for (const auto& source : sources) {
      if (*Find(source) == State::kInProgress) {
        return Fail(merge_key, where, "a merge key (<<) names a mapping that contains it",
                    "merge a mapping defined outside this one");
      }
    }
    std::unordered_set<std::string> present;
    for (const auto& kv : map) {
      if (kv.first.IsScalar() && !IsMergeKey(kv.first)) present.insert(kv.first.Scalar());
    }
    std::vector<std::pair<YAML::Node, YAML::Node>> merged;
    for (const auto& source : sources) {
      for (const auto& kv : source) {
        if (kv.first.IsScalar() && !present.insert(kv.first.Scalar()).second) continue;
        if (++merged_pairs_ > kMaxMergedPairs) {
          over_budget_ = true;
          return Fail(
              merge_key, where,
              "merge keys (<<) expand to more than " + std::to_string(kMaxMergedPairs) + " fields",
              "write the workload with fewer merges of large mappings");
        }
        merged.emplace_back(kv.first, kv.second);
      }
    }
    map.remove(merge_key);
    for (auto& [k, v] : merged) map.force_insert(k, v);
  }

  std::string file_;
  Errors* errors_;
  size_t merged_pairs_ = 0;
  bool over_budget_ = false;  // one error says so; the rest of the walk is skipped
  std::unordered_map<int, std::vector<std::pair<YAML::Node, State>>> seen_;
};

}  // namespace

Errors ResolveYaml(YAML::Node root, const std::string& file) {
  Errors errors;
  Resolver(file, &errors).Visit(root, "");
  return errors;
}

}  // namespace rsl::spec
