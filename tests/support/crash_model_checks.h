// The query half of the model-based crash tests: every engine query
// compared with ReferenceModel, and a full comparison after recovery.
//
// A test derives from ModelChecks, owns the engine and the model through
// it, and says how a failure is reported and how a query's status is judged
// (an injected fault may explain an error; judging it may recover the
// engine, so every check stops when the engine is gone).
//
// Header-only for the same reason as reference_model.h.
//
// Thread-safety: none; one test thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"

#include "crash_describe.h"
#include "crash_rng.h"
#include "crash_workload.h"
#include "manual_clock_env.h"
#include "reference_model.h"

namespace cairn::crash {

class ModelChecks {
 public:
  virtual ~ModelChecks() = default;

 protected:
  // `table` is the table every query reads; `window_nanos` how far before
  // now the workload's timestamps reach; `rng_seed` seeds the draws of
  // queries.
  ModelChecks(std::string table, int64_t window_nanos, uint64_t rng_seed)
      : table_(std::move(table)), window_nanos_(window_nanos), rng_(rng_seed) {}

  // Records a failure with the run's context.
  virtual void Fail(const std::string& message) = 0;
  // Judges the status of a query: false when its result must not be
  // compared (the failure has been handled, the engine may be gone).
  virtual bool QueryStatusOk(const std::string& what, const Status& status) = 0;
  // What the run knows about an identity, for failure messages.
  virtual std::string Explain(const Identity& identity) const = 0;
  virtual void Note(std::string action) = 0;
  // The engine's clock now.
  virtual int64_t NowNanos() = 0;

  bool Failed() const { return ::testing::Test::HasFailure(); }

  template <typename T>
  bool QuerySucceeded(const std::string& what, const Result<T>& result) {
    return QueryStatusOk(what, result.status());
  }

  std::function<std::string(const Identity&)> Explainer() const {
    return [this](const Identity& identity) { return Explain(identity); };
  }

  static std::optional<long double> AsNumber(const Value& value) {
    if (const int64_t* i = std::get_if<int64_t>(&value)) return static_cast<long double>(*i);
    if (const double* d = std::get_if<double>(&value)) return static_cast<long double>(*d);
    return std::nullopt;
  }

  // An exact statistic (min, max, first, last) of an int64 field may come back
  // as int64 or as the double nearest to it; of a double field, as that double.
  static bool SameStatistic(const Value& got, const Value& want) {
    if (SameValue(got, want)) return true;
    if (const int64_t* i = std::get_if<int64_t>(&want)) {
      if (const double* d = std::get_if<double>(&got)) return *d == static_cast<double>(*i);
    }
    return false;
  }

  static bool NearlyEqual(long double got, long double want, long double scale) {
    const long double tolerance = 1e-9L * std::max<long double>(1, scale);
    const long double difference = got > want ? got - want : want - got;
    return difference <= tolerance;
  }


  // Runs `query` page by page with `limit` rows a page and returns every row.
  std::optional<std::vector<RecordRow>> RangeAllPages(RangeQuery query, size_t limit, size_t expected_rows,
                                                      const std::string& what) {
    query.limit = limit;
    query.page_token.clear();
    std::vector<RecordRow> rows;
    const size_t max_pages = limit == 0 ? 1 : expected_rows / limit + 2;
    for (size_t page = 0;; ++page) {
      if (page >= max_pages) {
        Fail(what + ": paging does not end after " + std::to_string(page) + " pages of " +
             std::to_string(limit) + " (expected " + std::to_string(expected_rows) + " rows)");
        return std::nullopt;
      }
      Result<RangeResult> result = engine_->Range(query);
      if (!QuerySucceeded(what, result)) return std::nullopt;
      if (limit != 0 && result->rows.size() > limit) {
        Fail(what + ": a page of " + std::to_string(result->rows.size()) + " rows with limit " +
             std::to_string(limit));
        return std::nullopt;
      }
      rows.insert(rows.end(), result->rows.begin(), result->rows.end());
      if (result->next_page_token.empty()) break;
      query.page_token = result->next_page_token;
    }
    return rows;
  }

  std::string DescribeQuery(const RangeQuery& query) const {
    return "Range(" + Escape(query.device_id) + ", measure '" + query.measure_name + "', prefix '" +
           query.measure_prefix + "', [" + std::to_string(query.from) + ", " + std::to_string(query.to) +
           "), " + (query.order == Order::kAscending ? "asc" : "desc") + ")";
  }

  void CheckRange(const RangeQuery& query, size_t limit) {
    const int64_t now = NowNanos();
    const std::vector<RecordRow> want = model_.Range(query, now);
    const std::string what = DescribeQuery(query) + " limit " + std::to_string(limit);
    std::optional<std::vector<RecordRow>> got = RangeAllPages(query, limit, want.size(), what);
    if (!got) return;
    if (!SameRows(*got, want)) Fail(what + ": " + DiffRows(*got, want, Explainer()));
    CheckAttributes(what, *got);
  }

  // Attributes are series metadata: a row shows none or a value some write
  // of its own series carried.
  void CheckAttributes(const std::string& what, const std::vector<RecordRow>& rows) {
    for (const RecordRow& row : rows) {
      if (!model_.PossibleAttributes(IdentityOf(row), row.attributes)) {
        std::string shown;
        for (const auto& [name, value] : row.attributes) shown += " " + name + "=" + value;
        Fail(what + ": " + Describe(IdentityOf(row)) + " shows attributes" + shown +
             " no write of its series carried");
        return;
      }
    }
  }

  void CheckGet(const Identity& identity) {
    const int64_t now = NowNanos();
    auto got = engine_->Get(table_.c_str(), identity.device_id, identity.measure_name, identity.timestamp,
                            identity.dimensions);
    if (!QuerySucceeded("Get", got)) return;
    const std::optional<RecordRow> want = model_.Get(identity, now);
    if (got->has_value() != want.has_value() || (want.has_value() && !SameRow(**got, *want))) {
      Fail("Get " + Describe(identity) + ": got " +
           (got->has_value() ? Describe(**got) : std::string("nothing")) + ", want " +
           (want ? Describe(*want) : std::string("nothing")));
    }
  }

  void CheckLatest(const std::string& device, const std::string& measure) {
    const int64_t now = NowNanos();
    auto got = engine_->Latest(table_.c_str(), device, measure);
    if (!QuerySucceeded("Latest", got)) return;
    const std::vector<RecordRow> want = model_.Latest(device, measure, now);
    if (!SameRows(*got, want)) {
      Fail("Latest(" + Escape(device) + ", '" + measure + "'): " + DiffRows(*got, want, Explainer()));
    }
    CheckAttributes("Latest(" + Escape(device) + ", '" + measure + "')", *got);
  }

  void CheckLatestBatch(const std::vector<std::string>& devices, const std::string& measure) {
    const int64_t now = NowNanos();
    auto got = engine_->LatestBatch(table_.c_str(), devices, measure);
    if (!QuerySucceeded("LatestBatch", got)) return;
    std::vector<RecordRow> want;
    for (const std::string& device : devices) {
      for (RecordRow& row : model_.Latest(device, measure, now)) want.push_back(std::move(row));
    }
    // The order across devices is not part of the contract.
    std::vector<RecordRow> got_rows = *got;
    const auto by_series = [](const RecordRow& a, const RecordRow& b) {
      return std::tie(a.device_id, a.measure_name, a.dimensions) <
             std::tie(b.device_id, b.measure_name, b.dimensions);
    };
    std::sort(got_rows.begin(), got_rows.end(), by_series);
    std::sort(want.begin(), want.end(), by_series);
    if (!SameRows(got_rows, want))
      Fail("LatestBatch('" + measure + "'): " + DiffRows(got_rows, want, Explainer()));
  }

  void CheckAggregate(const AggregateQuery& query) {
    const int64_t now = NowNanos();
    auto got = engine_->Aggregate(query);
    if (!QuerySucceeded("Aggregate", got)) return;
    const std::vector<ModelBucket> want = model_.Aggregate(query, now);
    const std::string what = "Aggregate(" + Escape(query.device_id) + ", " + query.measure_name + "." +
                             query.field + ", [" + std::to_string(query.from) + ", " +
                             std::to_string(query.to) + ") step " + std::to_string(query.step) + ")";
    if (got->buckets.size() != want.size()) {
      std::string detail = what + ": " + std::to_string(got->buckets.size()) + " buckets, want " +
                           std::to_string(want.size()) + "; got starts:";
      for (size_t i = 0; i < got->buckets.size() && i < 8; ++i) {
        detail += " " + std::to_string(got->buckets[i].start) + "x" + std::to_string(got->buckets[i].count);
      }
      detail += "; want starts:";
      for (size_t i = 0; i < want.size() && i < 8; ++i) {
        detail += " " + std::to_string(want[i].start) + "x" + std::to_string(want[i].count);
      }
      Fail(detail);
      return;
    }
    for (size_t b = 0; b < want.size(); ++b) {
      const AggregateBucket& bucket = got->buckets[b];
      const ModelBucket& model = want[b];
      const std::string where = what + " bucket " + std::to_string(model.start);
      if (bucket.start != model.start || bucket.count != model.count) {
        Fail(where + ": got start " + std::to_string(bucket.start) + " count " +
             std::to_string(bucket.count) + ", want count " + std::to_string(model.count));
        return;
      }
      if (bucket.values.size() != query.functions.size()) {
        Fail(where + ": " + std::to_string(bucket.values.size()) + " values for " +
             std::to_string(query.functions.size()) + " functions");
        return;
      }
      long double magnitude = 0;
      for (const Value* v : {&model.min, &model.max}) {
        const long double x = *AsNumber(*v);
        magnitude = std::max(magnitude, x < 0 ? -x : x);
      }
      for (size_t f = 0; f < query.functions.size(); ++f) {
        const Value& value = bucket.values[f];
        const AggregateFunction function = query.functions[f];
        bool ok = false;
        std::string want_text;
        switch (function) {
          case AggregateFunction::kMin:
            ok = SameStatistic(value, model.min);
            want_text = Describe(model.min);
            break;
          case AggregateFunction::kMax:
            ok = SameStatistic(value, model.max);
            want_text = Describe(model.max);
            break;
          case AggregateFunction::kFirst:
            ok = SameStatistic(value, model.first);
            want_text = Describe(model.first);
            break;
          case AggregateFunction::kLast:
            ok = SameStatistic(value, model.last);
            want_text = Describe(model.last);
            break;
          case AggregateFunction::kCount: {
            const std::optional<long double> n = AsNumber(value);
            ok = n && *n == static_cast<long double>(model.count);
            want_text = std::to_string(model.count);
            break;
          }
          case AggregateFunction::kSum: {
            const std::optional<long double> n = AsNumber(value);
            if (model.is_int && std::holds_alternative<int64_t>(value)) {
              ok = std::get<int64_t>(value) == model.int_sum;
            } else {
              ok = n && NearlyEqual(*n, model.sum, magnitude * static_cast<long double>(model.count));
            }
            want_text =
                model.is_int ? std::to_string(model.int_sum) : std::to_string(static_cast<double>(model.sum));
            break;
          }
          case AggregateFunction::kAvg: {
            const std::optional<long double> n = AsNumber(value);
            const long double average = model.sum / static_cast<long double>(model.count);
            ok = n && NearlyEqual(*n, average, magnitude);
            want_text = std::to_string(static_cast<double>(average));
            break;
          }
        }
        if (!ok) {
          Fail(where + " " + std::string(AggregateFunctionName(function)) + ": got " + Describe(value) +
               ", want " + want_text);
          return;
        }
      }
    }
  }

  // Devices and measures are catalog facts that may outlive their records
  // (expired, or written by a Write that failed), so listings are checked
  // between bounds: everything visible must be listed, and nothing may be
  // listed that no Write ever carried.
  void CheckListings() {
    const int64_t now = NowNanos();
    const std::map<std::string, std::set<std::string>> visible = model_.VisibleSeries(now);
    const auto& attempted = model_.attempted_series();

    auto devices = engine_->ListDevices(table_.c_str());
    if (!QuerySucceeded("ListDevices", devices)) return;
    std::map<std::string, std::vector<std::string>> listed;
    for (const DeviceInfo& device : *devices) {
      if (listed.count(device.device_id) != 0) {
        Fail("ListDevices lists " + Escape(device.device_id) + " twice");
        return;
      }
      listed[device.device_id] = device.measures;
      if (!std::is_sorted(device.measures.begin(), device.measures.end())) {
        Fail("ListDevices: measures of " + Escape(device.device_id) + " are not sorted");
        return;
      }
      for (const std::string& measure : device.measures) {
        if (attempted.count({device.device_id, measure}) == 0) {
          Fail("ListDevices lists series (" + Escape(device.device_id) + ", " + measure +
               ") that was never written");
          return;
        }
      }
    }
    for (const auto& [device, measures] : visible) {
      auto it = listed.find(device);
      if (it == listed.end()) {
        Fail("ListDevices leaves out " + Escape(device) + ", which has visible records");
        return;
      }
      for (const std::string& measure : measures) {
        if (std::find(it->second.begin(), it->second.end(), measure) == it->second.end()) {
          Fail("ListDevices leaves out measure " + measure + " of " + Escape(device));
          return;
        }
      }
    }

    auto measures = engine_->ListMeasures(table_.c_str());
    if (!QuerySucceeded("ListMeasures", measures)) return;
    std::map<std::string, std::set<std::string>> visible_devices_by_measure;
    std::map<std::string, std::set<std::string>> attempted_devices_by_measure;
    for (const auto& [device, names] : visible) {
      for (const std::string& name : names) visible_devices_by_measure[name].insert(device);
    }
    for (const auto& [device, name] : attempted) attempted_devices_by_measure[name].insert(device);
    std::map<std::string, std::map<std::string, FieldType>> visible_fields;
    for (const auto& [identity, record] : model_.records()) {
      if (!IsVisible(record.ttl, now)) continue;
      for (const Field& field : record.fields) {
        visible_fields[identity.measure_name][field.name] = TypeOf(field.value);
      }
    }
    std::set<std::string> listed_measures;
    for (const MeasureInfo& info : *measures) {
      listed_measures.insert(info.measure_name);
      auto attempted_fields = model_.attempted_fields().find(info.measure_name);
      if (attempted_fields == model_.attempted_fields().end()) {
        Fail("ListMeasures lists " + info.measure_name + ", which was never written");
        return;
      }
      for (const auto& [name, type] : info.fields) {
        if (attempted_fields->second.count({name, type}) == 0) {
          Fail("ListMeasures: " + info.measure_name + " has field " + name + " of type " +
               std::string(FieldTypeName(type)) + ", which no write carried");
          return;
        }
      }
      for (const auto& [name, type] : visible_fields[info.measure_name]) {
        auto it = info.fields.find(name);
        if (it == info.fields.end() || it->second != type) {
          Fail("ListMeasures: " + info.measure_name + " lacks field " + name + " of type " +
               std::string(FieldTypeName(type)));
          return;
        }
      }
      const size_t low = visible_devices_by_measure[info.measure_name].size();
      const size_t high = attempted_devices_by_measure[info.measure_name].size();
      if (info.devices < low || info.devices > high) {
        Fail("ListMeasures: " + info.measure_name + " reports " + std::to_string(info.devices) +
             " devices; between " + std::to_string(low) + " and " + std::to_string(high) + " expected");
        return;
      }
    }
    for (const auto& [name, devices_with_it] : visible_devices_by_measure) {
      if (listed_measures.count(name) == 0) {
        Fail("ListMeasures leaves out " + name + ", which has visible records");
        return;
      }
    }
  }

  AggregateQuery DrawAggregate(const std::string& device, const std::string& measure) {
    const int64_t now = NowNanos();
    AggregateQuery query;
    query.table = table_.c_str();
    query.device_id = device;
    query.measure_name = measure;
    query.field = "value";
    const int64_t steps[] = {kNanosPerSecond, 60 * kNanosPerSecond, 7 * 60 * kNanosPerSecond,
                             3600 * kNanosPerSecond, 86400 * kNanosPerSecond};
    query.step = steps[rng_.Index(5)];
    if (rng_.Percent(50)) {
      // Everything the run can have written.
      query.from = ManualClockEnv::kDefaultStartUnixNanos - window_nanos_ - 86400 * kNanosPerSecond;
      query.to = now + kNanosPerSecond;
    } else {
      query.from = now - rng_.Between(0, window_nanos_ + window_nanos_ / 2);
      query.to = query.from + rng_.Between(1, window_nanos_);
    }
    query.functions = {AggregateFunction::kMin, AggregateFunction::kMax,   AggregateFunction::kAvg,
                       AggregateFunction::kSum, AggregateFunction::kCount, AggregateFunction::kFirst,
                       AggregateFunction::kLast};
    for (size_t i = query.functions.size(); i > 1; --i)
      std::swap(query.functions[i - 1], query.functions[rng_.Index(i)]);
    query.functions.resize(static_cast<size_t>(rng_.Between(1, 7)));
    return query;
  }

  RangeQuery DrawRange() {
    const int64_t now = NowNanos();
    RangeQuery query;
    query.table = table_.c_str();
    query.device_id = DevicePool()[rng_.Index(DevicePool().size())];
    const int64_t measure_draw = rng_.Between(0, 9);
    if (measure_draw < 4) {
      query.measure_name = MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name;
    } else if (measure_draw < 6) {
      query.measure_prefix = rng_.Percent(70) ? "env#" : "status#";
    } else if (measure_draw == 6) {
      query.measure_name = "no-such-measure";
    }
    if (rng_.Percent(60)) {
      query.from = now - rng_.Between(0, window_nanos_);
      query.to = query.from + rng_.Between(1, window_nanos_);
    }
    query.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
    return query;
  }

  size_t DrawLimit() {
    const size_t limits[] = {0, 1, 3, 7, 50, 1000};
    return limits[rng_.Index(6)];
  }

  // A few queries of random kinds, each compared with the model.
  void RandomQueries() {
    Note("queries");
    const int64_t count = rng_.Between(1, 4);
    for (int64_t i = 0; i < count && !Failed() && engine_; ++i) {
      const std::string device = DevicePool()[rng_.Index(DevicePool().size())];
      switch (rng_.Between(0, 6)) {
        case 0: {
          // Known identities (some expired) and one that never existed.
          if (!model_.records().empty()) {
            auto it = model_.records().begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rng_.Index(model_.records().size())));
            CheckGet(it->first);
          }
          CheckGet(Identity{device, "power", NowNanos() + 17, {}});
          break;
        }
        case 1:
          CheckRange(DrawRange(), DrawLimit());
          break;
        case 2:
          CheckLatest(device, rng_.Percent(50) ? "" : MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name);
          break;
        case 3: {
          std::vector<std::string> devices;
          for (const std::string& d : DevicePool()) {
            if (rng_.Percent(60)) devices.push_back(d);
          }
          devices.push_back("never-seen-device");
          CheckLatestBatch(devices, rng_.Percent(50) ? "" : "env#temperature");
          break;
        }
        case 4:
          CheckAggregate(DrawAggregate(device, MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name));
          break;
        default:
          CheckListings();
          break;
      }
    }
  }

  // The full comparison after a recovery: every series in full and in
  // pages, point reads, latest readings, aggregates and listings.
  void CheckEverything() {
    if (!engine_) return;
    for (const std::string& device : DevicePool()) {
      RangeQuery all;
      all.table = table_.c_str();
      all.device_id = device;
      all.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
      CheckRange(all, 0);
      if (Failed() || !engine_) return;
      all.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
      CheckRange(all, static_cast<size_t>(rng_.Between(1, 40)));
      if (Failed() || !engine_) return;
      CheckLatest(device, "");
      if (Failed() || !engine_) return;
      AggregateQuery query = DrawAggregate(device, MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name);
      query.from = ManualClockEnv::kDefaultStartUnixNanos - window_nanos_ - 86400 * kNanosPerSecond;
      query.to = NowNanos() + kNanosPerSecond;
      CheckAggregate(query);
      if (Failed() || !engine_) return;
    }
    // Point reads of a sample of identities, expired ones included.
    const size_t stride = std::max<size_t>(1, model_.records().size() / 24);
    size_t index = 0;
    std::vector<Identity> sample;
    for (const auto& [identity, record] : model_.records()) {
      if (index++ % stride == 0) sample.push_back(identity);
    }
    for (const Identity& identity : sample) {
      CheckGet(identity);
      if (Failed() || !engine_) return;
    }
    std::vector<std::string> devices = DevicePool();
    devices.push_back("never-seen-device");
    CheckLatestBatch(devices, "");
    if (Failed() || !engine_) return;
    CheckListings();
  }


  const std::string table_;
  const int64_t window_nanos_;
  Rng rng_;
  std::unique_ptr<Engine> engine_;
  ReferenceModel model_;
};

}  // namespace cairn::crash
