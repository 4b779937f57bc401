#!/bin/bash
# pgbench TPC-B-like, 8 clients, on a plain data dir vs the lossy filesystem,
# interleaved RUNS times (plain, lossy, plain, lossy, …), then the ratio of
# the medians. PGOPT="-c fsync=off" measures the FUSE cost alone.
# Env: H (harness binary), T (seconds per run, 20), RUNS (3), PORT (5499),
# R (scratch directory, /tmp/lzb; removed at the end); BASE (another
# harness binary: its lossy runs are interleaved too, as "base").
set -u
H=$(realpath ${H:-target/release/harness}); [ -n "${BASE:-}" ] && BASE=$(realpath $BASE)
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
R=${R:-/tmp/lzb}; P=${PORT:-5499}
rm -rf $R; mkdir -p $R/sock; chown -R postgres $R
run() {
  local mode=$1 d=$R/$1/data bin=$H
  [ $mode = base ] && bin=$BASE
  rm -rf $R/$mode; mkdir -p $R/$mode; chown postgres $R/$mode
  if [ $mode != plain ]; then
    install -d -o postgres -m 700 $R/$mode/data.lossy $R/$mode/data.lossy/data $d
    (setsid $bin lossyfs mount $R/$mode/data.lossy/data $d --socket $R/$mode/ctl.sock </dev/null >$R/$mode/fs.log 2>&1 & echo $! > $R/$mode/pid)
    sleep 1
    mountpoint -q $d || { echo "$mode: lossyfs mount failed: $(cat $R/$mode/fs.log)"; exit 1; }
  fi
  cd /tmp
  runuser -u postgres -- $B/initdb -D $d -U postgres >/dev/null 2>&1
  runuser -u postgres -- $B/pg_ctl -D $d -l $R/$mode/pg.log -o "-p $P -k $R/sock -c dynamic_shared_memory_type=posix -c recovery_init_sync_method=fsync -c listen_addresses='' ${PGOPT:-}" -W start >/dev/null
  sleep 2
  runuser -u postgres -- $B/pgbench -h $R/sock -p $P -U postgres -i -s 10 postgres >/dev/null 2>&1
  local tps
  tps=$(runuser -u postgres -- $B/pgbench -h $R/sock -p $P -U postgres -c 8 -j 2 -T ${T:-20} postgres 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  echo "$mode: tps $tps"
  echo "$tps" >> $R/$mode.tps
  runuser -u postgres -- $B/pg_ctl -D $d -m immediate stop >/dev/null
  if [ $mode != plain ]; then
    grep -i "cache full" $R/$mode/fs.log | tail -1
    fusermount3 -u $d; sleep 0.5
  fi
}
for i in $(seq ${RUNS:-3}); do
  run plain
  run lossy
  [ -n "${BASE:-}" ] && run base
done
med() { sort -n $1 | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for m in plain lossy base; do [ -f $R/$m.tps ] && echo "$m: $(sort -n $R/$m.tps | tr '\n' ' ')"; done
echo "median plain $(med $R/plain.tps) lossy $(med $R/lossy.tps) ratio $(awk -v a=$(med $R/lossy.tps) -v b=$(med $R/plain.tps) 'BEGIN {printf "%.2f", a/b}')"
[ -n "${BASE:-}" ] && echo "median base $(med $R/base.tps) ratio $(awk -v a=$(med $R/base.tps) -v b=$(med $R/plain.tps) 'BEGIN {printf "%.2f", a/b}')"
rm -rf $R
