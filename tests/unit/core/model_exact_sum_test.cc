#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>

#include "model/exact_sum.h"

namespace cairn {
namespace {

constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;
constexpr int64_t k2p53 = int64_t{1} << 53;

ExactSum SumOf(std::initializer_list<int64_t> values) {
  ExactSum sum;
  for (int64_t v : values) sum.Add(v);
  return sum;
}

TEST(ExactSumTest, AddsPastTheDoubleMantissaWithoutLoss) {
  EXPECT_EQ(SumOf({k2p53 + 1, 1}).ToInt64(), k2p53 + 2);
  EXPECT_EQ(SumOf({-(k2p53 + 1), -1}).ToInt64(), -(k2p53 + 2));
  EXPECT_EQ(SumOf({k2p53 + 1, -(k2p53 + 1), 7}).ToInt64(), 7);
  EXPECT_TRUE(SumOf({kMax, kMin}).FitsInt64());
  EXPECT_EQ(SumOf({kMax, kMin}).ToInt64(), -1);
  EXPECT_EQ(SumOf({kMax, 1, -1}).ToInt64(), kMax);  // passes 2^63 and comes back
}

TEST(ExactSumTest, CarriesIntoTheHighWordAndKnowsWhenItLeavesInt64) {
  const ExactSum two_max = SumOf({kMax, kMax});
  EXPECT_FALSE(two_max.FitsInt64());
  EXPECT_EQ(two_max.high(), 0);
  EXPECT_EQ(two_max.low(), uint64_t{0xfffffffffffffffe});
  EXPECT_EQ(two_max.ToString(), "18446744073709551614");
  const ExactSum two_min = SumOf({kMin, kMin});
  EXPECT_FALSE(two_min.FitsInt64());
  EXPECT_EQ(two_min.high(), -1);
  EXPECT_EQ(two_min.ToString(), "-18446744073709551616");
  EXPECT_FALSE(SumOf({kMax, 1}).FitsInt64());
  EXPECT_FALSE(SumOf({kMin, -1}).FitsInt64());
  EXPECT_TRUE(SumOf({kMin}).FitsInt64());
  EXPECT_EQ(SumOf({kMin}).ToString(), "-9223372036854775808");
  EXPECT_EQ(SumOf({}).ToString(), "0");
  EXPECT_EQ(SumOf({kMax}).ToString(), "9223372036854775807");
  EXPECT_EQ(ExactSum::FromWords(54210108624, 5076944270305263623u).ToString(),
            "1000000000000000000000000000007");
}

TEST(ExactSumTest, ProductMatchesRepeatedAddition) {
  std::mt19937_64 random(17);
  for (int round = 0; round < 200; ++round) {
    const int64_t value = static_cast<int64_t>(random());
    const uint64_t count = random() % 300;
    ExactSum added;
    for (uint64_t i = 0; i < count; ++i) added.Add(value);
    EXPECT_EQ(ExactSum::Product(value, count), added) << value << " x " << count;
  }
  // The extremes: |INT64_MIN| * (2^64 - 1) is the largest magnitude a count can reach.
  EXPECT_EQ(ExactSum::Product(kMin, UINT64_MAX).ToString(), "-170141183460469231722463931679029329920");
  EXPECT_EQ(ExactSum::Product(kMax, UINT64_MAX).ToString(), "170141183460469231704017187605319778305");
  EXPECT_EQ(ExactSum::Product(kMin, 2), SumOf({kMin, kMin}));
}

TEST(ExactSumTest, OrdersAcrossWords) {
  EXPECT_TRUE(SumOf({kMin, kMin}) < SumOf({kMin}));
  EXPECT_TRUE(SumOf({kMin}) < SumOf({-1}));
  EXPECT_TRUE(SumOf({-1}) < SumOf({0}));
  EXPECT_TRUE(SumOf({kMax}) < SumOf({kMax, 1}));
  EXPECT_TRUE(SumOf({kMax, 1}) <= SumOf({kMax, 1}));
  EXPECT_FALSE(SumOf({kMax, 2}) <= SumOf({kMax, 1}));
}

TEST(ExactSumTest, ToDoubleRoundsOnceToNearestEven) {
  EXPECT_EQ(SumOf({k2p53, 1}).ToDouble(), 9007199254740992.0);  // tie, to even
  EXPECT_EQ(SumOf({k2p53, 3}).ToDouble(), 9007199254740996.0);  // tie, to even (upwards)
  EXPECT_EQ(SumOf({kMax}).ToDouble(), 9223372036854775808.0);
  EXPECT_EQ(SumOf({kMin, kMin}).ToDouble(), -18446744073709551616.0);
  // 2^100 + 2^47 is halfway between two doubles: to even, down; one more and it goes up.
  const ExactSum half = ExactSum::FromWords(int64_t{1} << 36, uint64_t{1} << 47);
  EXPECT_EQ(half.ToDouble(), std::ldexp(1.0, 100));
  ExactSum above = half;
  above.Add(1);
  EXPECT_EQ(above.ToDouble(), std::ldexp(1.0, 100) + std::ldexp(1.0, 48));
  // Against the C library's correctly rounded decimal conversion.
  std::mt19937_64 random(53);
  for (int round = 0; round < 500; ++round) {
    ExactSum sum;
    const int terms = 1 + static_cast<int>(random() % 40);
    for (int i = 0; i < terms; ++i) sum.Add(static_cast<int64_t>(random()));
    EXPECT_EQ(sum.ToDouble(), std::strtod(sum.ToString().c_str(), nullptr)) << sum.ToString();
  }
}

TEST(ExactSumTest, DividedByRoundsTheExactQuotientOnce) {
  EXPECT_EQ(SumOf({k2p53 + 1, k2p53 + 2}).DividedBy(2), 9007199254740994.0);  // 2^53 + 1.5
  EXPECT_EQ(SumOf({k2p53, 1}).DividedBy(1), 9007199254740992.0);
  EXPECT_EQ(SumOf({kMax, kMax, kMax, kMax, kMax}).DividedBy(5), 9223372036854775808.0);
  EXPECT_EQ(SumOf({kMax, kMax, kMax, kMin, kMin}).DividedBy(5), 1.8446744073709553e+18);
  EXPECT_EQ(ExactSum::FromWords(1, 1).DividedBy(3), 6.148914691236517e+18);
  EXPECT_EQ(ExactSum::FromWords(-2, UINT64_MAX).DividedBy(3), -6.148914691236517e+18);  // -(2^64 + 1)
  EXPECT_EQ(ExactSum::Product(kMin, UINT64_MAX).DividedBy(UINT64_MAX), -9223372036854775808.0);
  EXPECT_EQ(SumOf({1}).DividedBy(UINT64_MAX), 5.421010862427522e-20);
  EXPECT_EQ(SumOf({(int64_t{1} << 62) + 1}).DividedBy((uint64_t{1} << 62) + 3), 1.0);
  EXPECT_EQ(SumOf({1}).DividedBy(3), 0.3333333333333333);
  EXPECT_EQ(SumOf({2}).DividedBy(3), 0.6666666666666666);
  EXPECT_EQ(ExactSum::FromWords(54210108624, 5076944270305263623u).DividedBy(1'000'000'000'003u),
            9.999999999970001e+17);
  EXPECT_EQ(SumOf({-7, 7}).DividedBy(4), 0.0);
}

}  // namespace
}  // namespace cairn
