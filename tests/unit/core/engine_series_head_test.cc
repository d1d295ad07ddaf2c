// SeriesHead (one block of columns per series) against a plain model, the
// schemas series share (SchemaPool), and the latest index while its record
// is the head's last entry.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/head/head.h"
#include "engine_test_util.h"

namespace cairn::testing {
namespace {

constexpr int64_t kT0 = 1'700'000'000 * kSecond;

struct ModelEntry {
  ChunkRecord record;
  uint64_t lsn = 0;
};

// A random value of the column's type, or absent.
Value RandomValue(std::mt19937_64& rng, FieldType type) {
  if (rng() % 5 == 0) return std::monostate{};
  switch (type) {
    case FieldType::kDouble:
      return static_cast<double>(rng() % 1000) / 8;
    case FieldType::kInt64:
      return static_cast<int64_t>(rng() % 100000) - 50000;
    case FieldType::kBool:
      return rng() % 2 == 0;
    case FieldType::kTimestamp:
      return Timestamp{static_cast<int64_t>(rng() % 1000000)};
    case FieldType::kString:
      // Past the small-string buffer now and then: heap bytes are counted.
      return std::string(rng() % 40, static_cast<char>('a' + rng() % 26));
  }
  return std::monostate{};
}

void ExpectSameAsModel(const SeriesHead& head, const std::map<int64_t, ModelEntry>& model,
                       const std::vector<ChunkField>& schema) {
  ASSERT_EQ(head.size(), model.size());
  size_t i = 0;
  for (const auto& [timestamp, entry] : model) {
    ASSERT_EQ(head.timestamp(i), timestamp);
    EXPECT_EQ(head.lsn(i), entry.lsn);
    const ChunkRecord got = head.Record(i, schema);
    EXPECT_EQ(got.version, entry.record.version) << i;
    EXPECT_EQ(got.ttl, entry.record.ttl) << i;
    ASSERT_EQ(got.values.size(), schema.size());
    for (size_t c = 0; c < schema.size(); ++c) {
      const Value want = c < entry.record.values.size() ? entry.record.values[c] : Value{};
      EXPECT_EQ(got.values[c], want) << "entry " << i << " column " << c;
    }
    ++i;
  }
}

// Inserts, rewrites, inserts before the end, widens the schema with every
// type and keeps random subsets, checking every entry after each step and
// that a copy is independent of its original.
TEST(SeriesHeadTest, HoldsWhatAModelHoldsThroughInsertsRewritesNewColumnsAndCompactions) {
  const std::vector<FieldType> types = {FieldType::kDouble, FieldType::kInt64, FieldType::kString, FieldType::kBool,
                                        FieldType::kTimestamp};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    SeriesHead head;
    std::map<int64_t, ModelEntry> model;
    std::vector<ChunkField> schema = {ChunkField{"f0", FieldType::kDouble}};
    uint64_t lsn = 1;
    for (int step = 0; step < 400; ++step) {
      const uint64_t op = rng() % 20;
      if (op == 0 && schema.size() < types.size()) {
        schema.push_back(ChunkField{"f" + std::to_string(schema.size()), types[schema.size()]});
      } else if (op == 1) {
        // Keep a random subset (a seal taking some entries out).
        std::vector<bool> keep(head.size());
        for (size_t i = 0; i < keep.size(); ++i) keep[i] = rng() % 3 != 0;
        if (rng() % 10 == 0) keep.assign(head.size(), false);  // every entry sealed
        size_t i = 0;
        for (auto it = model.begin(); it != model.end(); ++i) it = keep[i] ? std::next(it) : model.erase(it);
        head.Retain([&](size_t k) { return static_cast<bool>(keep[k]); });
      } else {
        ChunkRecord record;
        // Mostly newer than every entry, sometimes before the end or a rewrite.
        const int64_t newest = model.empty() ? 0 : (model.rbegin()->first - kT0) / kSecond;
        const int64_t second = rng() % 4 != 0 ? newest + 1 + static_cast<int64_t>(rng() % 3)
                                              : static_cast<int64_t>(rng() % static_cast<uint64_t>(newest + 1));
        record.timestamp = kT0 + second * kSecond;
        record.version = rng() % 8 == 0 ? rng() % 5 : 0;
        record.ttl = rng() % 8 == 0 ? static_cast<int64_t>(rng() % 1000) : 0;
        const size_t width = 1 + rng() % schema.size();  // a prefix of the schema
        for (size_t c = 0; c < width; ++c) record.values.push_back(RandomValue(rng, schema[c].type));
        const bool inserted = head.Upsert(record, lsn, schema);
        EXPECT_EQ(inserted, !model.count(record.timestamp));
        model[record.timestamp] = ModelEntry{record, lsn};
        ++lsn;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(head, model, schema)) << "seed " << seed << " step " << step;
      if (step % 50 == 0) {
        SeriesHead copy = head;
        ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(copy, model, schema));
        copy.Retain([](size_t) { return false; });
        EXPECT_TRUE(copy.empty());
        EXPECT_EQ(copy.bytes(), 0u);
        ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(head, model, schema));
      }
    }
    head.Retain([](size_t) { return false; });
    EXPECT_EQ(head.bytes(), 0u) << "an empty head holds no memory";
  }
}

TEST(SeriesHeadTest, AHeadOfFiveReadingsTakesOneSmallBlock) {
  SeriesHead head;
  const std::vector<ChunkField> schema = {ChunkField{"temperature", FieldType::kDouble},
                                          ChunkField{"humidity", FieldType::kDouble},
                                          ChunkField{"pressure", FieldType::kDouble}};
  for (int i = 0; i < 5; ++i) {
    ChunkRecord r;
    r.timestamp = kT0 + i * kSecond;
    r.values = {Value{20.0 + i}, Value{40.0}, Value{1013.0}};
    head.Upsert(r, static_cast<uint64_t>(i + 1), schema);
  }
  // Five entries of a timestamp, an LSN and three 8-byte values with their
  // presence bytes, in a block of at most six: no per-column arrays.
  EXPECT_LE(head.bytes(), 6 * (8 + 8 + 3 * 8) + 3 * 6 + 8 + 8);
}

TEST(SchemaPoolTest, SeriesOfOneKindShareOneSchemaAndAnUnheldOneIsSweptAway) {
  SchemaPool pool;
  std::vector<std::shared_ptr<const SeriesSchema>> held;
  for (int i = 0; i < 1000; ++i) {
    std::shared_ptr<const SeriesSchema> schema = SeriesSchema::Empty();
    schema = pool.Extend(*schema, ChunkField{"temperature", FieldType::kDouble});
    schema = pool.Extend(*schema, ChunkField{"humidity", FieldType::kDouble});
    held.push_back(schema);
  }
  EXPECT_EQ(held.front().get(), held.back().get());
  EXPECT_EQ(pool.size(), 1u);  // {temperature, humidity}: nothing holds {temperature} now
  EXPECT_EQ(held.front()->Find("humidity"), std::optional<size_t>(1));
  EXPECT_EQ(held.front()->Find("pressure"), std::nullopt);
  // The same names in another order, or another type, are another schema.
  auto other = pool.Extend(*pool.Extend(*SeriesSchema::Empty(), ChunkField{"humidity", FieldType::kDouble}),
                           ChunkField{"temperature", FieldType::kDouble});
  EXPECT_NE(other.get(), held.front().get());
  auto typed = pool.Extend(*SeriesSchema::Empty(), ChunkField{"temperature", FieldType::kInt64});
  EXPECT_NE(typed->fields(), held.front()->fields());
  // A client writing a new field name per record leaves schemas nobody
  // holds: they do not pile up.
  for (int i = 0; i < 10000; ++i) {
    pool.Extend(*held.front(), ChunkField{"once-" + std::to_string(i), FieldType::kDouble});
  }
  EXPECT_LE(pool.size(), 5u);
  // Wide schemas are searched by hash and answer as narrow ones do.
  std::shared_ptr<const SeriesSchema> wide = SeriesSchema::Empty();
  for (int i = 0; i < 40; ++i) wide = pool.Extend(*wide, ChunkField{"w" + std::to_string(i), FieldType::kBool});
  for (int i = 0; i < 40; ++i) EXPECT_EQ(wide->Find("w" + std::to_string(i)), std::optional<size_t>(i));
  EXPECT_EQ(wide->Find("w40"), std::nullopt);
}

// The latest index holds no copy while its record is the head's last entry,
// keeps one once a seal takes that entry out, and drops it again when the
// head's last entry is the latest once more.
TEST(SeriesHeadTest, TheLatestIndexFollowsItsRecordOutOfTheHeadAndBack) {
  Env* env = Env::Default();
  TableState table;
  auto owned = std::make_unique<Series>();
  Series& s = *owned;
  s.device_id = "d";
  s.measure_name = "env";
  s.AddField(table.schemas, "t", FieldType::kDouble);
  s.latest_known = true;
  table.series.emplace(s.KeyRef(), std::move(owned));
  Head head(env, SIZE_MAX, 1024);
  const auto at = [](int second, double value) {
    ChunkRecord r;
    r.timestamp = kT0 + second * kSecond;
    r.values = {Value{value}};
    return r;
  };
  head.Insert(s, at(1, 1.0), 1);
  head.Insert(s, at(2, 2.0), 2);
  EXPECT_TRUE(s.latest_in_head);
  EXPECT_EQ(s.latest, nullptr);
  ASSERT_TRUE(Head::Latest(s));
  EXPECT_EQ(Head::Latest(s)->values[0], Value{2.0});

  // A seal takes both out: the index keeps its own copy.
  head.RemoveSealed(s, {SealedEntry{kT0 + 1 * kSecond, 1}, SealedEntry{kT0 + 2 * kSecond, 2}});
  EXPECT_TRUE(s.head.empty());
  EXPECT_FALSE(s.latest_in_head);
  ASSERT_TRUE(Head::Latest(s));
  EXPECT_EQ(Head::Latest(s)->timestamp, kT0 + 2 * kSecond);
  EXPECT_EQ(Head::Latest(s)->values[0], Value{2.0});

  // A late record enters the head but is not the latest.
  head.Insert(s, at(0, 0.5), 3);
  EXPECT_FALSE(s.latest_in_head);
  EXPECT_EQ(Head::Latest(s)->values[0], Value{2.0});

  // A newer one is, and in the head: the copy goes.
  head.Insert(s, at(5, 5.0), 4);
  EXPECT_TRUE(s.latest_in_head);
  EXPECT_EQ(s.latest, nullptr);
  EXPECT_EQ(Head::Latest(s)->values[0], Value{5.0});

  // Sealing only the older entry leaves the latest in place.
  head.RemoveSealed(s, {SealedEntry{kT0, 3}});
  EXPECT_TRUE(s.latest_in_head);
  EXPECT_EQ(s.latest, nullptr);
  EXPECT_EQ(Head::Latest(s)->values[0], Value{5.0});

  // A rewrite of the latest timestamp (a newer version) is the latest.
  ChunkRecord rewrite = at(5, 6.0);
  rewrite.version = 1;
  head.Insert(s, rewrite, 5);
  EXPECT_EQ(Head::Latest(s)->values[0], Value{6.0});
  EXPECT_EQ(Head::Latest(s)->version, 1u);
}

}  // namespace
}  // namespace cairn::testing
