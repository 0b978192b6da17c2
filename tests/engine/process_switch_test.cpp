// The engine's process-wide on/off settings (process_switch.h): on until set, and the
// environment's value taken only while nothing set it.
#include "detail/process_switch.h"

#include <gtest/gtest.h>

namespace {

using mtc::detail::ProcessSwitch;

TEST(ProcessSwitch, OnUntilSet) {
  const ProcessSwitch fresh;
  EXPECT_TRUE(fresh.on());
}

TEST(ProcessSwitch, TheEnvironmentDecidesWhileNothingSetIt) {
  ProcessSwitch off_by_environment;
  off_by_environment.set_from_environment(false);
  EXPECT_FALSE(off_by_environment.on());
  // Read once: a later reading does not change it back.
  off_by_environment.set_from_environment(true);
  EXPECT_FALSE(off_by_environment.on());
}

TEST(ProcessSwitch, ASettingMadeFirstWinsOverTheEnvironment) {
  ProcessSwitch set_off;
  set_off.set(false);
  set_off.set_from_environment(true);
  EXPECT_FALSE(set_off.on());
  set_off.set(true);
  EXPECT_TRUE(set_off.on());
  set_off.set_from_environment(false);
  EXPECT_TRUE(set_off.on());
}

TEST(ProcessSwitch, SetAfterTheEnvironmentWins) {
  ProcessSwitch s;
  s.set_from_environment(false);
  s.set(true);
  EXPECT_TRUE(s.on());
}

}  // namespace
