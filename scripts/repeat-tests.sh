#!/usr/bin/env bash
# Runs core test classes again and again, each round in a fresh JVM, and stops at the first failing round (its
# surefire reports are kept). Usage: scripts/repeat-tests.sh ROUNDS [TEST_PATTERN]
# TEST_PATTERN is surefire's -Dtest (default: every core test class but the Lincheck ones, which explore thousands of
# interleavings per run by themselves; repeat them with 'Lincheck*').
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?usage: scripts/repeat-tests.sh ROUNDS [TEST_PATTERN]}
pattern=${2:-'!Lincheck*'}
mvn -B -q -ntp install -DskipTests
mvn -B -q -ntp test-compile -pl gatling-executor
reports=gatling-executor/target/surefire-reports
log=gatling-executor/target/repeat-round.log
for ((i = 1; i <= rounds; i++)); do
  start=$(date +%s)
  rm -rf "$reports"
  if ! mvn -B -q -ntp surefire:test -pl gatling-executor -Dtest="$pattern" > "$log" 2>&1; then
    kept="gatling-executor/target/repeat-failed-round-$i"
    rm -rf "$kept" && cp -r "$reports" "$kept"
    echo "round $i of $rounds FAILED; log in $log, reports in $kept"
    grep -h -E "Tests run:.*(Fail|Err)[a-z]*: [1-9]|FAIL" "$reports"/*.txt || true
    exit 1
  fi
  tests=$(cat "$reports"/*.txt | awk '/^Tests run:/ {gsub(",", ""); n += $3} END {print n}')
  echo "round $i of $rounds: $tests tests passed in $(( $(date +%s) - start )) s"
done
rm -f "$log"
echo "all $rounds rounds passed"
