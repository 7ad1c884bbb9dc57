#include "govern/price.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/yaml_load.h"

namespace rsl::govern {

namespace {

// Binary doubles make 8.45 * 7.1 = 59.99499999...; money is meant to be decimal, so round
// half-up with a tolerance far below a cent.
constexpr double kCentEpsilon = 1e-6;

bool KnownKind(const std::string& k) { return k == kOnDemand || k == kSpot || k == kReserved; }

std::string Upper(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const std::string& DefaultPriceYaml() {
  static const std::string kYaml =
      R"(# RSL price table: prices per device-hour, CPU core-hour and memory GiB-hour.
# Edit in place; `seedctl cost report` and the cost hook read it on every use.
# Pricing kinds: on-demand, spot, reserved. Unknown device models cost `default`.
currency: USD
cpu_core_hour:
  on-demand: 0.031611   # OpenCost default CPU price (opencost configs/default.json, 2024)
  spot: 0.006655        # OpenCost default spotCPU (same file)
memory_gib_hour:
  on-demand: 0.004237   # OpenCost default RAM price per GiB-hour (same file)
  spot: 0.000892        # OpenCost default spotRAM (same file)
devices:
  default:
    on-demand: 0.95     # OpenCost default GPU price per GPU-hour (same file)
  A10G:
    on-demand: 0.62     # cross-cloud comparison (AWS, per card-hour)
    reserved: 0.3596    # AWS reserved discount 42%
  L40S:
    on-demand: 1.35     # AWS
    reserved: 0.783     # 42% reserved discount
  A100:
    on-demand: 4.0966   # AWS p4d.24xlarge us-east-1 list price $32.7726/h / 8 GPUs (2024)
    reserved: 2.3760    # same instance, the same 42% reserved discount
  H100:
    on-demand: 12.2900  # AWS p5.48xlarge us-east-1 list price $98.32/h / 8 GPUs (2024)
)";
  return kYaml;
}

Result<double> PriceTable::DevicePrice(const std::string& model, const std::string& kind) const {
  Result<DeviceRate> r = DeviceRateFor(model, kind);
  if (!r.ok()) return r.error();
  return r->price;
}

Result<PriceTable::DeviceRate> PriceTable::DeviceRateFor(const std::string& model,
                                                         const std::string& kind) const {
  std::string m = MatchDevice(model);
  if (m.empty()) m = kDefaultDevice;
  auto it = devices.find(m);
  if (it == devices.end()) {
    return Error(codes::kInvalidArgument, "no price for device " + Quote(model) +
                                              " and no `default` device in the price table")
        .At(SourcePos{source, 0, 0})
        .Path("devices")
        .Value(model)
        .Hint("add devices." + Upper(model) + " or devices.default to the price table");
  }
  auto k = it->second.find(kind);
  if (k == it->second.end()) k = it->second.find(kOnDemand);
  if (k == it->second.end()) {
    std::vector<std::string> kinds;
    for (const auto& [name, p] : it->second) kinds.push_back(name);
    return Error(codes::kInvalidArgument,
                 "device " + m + " has no " + Quote(kind) +
                     " price and no on-demand price to fall back to (it has " + Join(kinds, ", ") +
                     ")")
        .At(SourcePos{source, 0, 0})
        .Path("devices." + m + "." + kind)
        .Value(kind)
        .Hint("add devices." + m + "." + kind +
              " (or on-demand) to the price table, or use "
              "another pricing kind");
  }
  DeviceRate rate;
  rate.price = k->second;
  rate.model = m;
  rate.kind = k->first;
  rate.requested = kind;
  return rate;
}

double PriceTable::CpuPrice(const std::string& kind) const {
  auto it = cpu_core_hour.find(kind);
  if (it != cpu_core_hour.end()) return it->second;
  it = cpu_core_hour.find(kOnDemand);
  return it == cpu_core_hour.end() ? 0 : it->second;
}

double PriceTable::MemoryPrice(const std::string& kind) const {
  auto it = memory_gib_hour.find(kind);
  if (it != memory_gib_hour.end()) return it->second;
  it = memory_gib_hour.find(kOnDemand);
  return it == memory_gib_hour.end() ? 0 : it->second;
}

std::string PriceTable::MatchDevice(const std::string& name) const {
  if (name.empty()) return "";
  std::string up = Upper(name);
  // Exact first, then the longest model name contained in it ("NVIDIA-A100-80GB" -> A100).
  if (devices.count(up)) return up;
  for (const auto& [m, p] : devices) {
    if (Upper(m) == up) return m;
  }
  std::string best;
  for (const auto& [m, p] : devices) {
    if (m == kDefaultDevice) continue;
    if (up.find(Upper(m)) != std::string::npos && m.size() > best.size()) best = m;
  }
  return best;
}

static Result<PriceTable> ParsePriceTableImpl(const std::string& yaml, const std::string& file) {
  PriceTable t;
  t.source = file;
  auto loaded = spec::LoadYaml(yaml, file);
  if (!loaded.ok()) return loaded.error();
  YAML::Node root = *loaded;
  if (!root.IsMap()) {
    return Error(codes::kInvalidArgument, "the price table must be a mapping")
        .At(SourcePos{file, 1, 1})
        .Hint("see docs/govern.md for the format");
  }
  auto price = [&](const YAML::Node& n, const std::string& path) -> Result<double> {
    SourcePos pos{file, n.Mark().line + 1, n.Mark().column + 1};
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      return Error(codes::kInvalidArgument, "price must be a number")
          .At(pos)
          .Path(path)
          .Value(n.IsScalar() ? n.Scalar() : "");
    }
    if (!(v >= 0) || !std::isfinite(v)) {
      return Error(codes::kInvalidArgument, "price must be >= 0")
          .At(pos)
          .Path(path)
          .Value(n.Scalar());
    }
    return v;
  };
  auto kinds = [&](const YAML::Node& n, const std::string& path,
                   std::map<std::string, double>* out) -> Status {
    if (!n.IsMap()) {
      return Error(codes::kInvalidArgument, "expected a mapping of pricing kind to price")
          .At(SourcePos{file, n.Mark().line + 1, n.Mark().column + 1})
          .Path(path)
          .Hint("e.g. {on-demand: 4.10, spot: 1.20, reserved: 2.38}");
    }
    for (const auto& kv : n) {
      std::string k = kv.first.as<std::string>();
      if (!KnownKind(k)) {
        std::string near = ClosestMatch(k, {kOnDemand, kSpot, kReserved});
        return Error(codes::kInvalidArgument, "unknown pricing kind " + Quote(k))
            .At(SourcePos{file, kv.first.Mark().line + 1, kv.first.Mark().column + 1})
            .Path(path + "." + k)
            .Value(k)
            .Hint(near.empty() ? "use on-demand, spot or reserved"
                               : "did you mean " + Quote(near) + "?");
      }
      Result<double> p = price(kv.second, path + "." + k);
      if (!p.ok()) return p.error();
      (*out)[k] = *p;
    }
    return Status::Ok();
  };
  if (root["currency"]) t.currency = root["currency"].as<std::string>();
  if (root["cpu_core_hour"])
    RSL_RETURN_IF_ERROR(kinds(root["cpu_core_hour"], "cpu_core_hour", &t.cpu_core_hour));
  if (root["memory_gib_hour"]) {
    RSL_RETURN_IF_ERROR(kinds(root["memory_gib_hour"], "memory_gib_hour", &t.memory_gib_hour));
  }
  if (root["devices"]) {
    if (!root["devices"].IsMap()) {
      return Error(codes::kInvalidArgument, "devices must be a mapping of model to prices")
          .At(SourcePos{file, root["devices"].Mark().line + 1, root["devices"].Mark().column + 1})
          .Path("devices");
    }
    for (const auto& kv : root["devices"]) {
      std::string model = kv.first.as<std::string>();
      std::string key = model == kDefaultDevice ? model : Upper(model);
      RSL_RETURN_IF_ERROR(kinds(kv.second, "devices." + model, &t.devices[key]));
    }
  }
  return t;
}

Result<PriceTable> LoadPriceTable(const std::string& state_dir) {
  std::string path = state_dir + "/" + kPriceFile;
  if (!PathExists(path)) {
    RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
    RSL_RETURN_IF_ERROR(WriteFileAtomic(path, DefaultPriceYaml()));
  }
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParsePriceTable(*text, path);
}

Result<PriceTable> LoadPriceTableFile(const std::string& path) {
  if (!PathExists(path)) {
    return Error(codes::kNotFound, "no price table " + Quote(path))
        .Value(path)
        .Hint("write one as docs/govern.md shows, or leave it out for <state-dir>/prices.yaml");
  }
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParsePriceTable(*text, path);
}

double RoundCents(double v) {
  double cents = std::floor(std::fabs(v) * 100 + 0.5 + kCentEpsilon);
  return std::copysign(cents / 100, v);
}

std::string FormatMoney(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", RoundCents(v));
  return buf;
}

Result<PriceTable> ParsePriceTable(const std::string& yaml, const std::string& file) {
  try {
    return ParsePriceTableImpl(yaml, file);
  } catch (const YAML::Exception& e) {
    return Error(codes::kInvalidArgument, "unexpected value: " + e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
        .Hint("see docs/govern.md for the price table format");
  }
}

}  // namespace rsl::govern
