// cairnd over HTTP for the damage tests: readings written with values that
// name their device, remembered once acknowledged (204), and read back
// through the API to be compared exactly, device by device.
//
// Every wait is bounded; the child is killed and reaped by its guard.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"

namespace cairn {

class CairndDamageTest : public CairndHttpTest {
 protected:
  // Writes `count` readings of `device` to `table` in POSTs of at most 500
  // lines, continuing where the last call for the device stopped; every
  // reading's value is device_number * 1e6 + its index. Returns false at
  // the first answer other than 204.
  bool WriteReadings(const std::string& device, int device_number, int count,
                     const std::string& table = "sensors") {
    int& next = next_index_[table + "/" + device];
    for (int done = 0; done < count;) {
      const int batch = std::min(500, count - done);
      std::string body;
      std::vector<std::pair<int64_t, double>> lines;
      for (int i = 0; i < batch; ++i) {
        const int index = next + i;
        const int64_t seconds = base_seconds_ + index;
        const double value = device_number * 1e6 + index;
        body += "env,device=" + device + " temperature=" + std::to_string(static_cast<int64_t>(value)) + " " +
                std::to_string(seconds) + "\n";
        lines.emplace_back(seconds, value);
      }
      Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
      if (!client.ok()) return false;
      Result<HttpTestResponse> response = client->Request(
          "POST", "/write?db=" + table + "&precision=s", {{"Authorization", "Token " + admin_}}, body);
      if (!response.ok() || response->status != 204) {
        ADD_FAILURE() << "write of " << device << ": "
                      << (response.ok() ? std::to_string(response->status) + " " + response->body
                                        : response.status().ToString());
        return false;
      }
      for (const auto& [seconds, value] : lines) acknowledged_[table][device][seconds] = value;
      next += batch;
      done += batch;
    }
    return true;
  }

  // Every reading of `device` the API returns: timestamp (s) -> temperature.
  std::map<int64_t, double> ReadBack(const std::string& device, const std::string& table = "sensors") {
    std::map<int64_t, double> values;
    std::string page;
    for (int pages = 0; pages < 1000; ++pages) {
      std::string target = "/v1/tables/" + table + "/devices/" + device + "/readings?limit=1000&from=-2d";
      if (!page.empty()) target += "&page=" + page;
      Result<HttpTestResponse> response = Get(target, admin_);
      if (!response.ok() || response->status != 200) {
        ADD_FAILURE() << target << ": "
                      << (response.ok() ? std::to_string(response->status) + " " + response->body
                                        : response.status().ToString());
        break;
      }
      Result<JsonValue> json = JsonValue::Parse(response->body);
      if (!json.ok()) {
        ADD_FAILURE() << "not JSON: " << response->body.substr(0, 200);
        break;
      }
      for (const JsonValue& record : json->Find("records")->elements()) {
        const JsonValue* time = record.Find("time");
        const JsonValue* temperature = record.Find("temperature");
        if (time == nullptr || temperature == nullptr) {
          ADD_FAILURE() << "record without time or temperature";
          continue;
        }
        values[ParseSeconds(time->text())] = temperature->number();
      }
      const JsonValue* next = json->Find("next_page");
      if (next == nullptr) break;
      page = next->text();
    }
    return values;
  }

  // Compares every device of every table with what was acknowledged:
  // the same timestamps with the same values, nothing more. Returns the
  // number of acknowledged readings read back intact.
  size_t ExpectEveryAcknowledgedReading() {
    size_t intact = 0;
    for (const auto& [table, devices] : acknowledged_) {
      for (const auto& [device, expected] : devices) {
        const std::map<int64_t, double> stored = ReadBack(device, table);
        size_t missing = 0, wrong = 0;
        for (const auto& [seconds, value] : expected) {
          auto it = stored.find(seconds);
          if (it == stored.end()) {
            ++missing;
          } else if (it->second != value) {
            ++wrong;
          } else {
            ++intact;
          }
        }
        EXPECT_EQ(missing, 0u) << table << "/" << device << ": acknowledged readings missing";
        EXPECT_EQ(wrong, 0u) << table << "/" << device << ": readings with another value (another device's?)";
        EXPECT_EQ(stored.size(), expected.size()) << table << "/" << device << ": readings never written";
      }
    }
    return intact;
  }

  size_t AcknowledgedCount() const {
    size_t n = 0;
    for (const auto& [table, devices] : acknowledged_) {
      for (const auto& [device, readings] : devices) n += readings.size();
    }
    return n;
  }

  // The health details (/healthz with a read token).
  std::string HealthDetails() {
    Result<HttpTestResponse> response = Get("/healthz", admin_);
    EXPECT_TRUE(response.ok());
    return response.ok() ? response->body : "";
  }

  void KillDaemon() {
    ASSERT_TRUE(daemon_->Signal(SIGKILL));
    daemon_->WaitForExit(kCairndTimeoutMs);
  }

  // Waits until `predicate` holds, up to `timeout_ms`.
  template <typename Predicate>
  bool WaitUntil(Predicate predicate, int timeout_ms = 30000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return predicate();
  }

  // Files in the data directory's table directory whose names end in `suffix`.
  std::vector<std::string> TableFiles(const std::string& table, const std::string& suffix) {
    std::vector<std::string> out;
    Result<std::vector<std::string>> names = Env::Default()->ListDir(dir_.PathOf("data") + "/" + table);
    if (!names.ok()) return out;
    for (const std::string& name : *names) {
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(dir_.PathOf("data") + "/" + table + "/" + name);
    }
    return out;
  }

  std::string admin_;
  // Timestamps start a few hours back, all within the last two days.
  const int64_t base_seconds_ = Env::Default()->NowUnixNanos() / 1'000'000'000 - 6 * 3600;
  std::map<std::string, std::map<std::string, std::map<int64_t, double>>> acknowledged_;
  std::map<std::string, int> next_index_;

 private:
  // "2026-11-27T08:00:01Z" (or with fractional seconds) -> Unix seconds.
  static int64_t ParseSeconds(const std::string& text) {
    std::tm tm{};
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &year, &month, &day, &hour, &minute, &second) != 6) {
      ADD_FAILURE() << "unexpected time format: " << text;
      return 0;
    }
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    return static_cast<int64_t>(timegm(&tm));
  }
};

}  // namespace cairn
