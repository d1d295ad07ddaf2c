// An Engine that forwards every call to another engine; tests derive from it
// and override the one call they want to change (as EnvWrapper does for Env).
// Header-only so that cairn_test_support need not link the core.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cairn/core/engine.h"

namespace cairn {

class ForwardingEngine : public Engine {
 public:
  // `target` must outlive this engine.
  explicit ForwardingEngine(Engine* target) : target_(target) {}
  Engine* target() const { return target_; }

  Status CreateTable(const std::string& name, const TableOptions& options) override {
    return target_->CreateTable(name, options);
  }
  Status AlterTable(const std::string& name, const TableOptions& options) override {
    return target_->AlterTable(name, options);
  }
  Status DropTable(const std::string& name) override { return target_->DropTable(name); }
  Result<std::vector<TableInfo>> ListTables() override { return target_->ListTables(); }
  Result<TableInfo> GetTable(const std::string& name) override { return target_->GetTable(name); }
  Result<WriteResult> Write(const std::string& table, const std::vector<Record>& records) override {
    return target_->Write(table, records);
  }
  Result<WriteResult> WriteReceived(const std::string& table, const std::vector<Record>& records) override {
    return target_->WriteReceived(table, records);
  }
  Result<std::optional<RecordRow>> Get(const std::string& table, const std::string& device_id,
                                       const std::string& measure_name, int64_t timestamp,
                                       const TagMap& dimensions) override {
    return target_->Get(table, device_id, measure_name, timestamp, dimensions);
  }
  Result<RangeResult> Range(const RangeQuery& query) override { return target_->Range(query); }
  Result<ColumnarRangeResult> RangeColumnar(const RangeQuery& query) override {
    return target_->RangeColumnar(query);
  }
  Result<std::vector<RecordRow>> Latest(const std::string& table, const std::string& device_id,
                                        const std::string& measure_name, const TagMap& tags) override {
    return target_->Latest(table, device_id, measure_name, tags);
  }
  Result<std::vector<RecordRow>> LatestBatch(const std::string& table,
                                             const std::vector<std::string>& device_ids,
                                             const std::string& measure_name, const TagMap& tags) override {
    return target_->LatestBatch(table, device_ids, measure_name, tags);
  }
  Result<AggregateResult> Aggregate(const AggregateQuery& query) override {
    return target_->Aggregate(query);
  }
  Result<std::vector<DeviceInfo>> ListDevices(const std::string& table) override {
    return target_->ListDevices(table);
  }
  Result<std::vector<MeasureInfo>> ListMeasures(const std::string& table) override {
    return target_->ListMeasures(table);
  }
  Result<ChangeBatch> ReadChanges(const std::string& table, uint64_t after_lsn, uint64_t through_lsn,
                                  size_t max_records) override {
    return target_->ReadChanges(table, after_lsn, through_lsn, max_records);
  }
  Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table, const LsnRangeSet& confirmed) override {
    return target_->SummarizeUnsynced(table, confirmed);
  }
  Result<std::vector<SyncLedger>> LoadSyncLedgers() override { return target_->LoadSyncLedgers(); }
  Status SaveSyncLedger(const SyncLedger& ledger) override { return target_->SaveSyncLedger(ledger); }
  Status SealAll() override { return target_->SealAll(); }
  Status Maintain() override { return target_->Maintain(); }
  EngineStats Stats() override { return target_->Stats(); }
  SyncQuotaStatus QuotaStatus() override { return target_->QuotaStatus(); }
  EngineHealth Health() override { return target_->Health(); }
  ClockStatus Clock() override { return target_->Clock(); }
  FlashWearStatus FlashWear() override { return target_->FlashWear(); }
  Status Close() override { return target_->Close(); }

 private:
  Engine* target_;
};

}  // namespace cairn
