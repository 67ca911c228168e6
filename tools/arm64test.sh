#!/usr/bin/env bash
# Runs engine/cpu's tests as an arm64 binary under qemu-user, so the NEON
# kernels (engine/cpu/*_arm64.s) are checked on an amd64 machine: every
# test with qemu's default CPU (which has the dot-product instructions,
# so the SDOT kernels run, and the tests call the SMULL ones directly
# too), then the kernel and whole-model tests on a Cortex-A57 (ARMv8.0: no
# SDOT, so the SMULL kernels run, and an instruction the CPU lacks would
# stop the run) and at STEPTHROUGH_CPU=generic (the Go kernels as arm64
# compiles them). Timings under qemu say nothing about arm64's speed
# (BENCHMARKS.md).
#
# Without qemu-aarch64-static (Debian: apt-get install qemu-user-static)
# it says so and skips; REQUIRE_QEMU=1 makes that a failure, as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."

qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
  msg="arm64 kernels: qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
  if [ "${REQUIRE_QEMU:-}" = 1 ]; then
    echo "REQUIRE_QEMU=1: $msg" >&2
    exit 1
  fi
  echo "$msg: skipped (REQUIRE_QEMU=1 makes this a failure)"
  exit 0
fi

# the tests that reach every kernel and every weight type's products,
# then the runner and the families against the float64 oracle and
# llama.cpp's logits (the slower oracle tests run in the first pass only)
kernels='NEON|Level|Kernels|Q8_0|Q5_0|Q80|KQ8|Legacy|Expf|Activations|Softmax|MatMulAllTypes|MatMulsShares|GemmABT'
models='RunnerMatches|FamiliesMatchNaive|LessonModelsMatchLlamaCpp|StoriesLogits'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
GOARCH=arm64 CGO_ENABLED=0 go test -c -o "$tmp/cpu.test" ./engine/cpu
echo "== engine/cpu's tests built for arm64 ($((SECONDS - start)) s)"
cd engine/cpu # where go test runs them: they read testdata and ../../../shared

# run runs the tests named by the pattern $2 with the environment $1 (as
# env takes it), after the kernel level the environment gives.
run() {
  local start=$SECONDS
  echo "== engine/cpu as arm64 under qemu: $1, tests $2"
  env $1 "$qemu" "$tmp/cpu.test" -test.run '^TestLevelWithinCap$' -test.v | grep 'kernels:'
  env $1 "$qemu" "$tmp/cpu.test" -test.count=1 -test.timeout 20m -test.run "$2"
  echo "   ($((SECONDS - start)) s)"
}

run "QEMU_CPU=max" .
run "QEMU_CPU=cortex-a57" "$kernels|$models"
run "STEPTHROUGH_CPU=generic" "Level|Kernels|MatMulAllTypes|RunnerMatches"
