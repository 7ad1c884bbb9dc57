// The price table: what a device-hour, a CPU core-hour and a GiB-hour of memory cost, per
// device model and pricing kind (on-demand, spot, reserved). Kept as YAML in the state
// directory (<state-dir>/prices.yaml); written with the documented defaults on first use so
// operators edit it in place.
#pragma once

#include <map>
#include <string>

#include "base/status.h"

namespace rsl::govern {

inline constexpr char kPriceFile[] = "prices.yaml";
inline constexpr char kOnDemand[] = "on-demand";
inline constexpr char kSpot[] = "spot";
inline constexpr char kReserved[] = "reserved";
//! The device model used when a step's GPU model is unknown.
inline constexpr char kDefaultDevice[] = "default";

struct PriceTable {
  std::string currency = "USD";
  //! device model (upper case, e.g. A100) -> pricing kind -> price per device-hour.
  std::map<std::string, std::map<std::string, double>> devices;
  //! pricing kind -> price per core-hour / GiB-hour.
  std::map<std::string, double> cpu_core_hour;
  std::map<std::string, double> memory_gib_hour;
  std::string source;  //!< file it came from ("" for the built-in defaults)

  //! A device price and what it was taken from.
  struct DeviceRate {
    double price = 0;   //!< per device-hour
    std::string model;  //!< the table's model ("default" for an unknown one)
    std::string kind;   //!< the kind priced: the one asked for, or on-demand (fallback)
    bool fallback() const { return kind != requested; }
    std::string requested;
  };
  //! Price per device-hour. Unknown model -> "default"; a kind the model does not list falls
  //! back to on-demand, as CPU and memory prices do (DeviceRate says so). Errors:
  //! INVALID_ARGUMENT when the model has neither the kind nor on-demand (naming what it has).
  Result<DeviceRate> DeviceRateFor(const std::string& model, const std::string& kind) const;
  //! DeviceRateFor(...).price.
  Result<double> DevicePrice(const std::string& model, const std::string& kind) const;
  //! CPU and memory prices for a kind (falls back to on-demand when the kind is absent).
  double CpuPrice(const std::string& kind) const;
  double MemoryPrice(const std::string& kind) const;
  //! The table's device model for a capability/model name ("a100", "nvidia-a100-80gb" ->
  //! "A100"); "" when none matches.
  std::string MatchDevice(const std::string& name) const;
};

//! The defaults' YAML, with a comment naming each price's source and date.
const std::string& DefaultPriceYaml();

//! Parses a price table. Errors: SPEC_PARSE_ERROR (YAML, with file:line:col) and
//! INVALID_ARGUMENT (a negative or non-numeric price, unknown pricing kind; with path).
Result<PriceTable> ParsePriceTable(const std::string& yaml, const std::string& file);

//! Reads <state_dir>/prices.yaml, writing the defaults there first when it does not exist.
Result<PriceTable> LoadPriceTable(const std::string& state_dir);
//! Reads the price table at `path` (an operator's file: never written). Errors:
//! ParsePriceTable's; NOT_FOUND / IO_ERROR when it cannot be read.
Result<PriceTable> LoadPriceTableFile(const std::string& path);

//! Rounds money half-up to cents (tolerating binary representation: 59.995 -> 60.00).
double RoundCents(double v);
std::string FormatMoney(double v);  //!< "117.76"

}  // namespace rsl::govern
