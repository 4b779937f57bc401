#!/usr/bin/env bash
# Per-group summary of a runs.tsv written by polysi-bench.sh or
# porcupine-bench.sh: for each group and tool, the number of runs, median
# and max CPU seconds (user + sys), median and max wall seconds, median and
# max peak RSS (MB), total CPU, and the verdicts counted. A fig. 7 file's
# group is its shape (the folder above hist-NNNNN); Porcupine's etcd logs
# and kv files are one group each; any other file is its own group. Then
# every file whose tools' verdicts differ.
# Needs gawk (asort).
#   docs/peers/summarize.sh runs.tsv
set -euo pipefail
gawk -F'\t' '
function med(a, n,   b) { n = asort(a, b); return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
function mx(a,   k, m) { m = 0; for (k in a) if (a[k] + 0 > m) m = a[k] + 0; return m }
NR == 1 { next }
{
    g = $2
    if (g ~ /\/hist-[0-9]+\//) { sub(/\/hist-[0-9]+\/.*$/, "", g) }
    else if (g ~ /^etcd_[0-9]+\.log$/) g = "etcd_*.log"
    else if (g ~ /^c[0-9]+-(ok|bad)\.txt$/) g = "kv c*-ok|bad.txt"
    fv[$2][$1] = $7
    key = g SUBSEP $1
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    i = ++cnt[key]
    cpu[key][i] = $4 + $5; sum[key] += $4 + $5; wall[key][i] = $3; rss[key][i] = $6 / 1024
    verd[key][$7]++
}
END {
    printf "%-40s %-9s %3s %10s %10s %10s %10s %9s %9s %9s  %s\n", "group", "tool", "n",
        "cpu_med", "cpu_max", "wall_med", "wall_max", "MB_med", "MB_max", "cpu_sum", "verdicts"
    for (j = 1; j <= nk; j++) {
        key = order[j]; split(key, p, SUBSEP)
        v = ""; for (x in verd[key]) v = v x "=" verd[key][x] " "
        printf "%-40s %-9s %3d %10.2f %10.2f %10.2f %10.2f %9.0f %9.0f %9.2f  %s\n", p[1], p[2], cnt[key],
            med(cpu[key]), mx(cpu[key]), med(wall[key]), mx(wall[key]), med(rss[key]), mx(rss[key]), sum[key], v
    }
    for (f in fv) {
        first = ""; differ = 0; line = ""
        for (t in fv[f]) { line = line " " t "=" fv[f][t]; if (first == "") first = fv[f][t]; else if (fv[f][t] != first) differ = 1 }
        if (differ) print "verdicts differ: " f line
    }
}' "$1"
