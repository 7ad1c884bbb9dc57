#include "data/quality.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/env.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace rsl::data {

using schema::Kind;

namespace {

//! Records up to this far in the future pass freshness as "0s old": the clocks of the writer
//! and of this host may disagree by that much. Beyond it the data (or its declared unit) is
//! wrong.
constexpr int64_t kClockSkewMs = 5 * 60 * 1000;

std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string FormatBytes(int64_t b) {
  char buf[32];
  if (b < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (b < (1 << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (b < (1ll << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

//! The default unique key: the first field named `id` or ending in `_id`.
std::string DefaultKey(const schema::Schema& s) {
  for (const auto& f : s.record().fields) {
    if (f.name == "id" || EndsWith(f.name, "_id")) return f.name;
  }
  return "";
}

struct FileWork {
  ObjectInfo info;
  std::shared_ptr<const Blob> blob;
  std::unique_ptr<FileReader> reader;
  Binding binding;
  std::string sha256;
};

struct Task {
  int file = -1;   //!< index into files
  int chunk = -1;  //!< -1: the file's checksum
};

// Runs `tasks` over `threads` workers; stops handing out work once `stop` is set.
template <typename Fn>
void RunPool(size_t tasks, int threads, std::atomic<bool>* stop, Fn fn) {
  std::atomic<size_t> next{0};
  auto work = [&](int worker) {
    for (size_t i; !stop->load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < tasks;) {
      fn(worker, i);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) pool.emplace_back(work, t);
  work(0);
  for (auto& t : pool) t.join();
}

class Validator {
 public:
  Validator(Catalog* catalog, const ValidateOptions& opt) : catalog_(catalog), opt_(opt) {
    threads_ = opt.threads > 0 ? opt.threads
                               : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    now_ms_ = (opt.env ? opt.env : Env::Default())->NowMs();
  }

  ValidationReport Run(const spec::DataInput& input, bool profile_only) {
    auto t0 = std::chrono::steady_clock::now();
    report_.uri = input.uri;
    input_ = &input;
    profile_ = profile_only;
    Status st = Existence();
    if (st.ok()) st = Schema();
    if (st.ok()) st = Scan();
    if (st.ok()) st = Constraints();
    if (st.ok()) st = Completeness();
    if (st.ok()) st = Uniqueness();
    if (st.ok()) st = Freshness();
    static const char* kChecks[] = {"existence",    "schema",     "constraints",
                                    "completeness", "uniqueness", "freshness"};
    for (const char* name : kChecks) {
      bool present = false;
      for (const auto& c : report_.checks) present = present || c.name == name;
      if (!present) report_.checks.push_back({name, "skipped", "", "an earlier check failed"});
    }
    if (!st.ok()) {
      report_.status = st;
    }
    report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(report_);
  }

 private:
  //! `field` of the input block, with the block's path in front.
  std::string InputPath(const std::string& field) const {
    return opt_.input_path.empty() ? field : opt_.input_path + "." + field;
  }

  Status Fail(const std::string& check, Error e) {
    report_.checks.push_back({check, "failed", e.code, e.ToString()});
    return e;
  }
  void Pass(const std::string& check, const std::string& message) {
    report_.checks.push_back({check, "ok", "", message});
  }

  Status Existence() {
    auto storage = OpenStorage(input_->uri, catalog_);
    if (!storage.ok()) {
      Error e = storage.error();
      if (e.code == codes::kInvalidArgument) e.code = codes::kDataSourceNotFound;
      return Fail("existence", e.Path(InputPath("uri")));
    }
    storage_ = std::move(*storage);
    auto listed = storage_->List(input_->uri);
    if (!listed.ok()) return Fail("existence", listed.error().Path(InputPath("uri")));
    if (listed->empty()) {
      return Fail("existence",
                  Error(codes::kDataSourceNotFound, "no data files under " + input_->uri)
                      .Path(InputPath("uri"))
                      .Value(input_->uri)
                      .Hint("names starting with '_' or '.' are skipped"));
    }
    for (auto& info : *listed) {
      FileWork f;
      f.info = std::move(info);
      report_.bytes += f.info.size;
      files_.push_back(std::move(f));
    }
    report_.files = static_cast<int64_t>(files_.size());
    Pass("existence", std::to_string(files_.size()) + " file" + (files_.size() == 1 ? "" : "s") +
                          ", " + FormatBytes(report_.bytes));
    return Status::Ok();
  }

  Status Schema() {
    // Read and open every file (headers and footers are small; local files are mapped).
    std::vector<Status> errs(files_.size());
    std::atomic<bool> stop{false};
    RunPool(files_.size(), threads_, &stop, [&](int, size_t i) {
      FileWork& f = files_[i];
      auto blob = storage_->ReadAll(f.info.uri);
      if (!blob.ok()) {
        errs[i] = blob.status();
        stop = true;
        return;
      }
      f.blob = *blob;
      if (f.blob->data().empty()) return;  // no records; see NoRecords()
      auto format = DetectFormat(input_->format, f.info.uri, f.blob->data());
      if (!format.ok()) {
        errs[i] = format.status();
        stop = true;
        return;
      }
      auto reader = OpenReader(*format, f.blob, f.info.uri, opt_.read);
      if (!reader.ok()) {
        errs[i] = reader.status();
        stop = true;
        return;
      }
      f.reader = std::move(*reader);
      if (i == 0) report_.format = FormatName(*format);
    });
    for (auto& e : errs) {
      if (!e.ok()) {
        std::string check =
            e.code() == codes::kDataSourceNotFound || e.code() == codes::kDataSourceUnreachable
                ? "existence"
                : "schema";
        if (check == "existence") report_.checks.clear();
        return Fail(check, e.error());
      }
    }
    if (report_.format.empty() && !files_.empty()) {
      auto f = DetectFormat(input_->format, files_[0].info.uri, files_[0].blob->data());
      if (f.ok()) report_.format = FormatName(*f);
    }
    const FileWork* first = nullptr;
    for (const auto& f : files_) {
      if (f.reader && first == nullptr) first = &f;
    }
    if (first == nullptr) return NoRecords();
    if (input_->schema) {
      reader_schema_ = *input_->schema;
    } else {
      reader_schema_ = first->reader->writer_schema();
    }
    std::string key = input_->quality.unique_key.value_or("");
    if (key.empty() && input_->quality.uniqueness) key = DefaultKey(reader_schema_);
    plan_ = std::make_unique<Plan>();
    BuildPlan(reader_schema_, key, plan_.get());
    if (plan_->key_field >= static_cast<int>(plan_->top_level) &&
        key.find_first_of("[{") != std::string::npos) {
      return Fail("schema", Error(codes::kDataSchemaMismatch,
                                  "uniqueKey " + Quote(key) + " is inside a list or map")
                                .Path(InputPath("quality.uniqueKey"))
                                .Value(key)
                                .Hint("a key is one value per row: a top-level field or a "
                                      "record field such as `a.b`"));
    }
    if (input_->quality.uniqueness && plan_->key_field < 0) {
      std::vector<std::string> names;
      for (size_t f = 0; f < plan_->top_level; f++) names.push_back(plan_->fields[f].name);
      for (const auto& p : NestedPaths(reader_schema_)) names.push_back(p);
      std::string close = ClosestMatch(key, names);
      return Fail("schema",
                  Error(codes::kDataSchemaMismatch,
                        key.empty() ? "uniqueness needs a key: no uniqueKey and no field named "
                                      "`id` or ending in `_id`"
                                    : "uniqueKey " + Quote(key) + " is not a declared field")
                      .Path(InputPath("quality.uniqueKey"))
                      .Hint(close.empty() ? "set quality.uniqueKey to a declared field"
                                          : "did you mean " + Quote(close) + "?"));
    }
    report_.unique_key = plan_->key_field >= 0 ? plan_->fields[plan_->key_field].name : "";
    std::vector<std::string> ignored;
    for (auto& f : files_) {
      if (!f.reader) continue;
      auto b = f.reader->Bind(plan_.get());
      if (!b.ok()) {
        Error e = b.error();
        e.message += " (in " + f.info.relative + ")";
        return Fail("schema", e);
      }
      f.binding = std::move(*b);
      if (plan_->fields.size() > plan_->top_level && !f.reader->ReadsNestedPaths()) {
        std::vector<std::string> paths;
        for (size_t k = plan_->top_level; k < plan_->fields.size(); k++)
          paths.push_back(plan_->fields[k].name);
        report_.notes.push_back("nested paths (" + Join(paths, ", ") +
                                ") are checked in Parquet files only: not in " + f.info.relative);
      }
      for (const auto& name : f.binding.ignored) {
        if (std::find(ignored.begin(), ignored.end(), name) == ignored.end())
          ignored.push_back(name);
      }
    }
    std::string msg = report_.format + ": writer schema resolves against the " +
                      std::string(input_->schema ? "declared" : "data's own") + " schema";
    if (!ignored.empty()) {
      report_.notes.push_back("fields in the data but not declared (ignored): " +
                              Join(ignored, ", "));
      msg += " (extra fields ignored: " + Join(ignored, ", ") + ")";
    }
    Pass("schema", msg);
    return Status::Ok();
  }

  Status Scan() {
    std::vector<Task> tasks;
    for (size_t i = 0; i < files_.size(); i++) {
      if (opt_.checksum) tasks.push_back({static_cast<int>(i), -1});
      if (!files_[i].reader) continue;
      for (size_t c = 0; c < files_[i].reader->chunks(); c++) {
        tasks.push_back({static_cast<int>(i), static_cast<int>(c)});
      }
    }
    // Largest work first would balance better; chunks are already of similar size.
    const bool string_key =
        plan_->key_field >= 0 && plan_->fields[plan_->key_field].kind == ValueKind::kString;
    distinct_ = std::make_unique<DistinctCounter>(string_key, opt_.distinct_budget, opt_.spill_dir);
    std::vector<KeyCollector*> collectors;
    for (int t = 0; t < threads_; t++) collectors.push_back(distinct_->NewCollector());
    sinks_.resize(tasks.size());
    std::vector<Status> errs(tasks.size());
    std::atomic<bool> stop{false};
    RunPool(tasks.size(), threads_, &stop, [&](int worker, size_t i) {
      const Task& t = tasks[i];
      FileWork& f = files_[t.file];
      if (t.chunk < 0) {
        f.sha256 = Sha256Hex(f.blob->data());
        return;
      }
      sinks_[i] = std::make_unique<ChunkSink>(plan_.get(), collectors[worker]);
      Status st = f.reader->ReadChunk(t.chunk, sinks_[i].get());
      if (!st.ok()) {
        errs[i] = st;
        stop = true;
      }
      if (sinks_[i]->failed()) stop = true;
    });
    for (auto& e : errs) {
      if (!e.ok()) return Fail("schema", e.error());
    }
    for (auto& f : files_) {
      if (!f.reader || stop) continue;  // stopped early: not every chunk was read
      Status st = f.reader->Finish();
      if (!st.ok()) {
        Error e = st.error();
        e.message += " (in " + f.info.relative + ")";
        return Fail("schema", e);
      }
    }
    // Merge chunk statistics in file/chunk order so "first" means first in the data.
    stats_.assign(plan_->fields.size(), FieldStats{});
    int64_t file_row = 0;
    int last_file = -1;
    for (size_t i = 0; i < tasks.size(); i++) {
      if (tasks[i].chunk < 0 || !sinks_[i]) continue;
      if (tasks[i].file != last_file) {
        last_file = tasks[i].file;
        file_row = 0;
      }
      const ChunkSink& s = *sinks_[i];
      const std::string& file = files_[tasks[i].file].info.relative;
      for (size_t f = 0; f < stats_.size(); f++) {
        MergeStats(s.stats[f], file, file_row, &stats_[f]);
      }
      for (size_t d = 0; d < files_[tasks[i].file].binding.defaulted.size(); d++) {
        int f = files_[tasks[i].file].binding.defaulted[d];
        if (files_[tasks[i].file].binding.default_is_null[d])
          stats_[f].nulls += s.rows;
        else
          stats_[f].values += s.rows;
      }
      file_row += s.rows;
      report_.rows += s.rows;
    }
    // A value that does not fit its declared type is a schema failure.
    for (size_t f = 0; f < stats_.size(); f++) {
      const Violation& v = stats_[f].type_error;
      if (v.count == 0) continue;
      return Fail("schema",
                  Error(codes::kDataSchemaMismatch,
                        Quote(v.value) + " at " + v.detail.substr(v.detail.find('|') + 1) +
                            " is not " + v.detail.substr(0, v.detail.find('|')) + " (declared " +
                            plan_->fields[f].type->ToString() + ")")
                      .Path(plan_->fields[f].name)
                      .Value(v.value));
    }
    BuildDescriptor();
    FillFields();
    if (report_.rows == 0) return NoRecords();
    return Status::Ok();
  }

  // An empty data set (no file holds a record) is one failure: existence, whichever check
  // noticed it. Empty files beside files with records are fine.
  Status NoRecords() {
    Error e = Error(codes::kDataSourceNotFound, "no records in " + std::to_string(files_.size()) +
                                                    " file" + (files_.size() == 1 ? "" : "s") +
                                                    " under " + input_->uri)
                  .Path(InputPath("uri"))
                  .Value(input_->uri)
                  .Hint("a data set needs at least one record");
    report_.checks.clear();
    return Fail("existence", e);
  }

  // Adds chunk stats `s` (rows local to the chunk) to `out`; violation rows become
  // "<file> row <n>" (1-based within the file).
  static void MergeStats(const FieldStats& s, const std::string& file, int64_t file_row,
                         FieldStats* out) {
    out->nulls += s.nulls;
    out->values += s.values;
    out->min = std::min(out->min, s.min);
    out->max = std::max(out->max, s.max);
    out->imin = std::min(out->imin, s.imin);
    out->imax = std::max(out->imax, s.imax);
    out->min_len = std::min(out->min_len, s.min_len);
    out->max_len = std::max(out->max_len, s.max_len);
    out->max_ts = std::max(out->max_ts, s.max_ts);
    auto merge = [&](const Violation& v, Violation* o, bool type) {
      if (v.count == 0) return;
      if (o->count == 0) {
        o->row = file_row + v.row;
        o->value = v.value;
        std::string where = file + " row " + std::to_string(file_row + v.row + 1);
        o->detail = type ? v.detail + "|" + where : where;
      }
      o->count += v.count;
    };
    merge(s.constraint, &out->constraint, false);
    merge(s.type_error, &out->type_error, true);
  }

  void FillFields() {
    for (size_t f = 0; f < stats_.size(); f++) {
      const FieldPlan& p = plan_->fields[f];
      const FieldStats& s = stats_[f];
      FieldReport r;
      r.name = p.name;
      r.type = p.type->ToString();
      r.nulls = s.nulls;
      r.values = s.values;
      if ((p.kind == ValueKind::kInt || p.kind == ValueKind::kDouble) && s.values > 0 &&
          s.min <= s.max) {
        r.min = s.min;
        r.max = s.max;
        if (p.kind == ValueKind::kInt && s.imin <= s.imax) {
          r.min_int = s.imin;
          r.max_int = s.imax;
        }
      }
      if (p.kind == ValueKind::kString && s.values > 0) {
        r.min_len = s.min_len;
        r.max_len = s.max_len;
      }
      r.violations = s.constraint.count;
      if (s.constraint.count > 0)
        r.first_violation = Quote(s.constraint.value) + " at " + s.constraint.detail;
      report_.fields.push_back(std::move(r));
    }
  }

  void BuildDescriptor() {
    DataDescriptor& d = report_.descriptor;
    d.uri = input_->uri;
    d.schema = reader_schema_.ToJson();
    d.schema_fingerprint = "sha256:" + Sha256Hex(d.schema);
    d.format = report_.format;
    d.files = report_.files;
    d.rows = report_.rows;
    d.bytes = report_.bytes;
    if (!opt_.checksum) return;
    Sha256 h;
    for (const auto& f : files_) {
      h.Update(f.info.relative + " " + std::to_string(f.info.size) + " " + f.sha256 + "\n");
    }
    d.checksum = "sha256:" + h.HexDigest();
    d.version = Sha256Hex(d.schema + "\n" + d.checksum).substr(0, 16);
  }

  Status Constraints() {
    if (profile_) {
      Pass("constraints", "not checked (profile)");
      return Status::Ok();
    }
    int checked = 0;
    for (size_t f = 0; f < stats_.size(); f++) {
      const FieldPlan& p = plan_->fields[f];
      if (p.enum_set.empty() && !p.has_min && !p.has_max && p.array_size == 0) continue;
      if (p.parent >= 0 && stats_[f].values + stats_[f].nulls == 0) continue;  // never read
      checked++;
      const Violation& v = stats_[f].constraint;
      if (v.count == 0) continue;
      std::string what;
      if (!p.enum_set.empty()) {
        std::vector<std::string> shown(
            p.enum_values.begin(),
            p.enum_values.begin() + std::min<size_t>(p.enum_values.size(), 8));
        what = "not in enum [" + Join(shown, ", ") + (p.enum_values.size() > 8 ? ", ...]" : "]");
      } else if (p.array_size > 0 && !p.has_min && !p.has_max) {
        what = "not of " + std::to_string(p.array_size) + " items";
      } else {
        const bool ints = p.kind == ValueKind::kInt;  // bounds exact, not as doubles
        what = "outside [" +
               (!p.has_min ? std::string("-inf")
                : ints     ? std::to_string(p.imin)
                           : FormatNumber(p.min)) +
               ", " +
               (!p.has_max ? std::string("inf")
                : ints     ? std::to_string(p.imax)
                           : FormatNumber(p.max)) +
               "]";
      }
      int64_t total = stats_[f].values;
      return Fail("constraints",
                  Error(codes::kDataConstraintViolation,
                        std::to_string(v.count) + " of " + std::to_string(total) + " values " +
                            what + " (first " + Quote(v.value) + " at " + v.detail + ")")
                      .Path(p.name)
                      .Value(v.value));
    }
    Pass("constraints", checked == 0 ? "no constraints declared"
                                     : std::to_string(checked) + " constrained field" +
                                           (checked == 1 ? "" : "s") + " within bounds");
    return Status::Ok();
  }

  // Values a field could have: one per row for a top-level field; for a nested path one per
  // row outside lists, one per item inside them (values and nulls the reader saw).
  int64_t Slots(size_t f) const {
    if (plan_->fields[f].parent < 0) return report_.rows;
    return stats_[f].values + stats_[f].nulls;
  }

  Status Completeness() {
    // The field with the lowest non-null rate decides; its numbers are the message.
    int worst = -1;
    double worst_rate = 101;
    for (size_t f = 0; f < stats_.size(); f++) {
      if (Slots(f) == 0) continue;
      double rate =
          100.0 * static_cast<double>(Slots(f) - stats_[f].nulls) / static_cast<double>(Slots(f));
      if (rate < worst_rate) {
        worst_rate = rate;
        worst = static_cast<int>(f);
      }
    }
    if (!input_->quality.completeness || worst < 0) {
      Pass("completeness", worst < 0
                               ? "no fields"
                               : "not required (lowest non-null: " + plan_->fields[worst].name +
                                     " " + FormatPercents(worst_rate, 100).first + "%)");
      return Status::Ok();
    }
    double threshold = *input_->quality.completeness;
    // First failing field in declaration order, so the message is stable.
    for (size_t f = 0; f < stats_.size(); f++) {
      int64_t nulls = stats_[f].nulls;
      if (Slots(f) == 0) continue;
      double rate = 100.0 * static_cast<double>(Slots(f) - nulls) / static_cast<double>(Slots(f));
      if (rate >= threshold) continue;
      return Fail("completeness",
                  Error(codes::kDataCompleteness,
                        "non-null " + FormatPercents(rate, threshold).first + "% < " +
                            FormatPercents(rate, threshold).second + "% (" + std::to_string(nulls) +
                            " of " + std::to_string(Slots(f)) + " null)")
                      .Path(plan_->fields[f].name)
                      .Value(FormatPercents(rate, threshold).first));
    }
    Pass("completeness", "lowest non-null " + plan_->fields[worst].name + " " +
                             FormatPercents(worst_rate, threshold).first +
                             "% >= " + FormatPercents(worst_rate, threshold).second + "%");
    return Status::Ok();
  }

  Status Uniqueness() {
    if (plan_->key_field < 0) {
      Pass("uniqueness", "not required");
      return Status::Ok();
    }
    auto distinct = distinct_->Count(threads_);
    if (!distinct.ok()) return Fail("uniqueness", distinct.error());
    report_.distinct_keys = *distinct;
    double rate = 100.0 * static_cast<double>(*distinct) / static_cast<double>(report_.rows);
    const std::string& key = plan_->fields[plan_->key_field].name;
    std::string counts =
        std::to_string(*distinct) + " of " + std::to_string(report_.rows) + " distinct";
    if (!input_->quality.uniqueness) {
      Pass("uniqueness", key + ": " + counts + " (not required)");
      return Status::Ok();
    }
    double threshold = *input_->quality.uniqueness;
    if (rate < threshold) {
      return Fail("uniqueness",
                  Error(codes::kDataUniqueness,
                        "distinct " + FormatPercents(rate, threshold).first + "% < " +
                            FormatPercents(rate, threshold).second + "% (" + counts + ")")
                      .Path(key)
                      .Value(FormatPercents(rate, threshold).first));
    }
    Pass("uniqueness", key + ": distinct " + FormatPercents(rate, threshold).first +
                           "% >= " + FormatPercents(rate, threshold).second + "% (" + counts + ")");
    return Status::Ok();
  }

  Status Freshness() {
    const bool required = input_->quality.freshness_ms.has_value();
    std::string field;  // the error's path
    std::string what;   // "newest record" / "newest file modified"
    if (plan_->ts_field >= 0) {
      const FieldStats& ts = stats_[plan_->ts_field];
      field = plan_->fields[plan_->ts_field].name;
      report_.freshness_from = "field " + field;
      if (ts.values == 0) {
        // The file's mtime is no stand-in here: records that carry no time say nothing about
        // how old they are.
        if (!required) {
          Pass("freshness", field + ": no non-null value (not required)");
          return Status::Ok();
        }
        return Fail(
            "freshness",
            Error(codes::kDataFreshness, "no non-null value in " + std::to_string(report_.rows) +
                                             " records: the age of the data is unknown")
                .Path(field)
                .Hint("fill the timestamp field; data without a timestamp field is "
                      "judged by its newest file modification time"));
      }
      report_.newest_micros = ts.max_ts;
      what = "newest record ";
    } else {
      int64_t newest = 0;
      for (const auto& f : files_) newest = std::max(newest, f.info.mtime_ms);
      report_.newest_micros = newest * 1000;
      report_.freshness_from = "file mtime";
      field = InputPath("uri");
      what = "newest file modified ";
    }
    int64_t age_ms = now_ms_ - *report_.newest_micros / 1000;
    std::string newest = FormatTimestampMicros(*report_.newest_micros);
    std::string label = (plan_->ts_field >= 0 ? field : std::string("uri")) + ": " + what;
    if (!required) {
      Pass("freshness", label + newest + " (not required)");
      return Status::Ok();
    }
    int64_t limit = *input_->quality.freshness_ms;
    if (age_ms < -kClockSkewMs) {
      return Fail("freshness",
                  Error(codes::kDataFreshness, what + newest + " is " + FormatDurationMs(-age_ms) +
                                                   " in the future (clock skew allowance " +
                                                   FormatDurationMs(kClockSkewMs) + ")")
                      .Path(field)
                      .Value(newest)
                      .Hint("check the declared timestamp unit against the data, and the "
                            "writer's clock"));
    }
    if (age_ms > limit) {
      return Fail("freshness",
                  Error(codes::kDataFreshness, what + newest + " is " + FormatDurationMs(age_ms) +
                                                   " old > " + FormatDurationMs(limit))
                      .Path(field)
                      .Value(newest));
    }
    Pass("freshness", label + newest + " is " + FormatDurationMs(std::max<int64_t>(age_ms, 0)) +
                          " old <= " + FormatDurationMs(limit));
    return Status::Ok();
  }

  Catalog* catalog_;
  ValidateOptions opt_;
  int threads_;
  int64_t now_ms_;
  bool profile_ = false;
  const spec::DataInput* input_ = nullptr;
  ValidationReport report_;
  std::unique_ptr<Storage> storage_;
  std::vector<FileWork> files_;
  schema::Schema reader_schema_;
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<DistinctCounter> distinct_;
  std::vector<std::unique_ptr<ChunkSink>> sinks_;
  std::vector<FieldStats> stats_;
};

}  // namespace

ValidationReport Validate(const spec::DataInput& input, Catalog* catalog,
                          const ValidateOptions& options) {
  return Validator(catalog, options).Run(input, false);
}

Result<schema::Schema> InferSchema(const std::string& uri, const std::string& format,
                                   Catalog* catalog) {
  auto storage = OpenStorage(uri, catalog);
  if (!storage.ok()) return storage.error();
  auto files = (*storage)->List(uri);
  if (!files.ok()) return files.error();
  if (files->empty()) {
    return Error(codes::kDataSourceNotFound, "no data files under " + uri).Value(uri);
  }
  const ObjectInfo& first = files->front();
  auto blob = (*storage)->ReadAll(first.uri);
  if (!blob.ok()) return blob.error();
  auto f = DetectFormat(format, first.uri, (*blob)->data());
  if (!f.ok()) return f.error();
  auto reader = OpenReader(*f, *blob, first.uri);
  if (!reader.ok()) return reader.error();
  return (*reader)->writer_schema();
}

ValidationReport Profile(const std::string& uri, const std::string& format, Catalog* catalog,
                         const ValidateOptions& options) {
  spec::DataInput input;
  input.uri = uri;
  input.format = format;
  auto inferred = InferSchema(uri, format, catalog);
  if (inferred.ok()) input.schema = *inferred;
  ValidateOptions opt = options;
  return Validator(catalog, opt).Run(input, true);
}

}  // namespace rsl::data
