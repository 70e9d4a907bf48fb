#!/usr/bin/env bash
# Installs the Debian programs the test suite runs for real, asking apt only for what is
# missing. Run by `npm test` (pretest); safe to run again.
set -euo pipefail

# command → Debian package
declare -A NEEDED=(
  [espeak-ng]=espeak-ng   # offline TTS, the hub's default engine (the WASM fallback is tested too)
  [ffmpeg]=ffmpeg         # the Snapcast driver decodes media with it (and it remakes the DRM test fixtures)
  [snapserver]=snapserver # the Snapcast driver tests run a real snapserver (ffmpeg above decodes for it)
  [snapclient]=snapclient # … and three real snapclients writing raw PCM
  [gmediarender]=gmediarender   # real UPnP/DLNA MediaRenderers for the UPnP driver tests (run in network namespaces)
  [ip]=iproute2                 # builds the UPnP and MQTT network tests' namespaces
  [curl]=curl                   # the docs' examples (README.md, docs/) run as written (test/readme-examples.lab.test.ts)
  [jq]=jq                       # … and they read JSON answers with jq
  [script]=bsdutils             # runs the CLI on a pseudo-terminal (the banner and logs a person sees)
  [systemd-analyze]=systemd     # verifies packaging/speakerhub.service
  [mosquitto]=mosquitto         # the MQTT tests run a real mosquitto (own config, loopback port) as an external broker
  [mosquitto_pub]=mosquitto-clients   # the MQTT examples (docs/mqtt.md) use mosquitto_pub/mosquitto_sub
  [openssl]=openssl             # the mqtts test makes a throwaway CA and broker certificate
  [chromium]=chromium           # the browser client's and the Node-RED editor's tests (headless, through playwright-core)
  [mpd]=mpd                     # the MPD driver tests run two real mpd (own config, loopback ports; pipe output through ffmpeg -re)
  [shairport-sync]=shairport-sync   # real AirPlay 1 receivers for the AirPlay driver tests (each in its own network namespace)
  [avahi-daemon]=avahi-daemon       # … which exit without an avahi-daemon (one per namespace, never in the root namespace)
  [dbus-daemon]=dbus                # … and avahi-daemon needs a system bus (one per namespace)
  [squeezelite]=squeezelite     # three real Squeezebox players for the squeezebox driver tests (loopback, -o - read at real time through a FIFO)
  [redis-server]=redis-server       # the cloud cluster tests run a real redis-server (routing, shared rate limits, revocations)
  [haproxy]=haproxy                 # … behind a real HAProxy (round robin, no stickiness)
  [text2wave]=festival              # the festival TTS provider's tests run the real festival (and its bench)
)

# npm-installed test tools (Homebridge 1 and 2, Node 24, hap-controller) go into .cache/homebridge:
bash "$(dirname "$0")/install-homebridge-test-deps.sh" >/dev/null

missing=()
for cmd in "${!NEEDED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDED[$cmd]}")
done
# GStreamer plugins have no command: look for their libraries (gmediarender decodes WAV/MP3 over HTTP with them).
gst_plugins=$(pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null || echo "/usr/lib/$(uname -m)-linux-gnu/gstreamer-1.0")
[ -e "$gst_plugins/libgstwavparse.so" ] && [ -e "$gst_plugins/libgstsoup.so" ] && [ -e "$gst_plugins/libgstmpg123.so" ] || missing+=(gstreamer1.0-plugins-good)
[ -e "$gst_plugins/libgstplayback.so" ] && [ -e "$gst_plugins/libgstaudioconvert.so" ] || missing+=(gstreamer1.0-plugins-base)
# PostgreSQL: the cloud suite runs again on a private cluster (initdb + pg_ctl); Debian keeps
# the binaries off PATH, in /usr/lib/postgresql/<version>/bin.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
# Jinja2 (Debian's, for /usr/bin/python3): the Home Assistant discovery test renders every template the hub sends.
/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1 || missing+=(python3-jinja2)
# PyYAML: the Home Assistant rest_command script (docs/home-assistant.md) is read as HA reads it.
/usr/bin/python3 -c 'import yaml' >/dev/null 2>&1 || missing+=(python3-yaml)
# festival's clearest English voice (HTS): the festival provider's default voice.
[ -d /usr/share/festival/voices/us/cmu_us_slt_arctic_hts ] || missing+=(festvox-us-slt-hts)
# GUPnP 1.6 through GObject introspection: a real control point no one here wrote, for the DLNA renderer tests.
[ -e "/usr/lib/$(uname -m)-linux-gnu/girepository-1.0/GUPnP-1.6.typelib" ] || missing+=(gir1.2-gupnp-1.6)
/usr/bin/python3 -c 'import gi' >/dev/null 2>&1 || missing+=(python3-gi)
# GSSDP 1.6 (a dependency of GUPnP's, named for the MediaServer test's SSDP browse: bookworm ships no gssdp-discover).
[ -e "/usr/lib/$(uname -m)-linux-gnu/girepository-1.0/GSSDP-1.6.typelib" ] || missing+=(gir1.2-gssdp-1.6)
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
# Debian's gmediarender, snapserver and snapclient packages start system-wide services where
# an init system runs (a renderer announcing itself on the real network among them); the
# tests start their own on loopback and in network namespaces, so keep the system ones off.
if [ -d /run/systemd/system ]; then
  for svc in gmediarender snapserver snapclient mosquitto shairport-sync avahi-daemon redis-server haproxy; do
    if printf '%s\n' "${missing[@]}" | grep -qx "$svc"; then $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
  done
fi
