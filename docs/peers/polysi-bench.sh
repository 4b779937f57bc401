#!/usr/bin/env bash
# PolySI and harness side by side at snapshot isolation, one process per
# history and tool, interleaved (the order alternates file by file), each
# under `/usr/bin/time`: wall, user, sys, peak RSS, verdict.
#
#   docs/peers/polysi-bench.sh HARNESS HISTORIES [OUT]
#
# HARNESS: the harness binary (`cargo build --release -p harness`);
# HISTORIES: a PolySIHistories checkout (the artifact's histories:
# fig7/<shape>/hist-NNNNN/history.bincode, violations/); OUT: the folder for
# the results (default: polysi-bench). Environment:
#   POLYSI    a command running PolySI's `audit` (required; you build PolySI
#             yourself: this repository carries no code or recipe that
#             builds a peer. Ours: the PVLDB 2023 artifact @f16891b with
#             MonoSAT @55af2fb and OpenJDK 17, run as `java -cp … Main`,
#             passing POLYSI_JAVA_OPTS to java: the 100k register history
#             needs more than the default heap, a quarter of RAM, e.g. -Xmx12g)
#   SAT_BENCH the checker's sat_bench example (default
#             target/release/examples/sat_bench); it writes the
#             session-order-only register histories (PolySI's text format)
#             of REG_SIZES transactions (default "10000 100000"), SI database,
#             aborted transactions left out
#   PICK      which histories of each fig. 7 shape, by position (default
#             "1 2 3": all three; "1" for a quick pass, "2 3" for the rest)
#   NO_EXTRA  set: fig. 7 only (no violations/, no register histories)
#   TIMEOUT   seconds per run before it is killed (default 600): `timeout`
#
# Writes OUT/runs.tsv (tool, file, wall s, user s, sys s, peak KB, verdict,
# exit code) and prints a per-shape summary (median and max of CPU = user +
# sys, and of peak RSS) with docs/peers/summarize.sh.
set -euo pipefail

HARNESS=$(readlink -f "${1:?usage: polysi-bench.sh HARNESS HISTORIES [OUT]}")
HIST=$(readlink -f "${2:?usage: polysi-bench.sh HARNESS HISTORIES [OUT]}")
OUT=${3:-polysi-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
POLYSI=${POLYSI:?set POLYSI to the command that runs PolySI (see the header)}
SAT_BENCH=${SAT_BENCH:-target/release/examples/sat_bench}
REG_SIZES=${REG_SIZES:-10000 100000}
PICK=${PICK:-1 2 3}
TIMEOUT=${TIMEOUT:-600}
mkdir -p "$OUT"
RUNS=$OUT/runs.tsv
[ -f "$RUNS" ] || printf 'tool\tfile\twall_s\tuser_s\tsys_s\tpeak_kb\tverdict\texit\n' >"$RUNS"

# run TOOL FILE FORMAT: one timed run, appended to runs.tsv.
run() {
    local tool=$1 file=$2 fmt=$3 t=$OUT/time.txt log=$OUT/last-$1.log rc verdict
    local cmd
    if [ "$tool" = polysi ]; then
        cmd=("$POLYSI" audit --type="$fmt" "$file")
    else
        [ "$fmt" = dbcop ] && fmt=dbcop-bincode
        # The complete check's time budget (30 s by default, wall time)
        # is TIMEOUT too, as PolySI has none.
        cmd=("$HARNESS" check "$file" --history-format "$fmt" -c snapshot-isolation
            --cycle-search-timeout "${TIMEOUT}s")
    fi
    set +e
    /usr/bin/time -f "%e %U %S %M" -o "$t" timeout "$TIMEOUT" "${cmd[@]}" >"$log" 2>&1
    rc=$?
    set -e
    if [ "$rc" = 124 ]; then
        verdict=timeout
    elif [ "$tool" = polysi ]; then
        if grep -q 'ACCEPT' "$log"; then verdict=valid
        elif grep -q 'REJECT' "$log"; then verdict=invalid
        else verdict=error; fi
    else
        case $rc in 0) verdict=valid ;; 1) verdict=invalid ;; 2) verdict=unknown ;; *) verdict=error ;; esac
    fi
    read -r wall user sys kb < <(tail -1 "$t")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "${file#"$HIST"/}" \
        "$wall" "$user" "$sys" "$kb" "$verdict" "$rc" | tee -a "$RUNS"
}

# both FILE FORMAT N: the two tools on one file, the first alternating.
both() {
    if [ $(($3 % 2)) = 0 ]; then run polysi "$1" "$2"; run harness "$1" "$2"
    else run harness "$1" "$2"; run polysi "$1" "$2"; fi
}

echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
n=0
for shape in "$HIST"/fig7/*/; do
    k=0
    for f in "$shape"hist-*/history.bincode; do
        k=$((k + 1))
        case " $PICK " in *" $k "*) ;; *) continue ;; esac
        n=$((n + 1))
        both "$f" dbcop $n
    done
done
echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
[ -n "${NO_EXTRA:-}" ] && { "$HERE/summarize.sh" "$RUNS"; exit 0; }
for f in "$HIST"/violations/*/*; do
    n=$((n + 1))
    case $f in *.bincode) both "$f" dbcop $n ;; *) both "$f" text $n ;; esac
done
# The session-order-only register histories (generated, PolySI's text format).
for size in $REG_SIZES; do
    # The generator's SI database aborts transactions (first committer
    # wins), written as txn -1, which PolySI's text loader rejects ("Invalid
    # format"): both tools read the committed transactions only.
    f=$OUT/register-si-$size.txt
    [ -f "$f" ] || SAT_BENCH_OUT=$f "$SAT_BENCH" "$size" 20 si si 1 text >/dev/null
    c=$OUT/register-si-$size-committed.txt
    [ -f "$c" ] || grep -v ',-1)$' "$f" >"$c"
    n=$((n + 1))
    both "$(readlink -f "$c")" text $n
done
echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
"$HERE/summarize.sh" "$RUNS"
