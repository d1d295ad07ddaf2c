#include "engine/health/flash_wear_monitor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <variant>
#include <vector>

namespace cairn {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr double kSecondsPerDay = 86'400;
constexpr std::string_view kStateMagic = "cairn-flash-wear 1";
// The window keeps about this many points, whatever the sample interval:
// one every five minutes over a day, a few kilobytes.
constexpr int64_t kWindowPoints = 288;

// "12.3 GB": decimal units, as card makers rate endurance.
std::string DecimalBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  size_t unit = 0;
  while (bytes >= 1000 && unit + 1 < std::size(kUnits)) {
    bytes /= 1000;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string Fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

// A configured threshold as the operator typed it: 20, 7.5, 0.01.
std::string Shortest(double value) {
  char text[48];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, *out);
  return error == std::errc() && ptr == end && !text.empty();
}

std::optional<double> PerDay(std::optional<uint64_t> from, std::optional<uint64_t> to, double seconds) {
  if (!from || !to || *to < *from || seconds <= 0) return std::nullopt;
  return static_cast<double>(*to - *from) * kSecondsPerDay / seconds;
}

}  // namespace

uint64_t ReadingBytes(const Record& record) {
  uint64_t bytes = sizeof(int64_t);
  for (const Field& field : record.fields) {
    if (const auto* text = std::get_if<std::string>(&field.value)) {
      bytes += text->size();
    } else if (std::holds_alternative<bool>(field.value)) {
      bytes += 1;
    } else if (!std::holds_alternative<std::monostate>(field.value)) {
      bytes += 8;
    }
  }
  return bytes;
}

std::string EncodeFlashWearState(const FlashWearState& state) {
  std::string out(kStateMagic);
  out += '\n';
  const auto line = [&](std::string_view key, const std::string& value) {
    out += key;
    out += ' ';
    out += value;
    out += '\n';
  };
  line("installed_unix_nanos", std::to_string(state.installed_unix_nanos));
  line("observed_nanos", std::to_string(state.observed_nanos));
  if (state.process_bytes) line("process_bytes", std::to_string(*state.process_bytes));
  line("reading_bytes", std::to_string(state.reading_bytes));
  if (state.device_bytes) line("device_bytes", std::to_string(*state.device_bytes));
  if (state.device_since_boot) {
    line("device_name", state.device_name);
    line("device_number", state.device_number);
    line("device_boot_id", state.device_boot_id);
    line("device_since_boot", std::to_string(*state.device_since_boot));
  }
  return out;
}

Result<FlashWearState> DecodeFlashWearState(std::string_view text) {
  FlashWearState state;
  size_t pos = 0;
  int line_number = 0;
  bool seen_magic = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      return Status::Corruption("flash wear state: the last line is cut short");
    }
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const auto bad = [&](std::string_view why) {
      return Status::Corruption("flash wear state line " + std::to_string(line_number) + ": " +
                                std::string(why));
    };
    if (!seen_magic) {
      if (line != kStateMagic) return bad("not a version-1 flash wear state file");
      seen_magic = true;
      continue;
    }
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return bad("no value");
    const std::string_view key = line.substr(0, space);
    const std::string_view value = line.substr(space + 1);
    uint64_t number = 0;
    const bool is_number = ParseNumber(value, &number);
    if (key == "installed_unix_nanos" || key == "observed_nanos") {
      int64_t signed_number = 0;
      if (!ParseNumber(value, &signed_number) || signed_number < 0) return bad("not a count");
      (key == "observed_nanos" ? state.observed_nanos : state.installed_unix_nanos) = signed_number;
    } else if (key == "process_bytes" || key == "device_bytes" || key == "device_since_boot") {
      if (!is_number) return bad("not a count");
      (key == "process_bytes"  ? state.process_bytes
       : key == "device_bytes" ? state.device_bytes
                               : state.device_since_boot) = number;
    } else if (key == "reading_bytes") {
      if (!is_number) return bad("not a count");
      state.reading_bytes = number;
    } else if (key == "device_name") {
      state.device_name = value;
    } else if (key == "device_number") {
      state.device_number = value;
    } else if (key == "device_boot_id") {
      state.device_boot_id = value;
    } else {
      return bad("unknown key '" + std::string(key) + "'");
    }
  }
  if (!seen_magic) return Status::Corruption("flash wear state: empty file");
  return state;
}

FlashWearMonitor::FlashWearMonitor(Env* env, std::string data_dir, const FlashWearOptions& options,
                                   HealthBoard* health)
    : env_(env),
      data_dir_(std::move(data_dir)),
      state_path_(JoinPath(data_dir_, kStateFileName)),
      options_(options),
      health_(health) {
  Result<std::string> text = env_->ReadFileToString(state_path_);
  if (text.status().code() == StatusCode::kNotFound) return;
  Result<FlashWearState> state =
      text.ok() ? DecodeFlashWearState(*text) : Result<FlashWearState>(text.status());
  if (state.ok()) {
    state_ = std::move(*state);
    return;
  }
  // Telemetry never keeps the engine from opening: count afresh, and say
  // that the totals since install restarted.
  if (health_ != nullptr) {
    health_->Raise(
        HealthProblem{.key = "flash.state",
                      .level = HealthLevel::kDegraded,
                      .component = "flash",
                      .message = "the flash wear totals in " + state_path_ + " could not be read (" +
                                 state.status().message() + "); counting starts again from now",
                      .remedy = "nothing: the next save replaces the file"},
        env_->NowUnixNanos());
  }
}

void FlashWearMonitor::SampleProcessLocked() {
  Result<uint64_t> raw = env_->ProcessBytesWritten();
  process_known_now_ = raw.ok();
  if (!raw.ok()) return;
  // The first sample of a run adds everything this process wrote since it
  // started; the counter never goes down within one process.
  const uint64_t delta = process_raw_ && *raw >= *process_raw_ ? *raw - *process_raw_ : *raw;
  process_raw_ = *raw;
  state_.process_bytes = state_.process_bytes.value_or(0) + delta;
}

void FlashWearMonitor::SampleDeviceLocked() {
  Result<BlockDeviceWrites> device = env_->BlockDeviceWritesOf(data_dir_);
  device_known_now_ = device.ok();
  if (!device.ok()) {
    device_note_ = device.status().message();
    return;
  }
  device_note_.clear();
  device_disk_size_bytes_ = device->disk_size_bytes;
  const std::string number = std::to_string(device->major) + ":" + std::to_string(device->minor);
  const uint64_t raw = device->bytes_written_since_boot;
  uint64_t delta = 0;
  if (!state_.device_since_boot) {
    // The first sample ever on this directory: a baseline. What the device
    // took before cairn was installed is not cairn's to report.
    delta = 0;
  } else if (number == state_.device_number && device->boot_id == state_.device_boot_id &&
             raw >= *state_.device_since_boot) {
    delta = raw - *state_.device_since_boot;
  } else {
    // A reboot (or the directory moved to another device): the counter
    // started again from 0, so all it holds is new.
    delta = raw;
  }
  state_.device_bytes = state_.device_bytes.value_or(0) + delta;
  state_.device_since_boot = raw;
  state_.device_name = device->name;
  state_.device_number = number;
  state_.device_boot_id = device->boot_id;
}

void FlashWearMonitor::AddWindowPointLocked(int64_t now_monotonic) {
  WindowPoint point{now_monotonic, process_known_now_ ? state_.process_bytes : std::nullopt,
                    device_known_now_ ? state_.device_bytes : std::nullopt, state_.reading_bytes};
  const int64_t window_nanos = options_.window_seconds * kNanosPerSecond;
  // Points closer together than window/kWindowPoints merge into the newest,
  // so the window's memory does not grow with a short sample interval.
  if (window_.size() >= 2 &&
      now_monotonic - window_[window_.size() - 2].monotonic_nanos < window_nanos / kWindowPoints) {
    window_.back() = point;
  } else {
    window_.push_back(point);
  }
  // Keep one point at or before the window's start, so the window is
  // covered whole once this run has lasted that long.
  while (window_.size() >= 2 && window_[1].monotonic_nanos <= now_monotonic - window_nanos)
    window_.pop_front();
}

Status FlashWearMonitor::Sample(bool force) {
  MutexLock lock(&mutex_);
  const int64_t now = env_->MonotonicNanos();
  if (sampled_ && !force && now - last_sample_monotonic_ < options_.sample_interval_ms * 1'000'000) {
    return Status::Ok();
  }
  if (sampled_) state_.observed_nanos += std::max<int64_t>(0, now - last_sample_monotonic_);
  if (state_.installed_unix_nanos == 0) state_.installed_unix_nanos = env_->NowUnixNanos();
  state_.reading_bytes += pending_reading_bytes_.exchange(0, std::memory_order_relaxed);
  SampleProcessLocked();
  SampleDeviceLocked();
  AddWindowPointLocked(now);
  const bool first = !sampled_;
  sampled_ = true;
  last_sample_monotonic_ = now;
  UpdateHealthLocked(ReportLocked(), window_.empty() ? nullptr : &window_.front());
  if (!first && !force && now - last_save_monotonic_ < options_.save_interval_ms * 1'000'000) {
    return Status::Ok();
  }
  last_save_monotonic_ = now;
  Status saved = env_->WriteFileAtomically(state_path_, EncodeFlashWearState(state_));
  if (saved.ok() && health_ != nullptr) health_->Clear("flash.state");
  return saved;
}

FlashWearStatus FlashWearMonitor::Report() const {
  MutexLock lock(&mutex_);
  return ReportLocked();
}

FlashWearStatus FlashWearMonitor::ReportLocked() const {
  FlashWearStatus report;
  report.installed_unix_nanos = state_.installed_unix_nanos;
  report.observed_seconds = state_.observed_nanos / kNanosPerSecond;
  report.process_bytes_written = state_.process_bytes;
  report.device_bytes_written = state_.device_bytes;
  report.reading_bytes = state_.reading_bytes;
  if (device_known_now_) report.device = state_.device_name;
  report.device_note = device_note_;
  report.device_disk_size_bytes = device_disk_size_bytes_;

  const double observed = static_cast<double>(state_.observed_nanos) / kNanosPerSecond;
  std::optional<uint64_t> zero = 0;
  if (process_known_now_)
    report.process_bytes_per_day_since_install = PerDay(zero, state_.process_bytes, observed);
  if (device_known_now_)
    report.device_bytes_per_day_since_install = PerDay(zero, state_.device_bytes, observed);
  if (state_.process_bytes && state_.reading_bytes > 0) {
    report.amplification_since_install =
        static_cast<double>(*state_.process_bytes) / static_cast<double>(state_.reading_bytes);
  }
  if (window_.size() >= 2) {
    const WindowPoint& first = window_.front();
    const WindowPoint& last = window_.back();
    const double span = static_cast<double>(last.monotonic_nanos - first.monotonic_nanos) / kNanosPerSecond;
    report.window_seconds = static_cast<int64_t>(span);
    report.process_bytes_per_day_window = PerDay(first.process_bytes, last.process_bytes, span);
    report.device_bytes_per_day_window = PerDay(first.device_bytes, last.device_bytes, span);
    if (first.process_bytes && last.process_bytes && last.reading_bytes > first.reading_bytes) {
      report.amplification_window = static_cast<double>(*last.process_bytes - *first.process_bytes) /
                                    static_cast<double>(last.reading_bytes - first.reading_bytes);
    }
  }

  if (options_.endurance_tbw > 0) {
    report.endurance_bytes = static_cast<uint64_t>(options_.endurance_tbw * 1e12);
  } else if (options_.pe_cycles > 0) {
    const uint64_t size = options_.card_size_bytes > 0 ? options_.card_size_bytes : device_disk_size_bytes_;
    report.endurance_bytes = options_.pe_cycles * size;
  }
  // The device's count is the card's real load (cairn's writes after the
  // filesystem, plus every other writer on it); the process's count is the
  // fallback where the device is unknown, a lower bound.
  const bool device_basis = device_known_now_ && state_.device_bytes.has_value();
  const std::optional<uint64_t> used = device_basis ? state_.device_bytes : state_.process_bytes;
  if (report.endurance_bytes > 0 && used) {
    const double endurance = static_cast<double>(report.endurance_bytes);
    report.endurance_used_fraction = static_cast<double>(*used) / endurance;
    std::optional<double> rate =
        device_basis ? report.device_bytes_per_day_since_install : report.process_bytes_per_day_since_install;
    const std::optional<double> window_rate =
        device_basis ? report.device_bytes_per_day_window : report.process_bytes_per_day_window;
    // A window shorter than the minimum is a burst (a seal, a compaction),
    // not a pace; past it the higher rate wins, so a pace that rose lately
    // is not hidden by a quiet past.
    if (window_rate && rate &&
        report.window_seconds >= std::min(options_.min_observed_seconds, options_.window_seconds)) {
      rate = std::max(*rate, *window_rate);
    }
    if (report.observed_seconds >= options_.min_observed_seconds && rate) {
      report.projection_basis = device_basis ? "device" : "process";
      const double remaining = std::max(0.0, endurance - static_cast<double>(*used));
      if (remaining == 0) {
        report.projected_remaining_days = 0;
      } else if (*rate > 0) {
        report.projected_remaining_days = remaining / *rate;
      }
    }
  }
  return report;
}

void FlashWearMonitor::UpdateHealthLocked(const FlashWearStatus& report, const WindowPoint* window_start) {
  if (health_ == nullptr) return;
  const int64_t now = env_->NowUnixNanos();
  if (options_.warn_remaining_days > 0 && report.projected_remaining_days &&
      *report.projected_remaining_days < static_cast<double>(options_.warn_remaining_days)) {
    const bool device_basis = report.projection_basis == "device";
    const double used = static_cast<double>(
        (device_basis ? report.device_bytes_written : report.process_bytes_written).value_or(0));
    health_->Raise(
        HealthProblem{
            .key = "flash.life",
            .level = HealthLevel::kDegraded,
            .component = "flash",
            .message =
                "the card's projected remaining life is " + Fixed(*report.projected_remaining_days, 0) +
                " days, below the " + std::to_string(options_.warn_remaining_days) + "-day threshold: " +
                DecimalBytes(used) + " of its " + DecimalBytes(static_cast<double>(report.endurance_bytes)) +
                " rated endurance written (" + Fixed(report.endurance_used_fraction.value_or(0) * 100, 1) +
                "%, counted by the " + report.projection_basis + ")",
            .remedy = "plan to replace the card; fewer, larger write batches or --durability interval "
                      "write less; check --card-endurance-tbw / --card-pe-cycles against the card's rating"},
        now);
  } else {
    health_->Clear("flash.life");
  }
  const uint64_t window_readings =
      window_start != nullptr ? state_.reading_bytes - window_start->reading_bytes : 0;
  if (options_.warn_amplification > 0 && report.amplification_window &&
      window_readings >= options_.min_window_reading_bytes &&
      *report.amplification_window > options_.warn_amplification) {
    health_->Raise(
        HealthProblem{.key = "flash.amplification",
                      .level = HealthLevel::kDegraded,
                      .component = "flash",
                      .message = "cairn wrote " + Fixed(*report.amplification_window, 1) +
                                 " bytes per byte of readings over the last " +
                                 Fixed(static_cast<double>(report.window_seconds) / 3600, 1) +
                                 " h, above the threshold of " + Shortest(options_.warn_amplification),
                      .remedy = "batch readings into fewer, larger writes; --durability interval; "
                                "a longer seal age (fewer, fuller chunks)"},
        now);
  } else {
    health_->Clear("flash.amplification");
  }
}

}  // namespace cairn
