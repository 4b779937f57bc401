#!/usr/bin/env bash
# Runs the README's simulator commands (tests/run_sim_readme.rs runs the
# same ones) for seeds 1..N and counts, per command, the runs whose faults
# took effect and the verdicts: how often each --sim-bug is found.
# Usage: tools/sim-readme-seeds.sh [N] [HARNESS]   (default 10, target/debug/harness)
set -u
n=${1:-10}
h=${2:-target/debug/harness}
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
cmds=(
  "--nemesis partition,kill,pause,clock"
  "--sim-bug local-ack --nemesis partition"
  "--sim-bug lose-unsynced --nemesis kill --kill-targets all"
  "--sim-bug skewed-read --nemesis clock"
)
for c in "${cmds[@]}"; do
  valid=0 invalid=0 unknown=0 nofault=0 other=0
  for seed in $(seq 1 "$n"); do
    # shellcheck disable=SC2086
    out=$("$h" run --db sim --sim-replicas 3 $c --store "$store" --seed "$seed" 2>&1)
    code=$?
    if grep -q "no fault took effect" <<<"$out"; then nofault=$((nofault + 1)); fi
    case $code in
      0) valid=$((valid + 1)) ;;
      1) invalid=$((invalid + 1)) ;;
      2) unknown=$((unknown + 1)) ;;
      *) other=$((other + 1)) ;;
    esac
  done
  echo "harness run --db sim --sim-replicas 3 $c: $n seeds: valid $valid, invalid (found) $invalid, unknown $unknown, no fault $nofault, other $other"
done
