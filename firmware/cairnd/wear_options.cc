#include "cairnd/wear_options.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace cairn::cairnd {
namespace {

Status Bad(std::string_view flag, std::string_view value, std::string_view what) {
  return Status::InvalidArgument("flag " + std::string(flag) + ": '" + std::string(value) + "' is not " +
                                 std::string(what));
}

Result<uint64_t> Count(std::string_view flag, std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return Bad(flag, text, "a whole number");
  return value;
}

// A decimal number >= 0 ("40", "0.5"). strtod wants a terminated string and
// accepts forms (hex, inf, nan, leading spaces) that a flag should not.
Result<double> Decimal(std::string_view flag, std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos &&
                     text.find('.') == text.rfind('.');
  if (!plain) return Bad(flag, text, "a decimal number like 40 or 0.5");
  const std::string copy(text);
  const double value = std::strtod(copy.c_str(), nullptr);
  if (!std::isfinite(value)) return Bad(flag, text, "a decimal number like 40 or 0.5");
  return value;
}

// A size as the card's label gives it: digits with an optional suffix, K, M,
// G or T in powers of 1000 (a "32 GB" card holds about 32 * 10^9 bytes).
Result<uint64_t> CardSize(std::string_view flag, std::string_view text) {
  uint64_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        multiplier = 1'000;
        break;
      case 'M':
      case 'm':
        multiplier = 1'000'000;
        break;
      case 'G':
      case 'g':
        multiplier = 1'000'000'000;
        break;
      case 'T':
      case 't':
        multiplier = 1'000'000'000'000;
        break;
      default:
        break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  Result<uint64_t> value = Count(flag, text);
  if (!value.ok() || *value == 0 || *value > UINT64_MAX / multiplier) {
    return Bad(flag, text, "a size like 32G (K, M, G, T in powers of 1000)");
  }
  return *value * multiplier;
}

}  // namespace

Status ApplyFlashWearFlag(std::string_view name, std::string_view value, FlashWearOptions* options) {
  if (name == "--card-endurance-tbw") {
    CAIRN_ASSIGN_OR_RETURN(options->endurance_tbw, Decimal(name, value));
    if (options->endurance_tbw <= 0) return Bad(name, value, "a positive number of terabytes");
  } else if (name == "--card-pe-cycles") {
    CAIRN_ASSIGN_OR_RETURN(options->pe_cycles, Count(name, value));
    if (options->pe_cycles == 0) return Bad(name, value, "a positive number of cycles");
  } else if (name == "--card-size") {
    CAIRN_ASSIGN_OR_RETURN(options->card_size_bytes, CardSize(name, value));
  } else if (name == "--wear-warn-days") {
    CAIRN_ASSIGN_OR_RETURN(const uint64_t days, Count(name, value));
    if (days > 100'000) return Bad(name, value, "a number of days up to 100000");
    options->warn_remaining_days = static_cast<int64_t>(days);
  } else if (name == "--wear-warn-amplification") {
    CAIRN_ASSIGN_OR_RETURN(options->warn_amplification, Decimal(name, value));
  } else if (name == "--wear-sample-interval-ms") {
    CAIRN_ASSIGN_OR_RETURN(const uint64_t ms, Count(name, value));
    if (ms == 0 || ms > 86'400'000) return Bad(name, value, "a positive number of milliseconds up to a day");
    options->sample_interval_ms = static_cast<int64_t>(ms);
  } else {
    return Status::InvalidArgument("unknown flag '" + std::string(name) + "'");
  }
  return Status::Ok();
}

Status CheckFlashWearFlags(const std::set<std::string_view>& seen) {
  if (seen.count("--card-endurance-tbw") != 0 && seen.count("--card-pe-cycles") != 0) {
    return Status::InvalidArgument(
        "--card-endurance-tbw and --card-pe-cycles are two ways of giving one endurance: give one");
  }
  if (seen.count("--card-size") != 0 && seen.count("--card-pe-cycles") == 0) {
    return Status::InvalidArgument("--card-size goes with --card-pe-cycles (endurance = cycles x size)");
  }
  return Status::Ok();
}

std::string_view FlashWearUsage() {
  return "Flash wear (bytes written per day, write amplification, the card's projected life;\n"
         "see `stats`, `health`, /metrics):\n"
         "  --card-endurance-tbw TB  the card's rated endurance in terabytes written, from its\n"
         "                      datasheet (e.g. 40 for an industrial 32 GB card)\n"
         "  --card-pe-cycles N  or its rated program/erase cycles (e.g. 3000 for MLC, 30000 for\n"
         "                      pSLC); endurance = N x the card's size\n"
         "  --card-size SIZE    the card's size for --card-pe-cycles, e.g. 32G (powers of 1000;\n"
         "                      default: the size the kernel reports for the disk)\n"
         "  --wear-warn-days N  health is degraded (flash.life) while the projected life is\n"
         "                      below N days (default 365; 0: never)\n"
         "  --wear-warn-amplification X  health is degraded (flash.amplification) while cairnd\n"
         "                      writes more than X bytes per byte of readings over a day\n"
         "                      (default: never)\n"
         "  --wear-sample-interval-ms MS  how often the write counters are read (default 60000)\n";
}

}  // namespace cairn::cairnd
