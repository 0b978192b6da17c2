// The forecast of a worker pool's next copy, on made-up timelines. No GPU needed.
#include "detail/arrival_forecast.h"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>

namespace mtc::detail {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using Clock = ArrivalForecast::Clock;

const Clock::time_point kStart = Clock::time_point() + std::chrono::hours(1);

// Copies `interval` apart, each a first task and `tasks` - 1 more of the copy 100 us apart;
// returns the last copy's start.
Clock::time_point bursts(ArrivalForecast& forecast, Clock::time_point first, int count,
                         microseconds interval, int tasks = 1) {
  Clock::time_point start = first;
  for (int b = 0; b < count; ++b) {
    start = first + b * interval;
    forecast.record(start);
    for (int t = 1; t < tasks; ++t)
      forecast.record(start + t * microseconds(100), 1, /*starts_copy=*/false);
  }
  return start;
}

TEST(ArrivalForecast, NoneUntilEnoughBurstsCameRegularly) {
  ArrivalForecast forecast;
  EXPECT_FALSE(forecast.next());
  bursts(forecast, kStart, ArrivalForecast::kMinHistory, milliseconds(5));
  EXPECT_FALSE(forecast.next()) << "four bursts are three intervals";
  forecast.record(kStart + ArrivalForecast::kMinHistory * milliseconds(5));
  EXPECT_TRUE(forecast.next());
}

TEST(ArrivalForecast, RegularBurstsGiveAWindowAroundTheNext) {
  ArrivalForecast forecast;
  const Clock::time_point last = bursts(forecast, kStart, 10, milliseconds(5), /*tasks=*/3);
  EXPECT_EQ(forecast.bursts(), 10) << "a copy's tasks are one burst";
  const auto window = forecast.next();
  ASSERT_TRUE(window);
  EXPECT_EQ(window->wake_at, last + milliseconds(5) - ArrivalForecast::kLead);
  EXPECT_EQ(window->spin_until, last + milliseconds(5) + ArrivalForecast::kSlack);
  EXPECT_EQ(window->burst, 10);
  EXPECT_EQ(window->tasks, 3) << "the last burst queued three tasks";
}

TEST(ArrivalForecast, AWindowCountsTheTasksOfTheLastBurst) {
  ArrivalForecast forecast;
  const Clock::time_point last = bursts(forecast, kStart, 9, milliseconds(5));
  forecast.record(last + milliseconds(5));
  forecast.record(last + milliseconds(5) + microseconds(10), 3, false);   // submit_copies: three
  forecast.record(last + milliseconds(5) + microseconds(900), 2, false);  // late ones count too
  const auto window = forecast.next();
  ASSERT_TRUE(window);
  EXPECT_EQ(window->tasks, 6);
}

TEST(ArrivalForecast, TheWindowSpansTheShortestToTheLongestInterval) {
  ArrivalForecast forecast;
  Clock::time_point start = kStart;
  forecast.record(start);
  for (int jitter : {0, 300, 100, 400, 200, 0, 300, 100}) {
    start += milliseconds(3) + microseconds(jitter);
    forecast.record(start);
  }
  const auto window = forecast.next();
  ASSERT_TRUE(window);
  EXPECT_EQ(window->wake_at, start + milliseconds(3) - ArrivalForecast::kLead);
  EXPECT_EQ(window->spin_until, start + microseconds(3400) + ArrivalForecast::kSlack);
}

TEST(ArrivalForecast, IrregularBurstsGetNoneUntilTheOddIntervalIsForgotten) {
  ArrivalForecast forecast;
  Clock::time_point last = bursts(forecast, kStart, 10, milliseconds(5));
  ASSERT_TRUE(forecast.next());
  // One step 2 ms longer than the others: the spread is past kMaxSpread.
  last += milliseconds(7);
  forecast.record(last);
  for (int b = 1; b < ArrivalForecast::kHistory; ++b) {
    forecast.record(last + b * milliseconds(5));
    EXPECT_FALSE(forecast.next()) << "after " << b << " regular bursts";
  }
  forecast.record(last + ArrivalForecast::kHistory * milliseconds(5));
  EXPECT_TRUE(forecast.next()) << "the odd interval has left the history";
}

TEST(ArrivalForecast, CopiesStartedTogetherAreOneBurst) {
  // Several threads copying at once.
  ArrivalForecast forecast;
  for (int b = 0; b < 10; ++b) {
    for (int t = 0; t < 4; ++t)
      forecast.record(kStart + b * milliseconds(5) + t * microseconds(10));
  }
  EXPECT_EQ(forecast.bursts(), 10);
  const auto window = forecast.next();
  ASSERT_TRUE(window);
  EXPECT_EQ(window->tasks, 4);
}

TEST(ArrivalForecast, BackToBackCopiesAreOneBurstAndGetNone) {
  // A hot loop: copies closer together than kBurstGap.
  ArrivalForecast forecast;
  for (int t = 0; t < 1000; ++t) forecast.record(kStart + t * microseconds(300));
  EXPECT_EQ(forecast.bursts(), 1);
  EXPECT_FALSE(forecast.next());
}

TEST(ArrivalForecast, ACopysLaterTasksNeverStartABurst) {
  // A large GPU->CPU copy's output parts, milliseconds after it started.
  ArrivalForecast forecast;
  forecast.record(kStart);
  for (int t = 1; t < 100; ++t) forecast.record(kStart + t * milliseconds(1), 1, false);
  EXPECT_EQ(forecast.bursts(), 1);
}

TEST(ArrivalForecast, IntervalsLongerThanASecondGetNone) {
  ArrivalForecast forecast;
  bursts(forecast, kStart, 10, std::chrono::seconds(2));
  EXPECT_FALSE(forecast.next());
}

}  // namespace
}  // namespace mtc::detail
