#!/usr/bin/env bash
# Installs the runtimes the Node-RED tests and bench run the nodes in, into .cache/ (gitignored):
#   .cache/node24      Node.js 24 (scripts/install-node24.sh)
#   .cache/nodered4    Node-RED 4, run on the machine's Node (>= 20)
#   .cache/nodered5    Node-RED 5 (needs Node >= 22.9), installed and run with Node 24 first in PATH
# Idempotent: each part is skipped when already there. Called by the tests' global setup.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=.cache
mkdir -p "$CACHE"
# Jest runs the Node-RED suites in parallel workers, each calling this script: one installs.
exec 9>"$CACHE/.install.lock"
flock 9
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false npm_config_loglevel=error

install_into() { # dir, package spec, [PATH prefix]
  local dir=$1 spec=$2 prefix=${3:-}
  [ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
  if [ -n "$prefix" ]; then
    # npm_config_nodedir: a machine-wide nodedir (Node 20's headers) would break native builds under 24.
    PATH="$prefix:$PATH" npm_config_nodedir="$(cd "$prefix/.." && pwd)" npm install --prefix "$dir" --no-save "$spec" >/dev/null
  else
    npm install --prefix "$dir" --no-save "$spec" >/dev/null
  fi
}

NODE24_BIN=$(bash scripts/install-node24.sh)
if [ ! -f "$CACHE/nodered4/node_modules/node-red/package.json" ]; then
  echo "install-nodered: Node-RED 4 into $CACHE/nodered4" >&2
  mkdir -p "$CACHE/nodered4"
  install_into "$CACHE/nodered4" node-red@4
fi
if [ ! -f "$CACHE/nodered5/node_modules/node-red/package.json" ]; then
  echo "install-nodered: Node-RED 5 into $CACHE/nodered5 (with Node 24)" >&2
  mkdir -p "$CACHE/nodered5"
  install_into "$CACHE/nodered5" node-red@5 "$(cd "$NODE24_BIN" && pwd)"
fi
