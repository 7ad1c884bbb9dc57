#include "model/signature.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "model/mapped_file.h"
#include "model/npy.h"
#include "model/safetensors.h"

namespace rsl::model {
namespace {

Error Mismatch(const std::string& message, const std::string& path, SourcePos pos) {
  Error e(codes::kOutputSchemaMismatch, message);
  e.Path(path).At(std::move(pos));
  return e;
}

std::string RangeToString(const std::pair<double, double>& r) {
  // Appended piece by piece: `"[" + std::string` trips GCC 12's -Wrestrict false positive.
  std::string out = "[";
  out += FormatNumber(r.first);
  out += ", ";
  out += FormatNumber(r.second);
  out += "]";
  return out;
}

// Shapes agree when ranks match and every dim is equal or -1 on either side.
bool ShapesCompatible(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != -1 && b[i] != -1 && a[i] != b[i]) return false;
  }
  return true;
}

const spec::TensorSpec* FindOutput(const spec::ModelSpec& model, const std::string& name,
                                   size_t* index) {
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    if (model.outputs[i].name == name) {
      *index = i;
      return &model.outputs[i];
    }
  }
  return nullptr;
}

std::string SigPath(size_t i) { return "spec.model.signature.outputs[" + std::to_string(i) + "]"; }

int64_t FlatC(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + index[k];
  return flat;
}

Status ListInto(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = opendir(dir.c_str());
  if (!d) return OsError(codes::kIoError, "cannot list", dir, errno);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  for (const auto& n : names) {
    std::string child_rel = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (lstat((root + "/" + child_rel).c_str(), &st) != 0) {
      return OsError(codes::kIoError, "cannot stat", root + "/" + child_rel, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      RSL_RETURN_IF_ERROR(ListInto(root, child_rel, out));
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(child_rel);
    }
  }
  return Status::Ok();
}

std::string Basename(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

}  // namespace

std::string FormatNumber(double v, DType dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  // Narrow floats print as floats: every float16/bfloat16/FP8 value is exactly a float.
  bool narrow = dtype == DType::kFloat32 || (IsFloat(dtype) && DTypeSize(dtype) < 4);
  auto res = narrow ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                    : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

Errors CheckTensor(const spec::TensorSpec& expected, const Tensor& actual, const std::string& file,
                   const std::string& sig_path) {
  Errors errors;
  SourcePos pos{file, 0, 0};
  const std::string& n = expected.name;
  if (DTypeName(actual.dtype) != expected.dtype) {
    errors.push_back(
        Mismatch(n + ".dtype expected " + expected.dtype + ", got " + DTypeName(actual.dtype),
                 sig_path, pos));
  }
  if (!expected.shape.empty()) {
    bool ok = expected.shape.size() == actual.shape.size();
    for (size_t i = 0; ok && i < expected.shape.size(); ++i) {
      ok = expected.shape[i] == -1 || expected.shape[i] == actual.shape[i];
    }
    if (!ok) {
      errors.push_back(Mismatch(n + ".shape expected " + ShapeToString(expected.shape) + ", got " +
                                    ShapeToString(actual.shape),
                                sig_path, pos));
    }
  }
  if (!errors.empty() || !IsNumeric(actual.dtype)) return errors;

  // Values: find the violation with the smallest C-order index (for C-ordered data that is
  // the first one met, so the scan stops there).
  const bool check_finite = IsFloat(actual.dtype);
  const auto& range = expected.range;
  int64_t count = actual.ElementCount();
  // Integer tensors against integer ends are compared exactly: a double cannot tell
  // 9007199254740993 from 9007199254740992.
  const auto& int_range = expected.int_range;
  const bool exact = int_range && IsInteger(actual.dtype);
  int64_t best_flat = -1;
  std::string best_value;
  std::vector<int64_t> best_index;
  for (int64_t pos_idx = 0; pos_idx < count; ++pos_idx) {
    bool bad;
    std::string shown;
    if (exact) {
      std::optional<int64_t> v = actual.IntValueAt(pos_idx);  // nullopt: above INT64_MAX
      bad = !v || *v < int_range->first || *v > int_range->second;
      if (bad) shown = v ? std::to_string(*v) : "a value above " + std::to_string(INT64_MAX);
    } else {
      double v = actual.ValueAt(pos_idx);
      bad = (check_finite && !std::isfinite(v)) ||
            (range && (std::isnan(v) || v < range->first || v > range->second));
      if (bad) shown = FormatNumber(v, actual.dtype);
    }
    if (!bad) continue;
    std::vector<int64_t> index = actual.LogicalIndex(pos_idx);
    int64_t flat = FlatC(actual.shape, index);
    if (best_flat < 0 || flat < best_flat) {
      best_flat = flat;
      best_value = std::move(shown);
      best_index = std::move(index);
    }
    if (!actual.fortran_order) break;
  }
  if (best_flat >= 0) {
    std::string got = best_value + " at index " + ShapeToString(best_index);
    if (range) {
      std::string ends = RangeToString(*range);
      if (exact) {  // appended piece by piece, as in RangeToString
        ends = "[";
        ends += std::to_string(int_range->first);
        ends += ", ";
        ends += std::to_string(int_range->second);
        ends += "]";
      }
      errors.push_back(
          Mismatch(n + ".range expected values in " + ends + ", got " + got, sig_path, pos));
    } else {
      errors.push_back(Mismatch(n + ".values expected finite numbers, got " + got, sig_path, pos));
    }
  }
  return errors;
}

Errors CheckDeclaredOutputs(const spec::Workload& workload) {
  Errors errors;
  if (!workload.model) return errors;
  const auto& model = *workload.model;
  for (size_t si = 0; si < workload.pipeline.steps.size(); ++si) {
    const auto& step = workload.pipeline.steps[si];
    for (size_t oi = 0; oi < step.outputs.size(); ++oi) {
      const auto& declared = step.outputs[oi];
      size_t sig_idx = 0;
      const spec::TensorSpec* sig = FindOutput(model, declared.name, &sig_idx);
      if (!sig) continue;  // not a model output: nothing to contradict
      std::string base = spec::StepPath(si) + ".outputs[" + std::to_string(oi) + "]";
      auto add = [&](const std::string& field, const std::string& message) {
        Error e = Mismatch(message, base + "." + field, workload.PosOf(base + "." + field));
        e.Hint("make step " + Quote(step.name) + "'s output agree with " + SigPath(sig_idx));
        errors.push_back(std::move(e));
      };
      if (!declared.dtype.empty() && declared.dtype != sig->dtype) {
        add("dtype", sig->name + ".dtype expected " + sig->dtype + ", got " + declared.dtype);
      }
      if (!declared.shape.empty() && !sig->shape.empty() &&
          !ShapesCompatible(sig->shape, declared.shape)) {
        add("shape", sig->name + ".shape expected " + ShapeToString(sig->shape) + ", got " +
                         ShapeToString(declared.shape));
      }
      if (declared.range && sig->range &&
          (declared.range->first < sig->range->first ||
           declared.range->second > sig->range->second)) {
        add("constraints.range", sig->name + ".range expected within " +
                                     RangeToString(*sig->range) + ", got " +
                                     RangeToString(*declared.range));
      }
    }
  }
  return errors;
}

Result<std::vector<std::string>> ListFilesRecursive(const std::string& dir) {
  std::vector<std::string> files;
  RSL_RETURN_IF_ERROR(ListInto(dir, "", &files));
  std::sort(files.begin(), files.end());
  return files;
}

OutputCheck CheckOutputDir(const spec::ModelSpec& model, const std::string& dir) {
  OutputCheck result;
  auto files = ListFilesRecursive(dir);
  if (!files.ok()) {
    result.errors.push_back(files.error());
    return result;
  }
  auto reader_error = [&](const std::string& rel, const Error& e, const std::string& sig_path) {
    result.errors.push_back(Mismatch(e.message, sig_path, SourcePos{rel, 0, 0}));
  };
  for (const auto& rel : *files) {
    std::string base = Basename(rel);
    if (EndsWith(base, ".npy")) {
      size_t sig_idx = 0;
      const auto* sig = FindOutput(model, base.substr(0, base.size() - 4), &sig_idx);
      if (!sig) continue;
      auto mapped = MappedFile::Open(dir + "/" + rel);
      if (!mapped.ok()) {
        reader_error(rel, mapped.error(), SigPath(sig_idx));
        continue;
      }
      auto tensor = ParseNpy((*mapped)->bytes(), rel, sig->name);
      if (!tensor.ok()) {
        reader_error(rel, tensor.error(), SigPath(sig_idx));
        continue;
      }
      result.checked.push_back(rel);
      for (auto& e : CheckTensor(*sig, *tensor, rel, SigPath(sig_idx))) {
        result.errors.push_back(std::move(e));
      }
    } else if (EndsWith(base, ".safetensors")) {
      auto mapped = MappedFile::Open(dir + "/" + rel);
      if (!mapped.ok()) {
        reader_error(rel, mapped.error(), "");
        continue;
      }
      auto file = ParseSafetensors((*mapped)->bytes(), rel);
      if (!file.ok()) {
        reader_error(rel, file.error(), "");
        continue;
      }
      for (const auto& tensor : file->tensors) {
        size_t sig_idx = 0;
        const auto* sig = FindOutput(model, tensor.name, &sig_idx);
        if (!sig) continue;
        result.checked.push_back(rel + ":" + tensor.name);
        for (auto& e : CheckTensor(*sig, tensor, rel, SigPath(sig_idx))) {
          result.errors.push_back(std::move(e));
        }
      }
      // Tensors RSL cannot read matter only when the signature names them.
      for (const auto& tensor : file->unread) {
        size_t sig_idx = 0;
        const auto* sig = FindOutput(model, tensor.name, &sig_idx);
        if (!sig) continue;
        result.checked.push_back(rel + ":" + tensor.name);
        result.errors.push_back(Mismatch(sig->name + ".dtype expected " + sig->dtype + ", got " +
                                             tensor.stored_type + " (a dtype RSL does not read)",
                                         SigPath(sig_idx), SourcePos{rel, 0, 0}));
      }
    }
  }
  return result;
}

}  // namespace rsl::model
