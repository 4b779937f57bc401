#!/usr/bin/env bash
# adya and AWDIT side by side with harness, one process per history and
# tool under `/usr/bin/time` (wall, user, sys, peak RSS, verdict),
# interleaved (the order alternates run by run), RUNS runs each (default 3):
#  1. list-append histories of LA_SIZES transactions (default
#     "100000 1000000"), serializable at completion, from the checker's
#     gen_history (seed 1): `adya check -m list-append FILE` vs
#     `harness check FILE` (strict serializable, the default);
#  2. AWDIT-generated Plume histories in CORPUS (default OUT/corpus):
#     `awdit check -i LEVEL FILE` vs `harness check FILE -c MODEL`, the level
#     read from the file name (`*read-committed*`, `*read-atomic*`, else
#     causal) and the model its equal in harness: AWDIT's read committed
#     has session order, `RC` (strong-session-read-committed); read-atomic;
#     causal (transactional, causal-cerone). Missing ones are generated with `awdit generate -e EVENTS -i
#     LEVEL` for AWDIT_EVENTS (default "200 2000 2000000"; causal is left
#     out above 400,000 events: AWDIT's generator is superlinear there).
#     AWDIT's generator takes no seed: keep CORPUS to compare runs.
#
#   docs/peers/adya-awdit-bench.sh HARNESS [OUT]
#
# HARNESS: the harness binary (`cargo build --release -p harness`); OUT:
# the results folder (default adya-awdit-bench). Environment:
#   ADYA   adya's binary (required for part 1; crates.io: adya 0.1.0)
#   AWDIT  AWDIT's binary (required for part 2; you build it yourself)
#   GEN    gen_history (default target/release/examples/gen_history:
#          `cargo build --release -p checker --example gen_history`)
#   SKIP   "adya" or "awdit": leave that part out
# Writes OUT/runs.tsv and prints docs/peers/summarize.sh's summary.
set -euo pipefail

HARNESS=$(readlink -f "${1:?usage: adya-awdit-bench.sh HARNESS [OUT]}")
OUT=${2:-adya-awdit-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
GEN=${GEN:-target/release/examples/gen_history}
LA_SIZES=${LA_SIZES:-100000 1000000}
AWDIT_EVENTS=${AWDIT_EVENTS:-200 2000 2000000}
RUNS=${RUNS:-3}
SKIP=${SKIP:-}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
CORPUS=${CORPUS:-$OUT/corpus}
TSV=$OUT/runs.tsv
[ -f "$TSV" ] || printf 'tool\tfile\twall_s\tuser_s\tsys_s\tpeak_kb\tverdict\texit\n' >"$TSV"

# run TOOL FILE LEVEL: one timed run, appended to runs.tsv. harness's
# verdict is its exit code; adya prints "FILE<TAB>true|false|unknown";
# AWDIT exits 0 either way and prints "Consistent." or "Inconsistent.".
run() {
    local tool=$1 file=$2 level=$3 t=$OUT/time.txt log=$OUT/last-$1.log rc verdict
    local cmd
    case $tool in
        adya) cmd=("$ADYA" check -m list-append "$file") ;;
        awdit) cmd=("$AWDIT" check -i "$level" "$file") ;;
        harness) cmd=("$HARNESS" check "$file")
            case $level in
                strict-serializable) ;;
                read-committed) cmd+=(-c RC) ;;
                *) cmd+=(-c "$level") ;;
            esac ;;
    esac
    set +e
    /usr/bin/time -f "%e %U %S %M" -o "$t" "${cmd[@]}" >"$log" 2>&1
    rc=$?
    set -e
    case $tool in
        adya) verdict=$(awk -F'\t' 'NF == 2 { print ($2 == "true" ? "valid" : $2 == "false" ? "invalid" : $2) }' "$log") ;;
        awdit) verdict=$(grep -q '^Inconsistent' "$log" && echo invalid || { grep -q '^Consistent' "$log" && echo valid; } || true) ;;
        harness) case $rc in 0) verdict=valid ;; 1) verdict=invalid ;; 2) verdict=unknown ;; *) verdict=error ;; esac ;;
    esac
    read -r wall user sys kb < <(tail -1 "$t")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$(basename "$file")" \
        "$wall" "$user" "$sys" "$kb" "${verdict:-error}" "$rc" | tee -a "$TSV"
}
both() { # PEER FILE LEVEL N
    if [ $(($4 % 2)) = 0 ]; then run "$1" "$2" "$3"; run harness "$2" "$3"
    else run harness "$2" "$3"; run "$1" "$2" "$3"; fi
}

echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
n=0
if [ "$SKIP" != adya ]; then
    : "${ADYA:?set ADYA to the adya binary, or SKIP=adya}"
    for size in $LA_SIZES; do
        f=$OUT/la-ser-$size.jsonl
        [ -f "$f" ] || "$GEN" --txns "$size" --out "$f" >/dev/null
        for _ in $(seq "$RUNS"); do n=$((n + 1)); both adya "$f" strict-serializable $n; done
    done
    echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
fi
if [ "$SKIP" != awdit ]; then
    : "${AWDIT:?set AWDIT to the AWDIT binary, or SKIP=awdit}"
    mkdir -p "$CORPUS"
    for e in $AWDIT_EVENTS; do
        for level in read-committed read-atomic causal; do
            [ "$level" = causal ] && [ "$e" -gt 400000 ] && continue
            f=$CORPUS/e$e-$level.txt
            [ -f "$f" ] || "$AWDIT" generate -e "$e" -i "$level" "$f" >/dev/null
        done
    done
    for f in "$CORPUS"/*.txt; do
        case $f in *read-committed*) level=read-committed ;; *read-atomic*) level=read-atomic ;;
            *) level=causal ;; esac
        for _ in $(seq "$RUNS"); do n=$((n + 1)); both awdit "$f" "$level" $n; done
    done
    echo "# $(date -u +%FT%TZ) $(uptime)" >>"$OUT/load.txt"
fi
"$HERE/summarize.sh" "$TSV"
