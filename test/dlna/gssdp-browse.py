#!/usr/bin/python3
"""GSSDP 1.6 (the library behind gssdp-discover, through GObject introspection) browsing for one target.

Usage: gssdp-browse.py <interface> <target>
Prints {"evt":"ready"}, then {"evt":"available","usn":…,"locations":[…]} for every resource of
that target (an NT / ST such as urn:schemas-upnp-org:device:MediaServer:1) until killed.
Debian bookworm's gssdp-tools ships no gssdp-discover, so this does what `gssdp-discover -t` does.
"""
import json
import sys

import gi

gi.require_version('GSSDP', '1.6')
from gi.repository import GLib, GSSDP  # noqa: E402

iface, target = sys.argv[1:3]


def emit(o):
    sys.stdout.write(json.dumps(o) + '\n')
    sys.stdout.flush()


client = GSSDP.Client.new_full(iface, None, 0, GSSDP.UDAVersion.VERSION_1_0)
browser = GSSDP.ResourceBrowser.new(client, target)
browser.connect('resource-available', lambda b, usn, locations: emit({'evt': 'available', 'usn': usn, 'locations': list(locations)}))
browser.set_active(True)
emit({'evt': 'ready'})
GLib.MainLoop().run()
