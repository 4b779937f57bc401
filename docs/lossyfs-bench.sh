#!/bin/bash
# pgbench TPC-B-like, 8 clients, on a plain data dir vs the lossy filesystem.
set -u
H=$(realpath ${H:-target/debug/harness})
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
R=/tmp/lzb; rm -rf $R; mkdir -p $R/sock; chown -R postgres $R
run() {
  local mode=$1 d=$R/$1/data
  mkdir -p $R/$mode; chown postgres $R/$mode
  if [ $mode = lossy ]; then
    install -d -o postgres -m 700 $R/$mode/data.lossy $R/$mode/data.lossy/data $d
    (setsid $H lossyfs mount $R/$mode/data.lossy/data $d --socket $R/$mode/ctl.sock </dev/null >$R/$mode/fs.log 2>&1 & echo $! > $R/$mode/pid)
    sleep 1
  fi
  cd /tmp
  runuser -u postgres -- $B/initdb -D $d -U postgres >/dev/null 2>&1
  runuser -u postgres -- $B/pg_ctl -D $d -l $R/$mode/pg.log -o "-p 5499 -k $R/sock -c dynamic_shared_memory_type=posix -c recovery_init_sync_method=fsync -c listen_addresses='' ${PGOPT:-}" -W start >/dev/null
  sleep 2
  runuser -u postgres -- $B/pgbench -h $R/sock -p 5499 -U postgres -i -s 10 postgres >/dev/null 2>&1
  echo "$mode: $(runuser -u postgres -- $B/pgbench -h $R/sock -p 5499 -U postgres -c 8 -j 2 -T ${T:-20} postgres 2>/dev/null | grep -E '^tps')"
  runuser -u postgres -- $B/pg_ctl -D $d -m immediate stop >/dev/null
  if [ $mode = lossy ]; then fusermount3 -u $d; sleep 0.5; fi
}
run plain
run lossy
rm -rf $R
