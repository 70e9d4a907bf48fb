#!/usr/bin/env bash
# Installs what the Homebridge tests and bench run for real into .cache/homebridge (gitignored):
#   hb1/     homebridge 1.11.4 + hap-controller (HomeKit controller) + hap-nodejs, on the machine's Node 20
#   hb2/     homebridge 2.4.0 on Node 24 (.cache/node24, scripts/install-node24.sh); the registry lacks the exact @homebridge/hap-nodejs it pins,
#            so an npm override moves it to 2.2.3
# Called by the test setup (test/homebridge/helpers) and bench/homebridge.js; safe to run again
# (each part is skipped once its marker file exists). Concurrent callers serialise on a lock.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/.cache/homebridge"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

NPM_FLAGS=(--no-audit --no-fund --no-package-lock --loglevel=error)
install_dir() { # dir marker package.json-content [PATH prefix]
  local dir="$CACHE/$1" marker="$CACHE/$1/.installed-$2"
  [ -e "$marker" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  printf '%s\n' "$3" >"$dir/package.json"
  echo "install-homebridge-test-deps: installing $1 (one time)" >&2
  if [ -n "${4:-}" ]; then
    # Native builds under Node 24 need its headers, not the system Node's (npmrc nodedir).
    (cd "$dir" && PATH="$4:$PATH" npm_config_nodedir="$(dirname "$4")" npm install "${NPM_FLAGS[@]}" >&2)
  else
    (cd "$dir" && npm install "${NPM_FLAGS[@]}" >&2)
  fi
  touch "$marker"
}

NODE24_BIN="$(bash "$ROOT/scripts/install-node24.sh")"
install_dir hb1 v1 '{"private":true,"dependencies":{"homebridge":"1.11.4","hap-controller":"0.10.2","hap-nodejs":"1.2.0"}}'
install_dir hb2 v1 '{"private":true,"dependencies":{"homebridge":"2.4.0"},"overrides":{"@homebridge/hap-nodejs":"2.2.3"}}' "$NODE24_BIN"
echo "$CACHE"
