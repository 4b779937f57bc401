#!/bin/sh
# Build a single-process tidb-server (unistore store, no PD/TiKV) from one exact
# upstream commit through the Go module proxy. The binary stays outside the repo.
# Usage: tools/build-tidb.sh [outdir]   (default /var/tmp/tidb-build)
# Tried 2026-11-26 21:07 UTC: step 1 was refused by the proxy:
#   go: github.com/pingcap/tidb@7d16cc79e81bbf573124df3fd9351c26963f3e70: invalid version:
#   reading https://proxy.golang.org/github.com/pingcap/tidb/@v/7d16cc79e81bbf573124df3fd9351c26963f3e70.info:
#   403 Forbidden  server response: This module version is not available.
# Needs Go >= 1.21 on PATH (or /usr/local/go/bin). Slow: a cold build takes long on 1 core.
set -eu
export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local        # use the machine's Go; no silent toolchain switch
H=7d16cc79e81bbf573124df3fd9351c26963f3e70     # TiDB v7.5.1
B=${1:-/var/tmp/tidb-build}; mkdir -p "$B/bin"
J=${JOBS:-1}

# 1. the ONE proxy query for the TiDB module: commit -> pseudo-version
go list -m -json github.com/pingcap/tidb@$H > "$B/tidb.json"
V=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["Version"])' "$B/tidb.json")
echo "tidb pseudo-version: $V"

# 2. download it; print its replace directives
go mod download -json github.com/pingcap/tidb@$V > "$B/dl.json"
SRC=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["Dir"])' "$B/dl.json")
go mod edit -json "$SRC/go.mod" | python3 -c 'import json,sys;[print(r["Old"]["Path"],"=>",r["New"]["Path"],r["New"].get("Version","")) for r in json.load(sys.stdin).get("Replace") or []]'

# 3. the parser module at the same commit (a nested module, left out of the zip)
go list -m -json github.com/pingcap/tidb/pkg/parser@$H > "$B/parser.json"
PV=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["Version"])' "$B/parser.json")
echo "parser pseudo-version: $PV"

# 4. build inside a writable copy of the module (its own replace lines apply)
rm -rf "$B/src"
cp -r "$SRC" "$B/src" && chmod -R u+w "$B/src"
PDIR=$(go mod download -json github.com/pingcap/tidb/pkg/parser@$PV | python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')
rm -rf "$B/src/pkg/parser" && cp -r "$PDIR" "$B/src/pkg/parser" && chmod -R u+w "$B/src/pkg/parser"
cd "$B/src"
go build -mod=mod -p "$J" -tags codes -trimpath \
  -ldflags "-X 'github.com/pingcap/tidb/pkg/parser/mysql.TiDBReleaseVersion=v7.5.1' \
            -X 'github.com/pingcap/tidb/pkg/util/versioninfo.TiDBGitHash=$H' \
            -X 'github.com/pingcap/tidb/pkg/util/versioninfo.TiDBEdition=Community'" \
  -o "$B/bin/tidb-server" ./cmd/tidb-server
"$B/bin/tidb-server" -V        # expect Store: unistore
