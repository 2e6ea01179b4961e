#!/usr/bin/env bash
# Runs comparison rows with every peer in one JVM (as a full run does), then with each named peer alone in a JVM of its
# own, and repeats the pair, so that what a JVM's history does to a peer's figures can be told from the host's drift.
# Usage: scripts/peer-jvms.sh ROUNDS OUT_DIR [SCENARIOS [PEERS]] [-- JVM_OPTIONS...]
# SCENARIOS is the runner's --only list (default: the five throughput rows); PEERS the --peers fragments run alone.
# Needs benchmarks/target/benchmarks.jar (mvn -B -q install -DskipTests). Each run's console output is kept in OUT_DIR:
# shared-N.txt and alone-N-PEER.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
usage='usage: scripts/peer-jvms.sh ROUNDS OUT_DIR [SCENARIOS [PEERS]] [-- JVM_OPTIONS...]'
args=()
while (($# > 0)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
if (($# > 0)); then shift; fi # what is left after -- goes to java
((${#args[@]} >= 2 && ${#args[@]} <= 4)) || { echo "$usage" >&2; exit 2; }
rounds=${args[0]}
out=${args[1]}
only=${args[2]:-tiny-uniform,tiny-zipf,tiny-hot,producers-8,producers-32}
peers=${args[3]:-gatlingexecutor,netty,sofajraft,guava,bookkeeper}
jar=benchmarks/target/benchmarks.jar
[[ -f $jar ]] || { echo "no $jar: run mvn -B -q install -DskipTests first" >&2; exit 2; }
mkdir -p "$out"
for ((i = 1; i <= rounds; i++)); do
  echo "round $i: every peer in one JVM ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  java "$@" -jar "$jar" --full --only="$only" --out="$out/shared-$i.html" > "$out/shared-$i.txt" 2>&1
  for p in ${peers//,/ }; do
    echo "round $i: $p alone ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
    java "$@" -jar "$jar" --full --only="$only" --peers="$p" --out="$out/alone-$i-$p.html" > "$out/alone-$i-$p.txt" 2>&1
  done
done
