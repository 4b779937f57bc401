#!/usr/bin/env bash
# The middle test tier: the ignored system tests that need a server or tool
# installed (PostgreSQL, MariaDB, etcd, libfaketime, Chromium, gzip) but not
# root — every `#[ignore = "…"]` test whose reason does not say "root".
# Run as any user who has those installed; `--list` only prints the tests.
# Tests whose program is missing fail naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
names=$(grep -rn --include='*.rs' --exclude-dir=target -A6 '#\[ignore = "' . |
  awk '
    /#\[ignore = "/ { reason = $0; want = 1; next }
    want && /fn [a-z_0-9]+\(/ {
      if (reason !~ /root/) {
        sub(/.*fn /, ""); sub(/\(.*/, ""); print
      }
      want = 0
    }' | sort -u)
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' $names
  exit 0
fi
# shellcheck disable=SC2086 # one filter per test name
exec cargo test --workspace --no-fail-fast -- --ignored $names
