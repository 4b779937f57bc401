#!/usr/bin/env bash
# Porcupine and harness side by side on linearizability, one process per
# history and tool under `/usr/bin/time` (wall, user, sys, peak RSS,
# verdict), interleaved (the order alternates run by run):
#  1. single-key register histories from the checker's gen_register_log
#     (SIZES ops, default "50000 100000"; 10 processes, seed 1), RUNS runs
#     each (default 3);
#  2. Porcupine's own test files (its test_data/: the non-empty etcd logs
#     and the kv files), one run each.
#
#   docs/peers/porcupine-bench.sh HARNESS PORCUPINE_DIR [OUT]
#
# HARNESS: the harness binary (`cargo build --release -p harness`);
# PORCUPINE_DIR: a Porcupine checkout (revision 55508eb for the figures in
# BENCHMARKS.md) holding `porcupine.test`, a timing binary you build there
# yourself: this repository carries no code or recipe that builds a peer.
# Ours was a Go test in Porcupine's package that, for each path in the
# comma-separated PEER_FILES, checked the file as Porcupine's own tests do
# (`*.log`: its Jepsen etcd parser and etcd model; `*.txt`: its kv parser
# and kv model), parsing included as `harness check FILE` includes it, and
# printed "file<TAB>true|false<TAB>seconds"; it ran as
# `PEER_FILES=FILE ./porcupine.test -test.run '^TestPeerTiming$'`.
# OUT: the results folder (default porcupine-bench). Environment:
#   GEN   gen_register_log (default target/release/examples/gen_register_log:
#         `cargo build --release -p checker --example gen_register_log`)
# Writes OUT/runs.tsv and prints docs/peers/summarize.sh's summary.
set -euo pipefail

HARNESS=$(readlink -f "${1:?usage: porcupine-bench.sh HARNESS PORCUPINE_DIR [OUT]}")
P=$(readlink -f "${2:?usage: porcupine-bench.sh HARNESS PORCUPINE_DIR [OUT]}")
OUT=${3:-porcupine-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
GEN=${GEN:-target/release/examples/gen_register_log}
SIZES=${SIZES:-50000 100000}
RUNS=${RUNS:-3}

[ -x "$P/porcupine.test" ] || { echo "no timing binary $P/porcupine.test (see the header)" >&2; exit 2; }

mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
TSV=$OUT/runs.tsv
[ -f "$TSV" ] || printf 'tool\tfile\twall_s\tuser_s\tsys_s\tpeak_kb\tverdict\texit\n' >"$TSV"

# run TOOL FILE: one timed run, appended to runs.tsv. Porcupine runs in its
# folder (its parsers take the path as given).
run() {
    local tool=$1 file=$2 t=$OUT/time.txt log=$OUT/last-$1.log rc verdict
    set +e
    if [ "$tool" = porcupine ]; then
        (cd "$P" && PEER_FILES=$file /usr/bin/time -f "%e %U %S %M" -o "$t" \
            ./porcupine.test -test.run '^TestPeerTiming$' >"$log" 2>&1)
        rc=$?
        verdict=$(awk -F'\t' 'NF == 3 { print ($2 == "true" ? "valid" : "invalid") }' "$log")
    else
        /usr/bin/time -f "%e %U %S %M" -o "$t" "$HARNESS" check "$file" >"$log" 2>&1
        rc=$?
        case $rc in 0) verdict=valid ;; 1) verdict=invalid ;; 2) verdict=unknown ;; *) verdict=error ;; esac
    fi
    set -e
    read -r wall user sys kb < <(tail -1 "$t")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$(basename "$file")" \
        "$wall" "$user" "$sys" "$kb" "${verdict:-error}" "$rc" | tee -a "$TSV"
}
both() { # FILE N
    if [ $(($2 % 2)) = 0 ]; then run porcupine "$1"; run harness "$1"
    else run harness "$1"; run porcupine "$1"; fi
}

echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
n=0
for size in $SIZES; do
    [ "$RUNS" -gt 0 ] || break # RUNS=0: Porcupine's own files only
    f=$OUT/register-$size.log
    [ -f "$f" ] || "$GEN" "$size" 10 1 >"$f"
    for _ in $(seq "$RUNS"); do n=$((n + 1)); both "$f" $n; done
done
echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
for f in "$P"/test_data/jepsen/*.log "$P"/test_data/kv/*.txt; do
    [ -s "$f" ] || continue # etcd_095.log is empty (its cluster never started)
    n=$((n + 1)); both "$f" $n
done
echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
"$HERE/summarize.sh" "$TSV"
