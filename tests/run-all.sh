#!/usr/bin/env bash
# cairn's whole test suite, from a fresh Debian bookworm machine (run as root):
#
#   bash tests/run-all.sh
#
# Installs what is missing (toolchains/install-deps.sh), then for each preset
# configures, builds and runs ctest, printing ctest's summary:
#   host       every test: unit, crash, integration (real pty, processes)
#   host-asan  unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   tsan       the concurrency tests under ThreadSanitizer (tests/tsan)
#   aarch64    unit and crash tests cross-compiled, run under qemu-aarch64
#   armhf      unit and crash tests cross-compiled, run under qemu-arm
#   clang      every target built by clang with -Wthread-safety -Werror (the
#              lock annotations checked), then the unit tests
#   fuzz       every libFuzzer target for a short run over its seed corpus
# then two steps of their own:
#   system     the gateway image of each cross build booted under
#              qemu-system (tests/system; `virt` for arm64 and armhf,
#              `raspi3b` for arm64): the UART shell, HTTP, sync to the
#              cloud side, power cuts (CAIRN_POWER_CUTS=N, default 5)
#   package    the .deb packages: lintian, install, upgrade and purge in a
#              fresh bookworm root (tests/package/run.sh; needs host)
# Exits non-zero if anything fails. CAIRN_PRESETS="host armhf" runs a subset
# (the system step runs for the cross presets in it, the package step when
# host is in it).
set -uo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
presets=${CAIRN_PRESETS:-"host host-asan tsan clang aarch64 armhf fuzz"}
jobs=$(nproc)
log_dir="$root/build/test-logs"

step() { printf '\n==== %s ====\n' "$*"; }

if [ "$(id -u)" -eq 0 ]; then
  step "dependencies"
  bash toolchains/install-deps.sh || { echo "run-all: dependency installation failed" >&2; exit 1; }
else
  echo "run-all: not root, assuming toolchains/install-deps.sh has been run" >&2
fi

mkdir -p "$log_dir"
failed=()
built=()

# Adds the counts of a ctest summary line in log $1 to the totals.
count_tests() {
  local summary n_total n_failed
  summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1)
  [ -n "$summary" ] || return 0
  n_total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  n_failed=$(sed -E 's/.*, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
  total_passed=$((total_passed + n_total - n_failed))
  total_failed=$((total_failed + n_failed))
}
total_passed=0
total_failed=0
started=$(date +%s)
for preset in $presets; do
  step "$preset: configure and build"
  preset_started=$(date +%s)
  if ! cmake --preset "$preset" >"$log_dir/$preset-configure.log" 2>&1; then
    tail -30 "$log_dir/$preset-configure.log"
    failed+=("$preset (configure)")
    continue
  fi
  if ! cmake --build --preset "$preset" -j "$jobs" >"$log_dir/$preset-build.log" 2>&1; then
    grep -E 'error|FAILED' "$log_dir/$preset-build.log" | head -40
    failed+=("$preset (build)")
    continue
  fi
  # A cross build must really produce ARM code.
  case "$preset" in
    aarch64) want='ARM aarch64' ;;
    armhf) want='ARM, EABI5.*ld-linux-armhf' ;;
    *) want='' ;;
  esac
  if [ -n "$want" ]; then
    description=$(file "build/$preset/firmware/cairnd")
    echo "$description"
    if ! grep -Eq "$want" <<<"$description"; then
      echo "run-all: build/$preset/firmware/cairnd is not the expected architecture" >&2
      failed+=("$preset (architecture)")
    fi
  fi
  step "$preset: test"
  ctest --preset "$preset" 2>&1 | tee "$log_dir/$preset-test.log"
  rc=${PIPESTATUS[0]}
  count_tests "$log_dir/$preset-test.log"
  [ "$rc" -eq 0 ] || failed+=("$preset (tests)")
  built+=("$preset")
  echo "$preset took $(( $(date +%s) - preset_started )) s"
done

# The gateway image of each cross build that built, booted under qemu-system.
system_logs=()
for preset in aarch64 armhf; do
  [[ " ${built[*]} " == *" $preset "* ]] || continue
  step "system: $preset image under qemu-system"
  step_started=$(date +%s)
  # Verbose: the tests print what the issue asks to see (boot-to-ready,
  # the power-cut table, memory in the guest), pass or fail.
  ctest --test-dir "build/$preset" -L system -V 2>&1 | tee "$log_dir/system-$preset-test.log"
  rc=${PIPESTATUS[0]}
  count_tests "$log_dir/system-$preset-test.log"
  [ "$rc" -eq 0 ] || failed+=("system-$preset (tests)")
  system_logs+=("system-$preset")
  echo "system-$preset took $(( $(date +%s) - step_started )) s"
done

if [[ " ${built[*]} " == *" host "* ]]; then
  step "package: build, lint, install, upgrade, purge"
  step_started=$(date +%s)
  bash tests/package/run.sh 2>&1 | tee "$log_dir/package-test.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then
    total_passed=$((total_passed + 1))
    echo "100% tests passed, 0 tests failed out of 1" >>"$log_dir/package-test.log"
  else
    total_failed=$((total_failed + 1))
    failed+=("package")
    echo "0% tests passed, 1 tests failed out of 1" >>"$log_dir/package-test.log"
  fi
  system_logs+=("package")
  echo "package took $(( $(date +%s) - step_started )) s"
fi

step "summary ($(( $(date +%s) - started )) s)"
for preset in $presets "${system_logs[@]}"; do
  line=$(grep -hE '[0-9]+% tests passed' "$log_dir/$preset-test.log" 2>/dev/null | tail -1)
  printf '%-15s %s\n' "$preset" "${line:-no tests ran}"
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[*]}"
  # A failure before ctest counted anything still fails the run.
  [ "$total_failed" -gt 0 ] || total_failed=${#failed[@]}
fi
echo "cairn: $total_passed passed, $total_failed failed"
[ ${#failed[@]} -eq 0 ]
