#!/usr/bin/python3
"""GUPnP 1.6 (through GObject introspection) as a control point, for the DLNA tests.

Usage: cp-gupnp.py <interface> <friendly name> <media URL>
Discovers MediaRenderer:1 devices on the interface; for the one with that friendly name it
prints JSON lines: {"evt":"found",...}, {"evt":"volume","value":N} (GetVolume), subscribes to
AVTransport (each LastChange: {"evt":"lastchange","value":...}), then SetAVTransportURI + Play
({"evt":"played"}) and keeps running until killed. Errors: {"evt":"error","message":...}.
"""
import json
import sys

import gi

gi.require_version('GUPnP', '1.6')
from gi.repository import GLib, GObject, GUPnP  # noqa: E402

iface, name, url = sys.argv[1:4]
AVT = 'urn:schemas-upnp-org:service:AVTransport:1'
RCS = 'urn:schemas-upnp-org:service:RenderingControl:1'
done = set()
keep = []


def emit(o):
    sys.stdout.write(json.dumps(o) + '\n')
    sys.stdout.flush()


def call(service, action, names, values, out_names=(), out_types=()):
    a = GUPnP.ServiceProxyAction.new_from_list(action, list(names), list(values))
    service.call_action(a, None)
    if out_names:
        ok, vals = a.get_result_list(list(out_names), list(out_types))
        return vals
    return None


def on_last_change(proxy, variable, value, *args):
    emit({'evt': 'lastchange', 'value': value})


def available(cp, proxy):
    if proxy.get_friendly_name() != name or name in done:
        return
    done.add(name)
    emit({'evt': 'found', 'udn': proxy.get_udn(), 'model': proxy.get_model_name(), 'location': proxy.get_location()})
    try:
        avt = proxy.get_service(AVT)
        rcs = proxy.get_service(RCS)
        keep.extend([avt, rcs])
        vol = call(rcs, 'GetVolume', ['InstanceID', 'Channel'], [0, 'Master'], ['CurrentVolume'], [GObject.TYPE_UINT])
        emit({'evt': 'volume', 'value': vol[0]})
        avt.add_notify('LastChange', GObject.TYPE_STRING, on_last_change, None)
        avt.set_subscribed(True)
        meta = '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/"><item id="1" parentID="0" restricted="1"><dc:title>GUPnP Song</dc:title></item></DIDL-Lite>'
        call(avt, 'SetAVTransportURI', ['InstanceID', 'CurrentURI', 'CurrentURIMetaData'], [0, url, meta])
        call(avt, 'Play', ['InstanceID', 'Speed'], [0, '1'])
        emit({'evt': 'played'})
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
        emit({'evt': 'error', 'message': str(e)})


ctx = GUPnP.Context.new(iface, 0)
cp = GUPnP.ControlPoint.new(ctx, 'urn:schemas-upnp-org:device:MediaRenderer:1')
cp.connect('device-proxy-available', available)
cp.set_active(True)
emit({'evt': 'ready'})
GLib.MainLoop().run()
