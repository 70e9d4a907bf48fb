#!/usr/bin/env bash
# Installs the Debian programs the test suite runs for real, asking apt only for what is
# missing. Run by `npm test` (pretest); safe to run again.
set -euo pipefail

# command → Debian package
declare -A NEEDED=(
  [espeak-ng]=espeak-ng   # offline TTS, the hub's default engine (the WASM fallback is tested too)
  [ffmpeg]=ffmpeg         # makes a real protected (DRM) MP4 for the media library tests
)

missing=()
for cmd in "${!NEEDED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDED[$cmd]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-test-deps: missing ${missing[*]}; run as root or install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "install-test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
