#!/bin/bash
# PostgreSQL on the lossy filesystem in strict mode (namespace operations
# are lost too without a directory fsync): create tables, load pgbench,
# run it, SIGKILL the server, lose every un-synced byte and namespace
# operation, start again and check what survived. Two crash cycles.
set -u
H=$(realpath ${H:-target/debug/harness})
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
R=/tmp/lzs; rm -rf $R; mkdir -p $R/sock; chown -R postgres $R
d=$R/data
install -d -o postgres -m 700 $R/data.lossy $R/data.lossy/data $d
(setsid $H lossyfs mount $R/data.lossy/data $d --socket $R/ctl.sock --strict </dev/null >$R/fs.log 2>&1 & echo $! > $R/pid)
sleep 1
cd /tmp
pg() { runuser -u postgres -- "$@"; }
sql() { pg $B/psql -h $R/sock -p 5498 -U postgres -d postgres -Atc "$1" 2>&1; }
start() {
  # A SIGKILLed postmaster can linger as a zombie for a moment.
  local pm=$(head -1 $d/postmaster.pid 2>/dev/null)
  for i in $(seq 50); do [ -n "$pm" ] && [ -e /proc/$pm ] || break; sleep 0.2; done
  pg $B/pg_ctl -D $d -l $R/pg.log -o "-p 5498 -k $R/sock -c dynamic_shared_memory_type=posix -c recovery_init_sync_method=fsync -c listen_addresses=''" -w -t 60 start >/dev/null
  echo "start: rc=$?"
}
crash() {
  local pm=$(head -1 $d/postmaster.pid)
  kill -9 $pm $(pgrep -P $pm); sleep 1
  echo "lose: $($H lossyfs ctl $R/ctl.sock lose | head -1)"
  rm -f $R/sock/.s.PGSQL.5498*
}
pg $B/initdb -D $d -U postgres >/dev/null 2>&1; echo "initdb: rc=$?"
echo "after initdb: $($H lossyfs ctl $R/ctl.sock report | head -1)"
start
sql "create table t(x int); insert into t select generate_series(1,1000)"
pg $B/pgbench -h $R/sock -p 5498 -U postgres -i -s 2 postgres >/dev/null 2>&1
pg $B/pgbench -h $R/sock -p 5498 -U postgres -c 4 -T ${T:-10} postgres 2>/dev/null | grep -E '^number of transactions actually'
sql "create table u as select * from t; create index on u(x)"
echo "before crash 1: t=$(sql 'select count(*) from t') u=$(sql 'select count(*) from u') history=$(sql 'select count(*) from pgbench_history')"
echo "$($H lossyfs ctl $R/ctl.sock report | head -1)"
crash
start
echo "after crash 1: t=$(sql 'select count(*) from t') u=$(sql 'select count(*) from u') history=$(sql 'select count(*) from pgbench_history')"
sql "create table v(x int); insert into v values (1); drop table u"
crash
start
echo "after crash 2: t=$(sql 'select count(*) from t') u=$(sql 'select count(*) from u' | head -1) v=$(sql 'select count(*) from v') amcheck=$(sql 'select count(*) from pg_class')"
grep -E "FATAL|PANIC|ERROR|could not|redo (starts|done)" $R/pg.log | sed 's/^[0-9: .-]*UTC //' | sort | uniq -c | head -20
pg $B/pg_ctl -D $d -m immediate stop >/dev/null 2>&1
fusermount3 -u $d; sleep 0.5
[ -n "${KEEP:-}" ] || rm -rf $R
