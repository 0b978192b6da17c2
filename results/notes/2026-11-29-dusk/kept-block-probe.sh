#!/usr/bin/env bash
# Where GpuTest.GpuToCpuOutputsPackedInTheWalkKeepTheirBlockAlive fails: the engine's test binary
# with the test alone and after the suites that run before it, on every GPU, one GPU and two,
# with the driver warm-up on and off. Prints each case's verdict and its failures.
set -u
cd "$(dirname "$0")/../../.."
MTC_WERROR=ON MTC_TARGETS=mtc_engine_tests bash scripts/build.sh > /tmp/probe-build.log 2>&1 ||
  { tail -30 /tmp/probe-build.log; exit 1; }
t="${MTC_BUILD_DIR:-build}/tests/engine/mtc_engine_tests"
kept=GpuTest.GpuToCpuOutputsPackedInTheWalkKeepTheirBlockAlive
probe() {
  local name="$1"
  shift
  echo "=== $name"
  env "$@" 2>&1 | grep -aE "^\[  (PASSED|FAILED) |Failure|after copy|tests ran" | head -12
}
probe "alone, every GPU, 3 times" "$t" --gtest_filter="$kept" --gtest_repeat=3
probe "alone, GPU 0 only" CUDA_VISIBLE_DEVICES=0 "$t" --gtest_filter="$kept"
probe "after the differential test, every GPU" "$t" --gtest_filter="CopierDifferential*:$kept"
probe "GpuTest suite, every GPU" "$t" --gtest_filter='GpuTest.*'
probe "differential + GpuTest, GPU 0 only" CUDA_VISIBLE_DEVICES=0 "$t" --gtest_filter='CopierDifferential*:GpuTest.*'
probe "differential + GpuTest, GPUs 0,1" CUDA_VISIBLE_DEVICES=0,1 "$t" --gtest_filter='CopierDifferential*:GpuTest.*'
probe "differential + GpuTest, every GPU, no warm-up" MTC_DRIVER_WARMUP=0 "$t" --gtest_filter='CopierDifferential*:GpuTest.*'
probe "everything before GpuTest + it, every GPU" "$t" --gtest_filter="CopierFault*:Pack*:Pinned*:HostBlockCache*:ArrivalForecast*:Worker*:PoolScope*:ProcessSwitch*:Structure*:LeafRouter*:DeviceToHostRuns*:CopierCpu*:Staging*:Outputs*:ImplPool*:VersionPool*:DictStash*:PrefetchTest*:KeyInterner*:CopierDifferential*:UnsupportedInput*:$kept"
