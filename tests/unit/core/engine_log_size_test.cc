// The log during a long run: as chunks are sealed the log rolls and lets the
// sealed records go, so what it holds on disk stays about what is not sealed
// yet plus a bounded slack, instead of growing with everything written since
// the start. Measured on the files in <data_dir>/log over a steady write run.
#include <algorithm>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

class EngineLogSizeTest : public EngineFixture {
 protected:
  uint64_t LogBytesOnDisk() {
    uint64_t total = 0;
    auto names = clock_.ListDir(dir_.PathOf("log"));
    EXPECT_TRUE(names.ok());
    for (const std::string& name : *names) {
      auto size = clock_.FileSize(dir_.PathOf("log/" + name));
      if (size.ok()) total += *size;
    }
    return total;
  }
};

TEST_F(EngineLogSizeTest, TheLogHoldsWhatIsNotSealedPlusABoundedSlack) {
  // Small segments keep the run short; the slack is a sixteenth of one.
  options_.log_segment_bytes = 256 << 10;
  const uint64_t slack = options_.log_segment_bytes / 16;
  options_.durability = Durability::kOff;  // the log's shape does not depend on fsync
  options_.seal_records = 200;
  Reopen();
  CreateTable();

  // Four devices, one reading each per write, starting 50 writes apart: their
  // heads fill and are sealed at different times, so some head always holds
  // readings (the checkpoint never catches up with the log's end) while each
  // head's readings are sealed within 200 writes.
  const int writes = std::getenv("CAIRN_LONG_TESTS") ? 200000 : 12000;
  uint64_t per_reading = 0;
  uint64_t largest = 0, largest_bound = 0;
  for (int i = 0; i < writes; ++i) {
    std::vector<Record> batch;
    for (int d = 0; d < 4; ++d) {
      if (i >= d * 50) batch.push_back(Temperature("d" + std::to_string(d), Now() - kSecond + i, i * 0.5));
    }
    WriteOk(batch);
    if (i % 20 != 19) continue;
    if (i < 200) {
      // Nothing is sealed yet: the log holds everything written so far.
      const EngineStats stats = engine_->Stats();
      per_reading = (stats.log_bytes + stats.last_lsn - 1) / stats.last_lsn;
    }
    ASSERT_TRUE(engine_->Maintain().ok());
    const EngineStats stats = engine_->Stats();
    // What is not sealed yet: every LSN from the checkpoint on.
    const uint64_t unsealed = stats.last_lsn + 1 - stats.checkpoint_lsn;
    const uint64_t bound = unsealed * per_reading + 2 * slack;
    const uint64_t on_disk = LogBytesOnDisk();
    EXPECT_LE(on_disk, bound) << "after " << i + 1 << " writes, " << unsealed << " unsealed readings";
    if (on_disk > largest) {
      largest = on_disk;
      largest_bound = bound;
    }
  }
  const uint64_t written = engine_->Stats().last_lsn * per_reading;
  // The run wrote far more than the log ever held, and the log never grew to
  // a full segment.
  EXPECT_GT(written, 10 * largest) << "largest log " << largest << " bytes (bound " << largest_bound << ")";
  EXPECT_LT(largest, options_.log_segment_bytes);
}

}  // namespace
}  // namespace cairn::testing
