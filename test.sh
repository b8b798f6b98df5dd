#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (apt), builds yoloflow and runs every test.
# Usage: ./test.sh [doctest options, e.g. -tc="*letterbox*"]
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup-debian.sh
start=$(date +%s)
./scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"

log=$(mktemp)
set +e
( cd build && ctest -V --timeout 1800 ) 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$#" -gt 0 ]; then ./build/bin/yoloflow_tests "$@"; rc=$?; fi
set -e
# One closing line with the test-case counts of the doctest binary.
summary=$(grep -h "test cases:" "$log" | tail -n 1 || true)
passed=$(echo "$summary" | sed -n 's/.*| *\([0-9]*\) passed.*/\1/p')
failed=$(echo "$summary" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
skipped=$(echo "$summary" | sed -n 's/.*| *\([0-9]*\) skipped.*/\1/p')
# The failing checks again, at the end where a truncated log still shows them.
if [ "$rc" -ne 0 ]; then
  awk '/^(1: )?TEST CASE:/ {tc=$0} /ERROR:/ {print tc; print; getline; print}' "$log" | head -n 60
fi
rm -f "$log"
if [ -n "$passed" ]; then
  echo "tests: ${passed} passed, ${failed:-0} failed, ${skipped:-0} skipped"
fi
exit $rc
