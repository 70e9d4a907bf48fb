#!/usr/bin/python3
"""GUPnP 1.6 (through GObject introspection) as a MediaServer control point, for the DLNA tests.

Usage: cp-gupnp-dms.py <interface>
Discovers MediaServer:1 and MediaRenderer:1 devices on the interface and prints them as JSON
lines ({"evt":"server",...}, {"evt":"renderer",...}). Then takes commands on stdin, one JSON
object a line, and answers each with {"evt":"result","id":N,"ok":true,"value":{...}} or
{"evt":"result","id":N,"ok":false,"error":...,"code":...}:
  {"id":N,"cmd":"browse","udn":U,"object":O,"flag":F,"start":S,"count":C,"sort":X}
  {"id":N,"cmd":"search","udn":U,"container":O,"criteria":Q,"start":S,"count":C}
  {"id":N,"cmd":"play","udn":R,"url":URL,"meta":DIDL}   (SetAVTransportURI + Play on renderer R)
"""
import json
import sys

import gi

gi.require_version('GUPnP', '1.6')
from gi.repository import GLib, GObject, GUPnP  # noqa: E402

iface = sys.argv[1]
CDS = 'urn:schemas-upnp-org:service:ContentDirectory:1'
AVT = 'urn:schemas-upnp-org:service:AVTransport:1'
devices = {}


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


def available(kind):
    def handler(cp, proxy):
        udn = proxy.get_udn()
        if udn in devices:
            return
        devices[udn] = proxy
        emit({'evt': kind, 'udn': udn, 'name': proxy.get_friendly_name(), 'model': proxy.get_model_name(),
              'type': proxy.get_device_type(), 'location': proxy.get_location()})
    return handler


PAGE_OUT = (['Result', 'NumberReturned', 'TotalMatches', 'UpdateID'],
            [GObject.TYPE_STRING, GObject.TYPE_UINT, GObject.TYPE_UINT, GObject.TYPE_UINT])


def run(cmd):
    proxy = devices.get(cmd.get('udn'))
    if proxy is None:
        raise RuntimeError('unknown device ' + str(cmd.get('udn')))
    if cmd['cmd'] == 'browse':
        vals = call(proxy.get_service(CDS), 'Browse',
                    ['ObjectID', 'BrowseFlag', 'Filter', 'StartingIndex', 'RequestedCount', 'SortCriteria'],
                    [cmd['object'], cmd.get('flag', 'BrowseDirectChildren'), '*', cmd.get('start', 0), cmd.get('count', 0), cmd.get('sort', '')],
                    *PAGE_OUT)
        return dict(zip(PAGE_OUT[0], vals))
    if cmd['cmd'] == 'search':
        vals = call(proxy.get_service(CDS), 'Search',
                    ['ContainerID', 'SearchCriteria', 'Filter', 'StartingIndex', 'RequestedCount', 'SortCriteria'],
                    [cmd.get('container', '0'), cmd['criteria'], '*', cmd.get('start', 0), cmd.get('count', 0), ''],
                    *PAGE_OUT)
        return dict(zip(PAGE_OUT[0], vals))
    if cmd['cmd'] == 'play':
        avt = proxy.get_service(AVT)
        call(avt, 'SetAVTransportURI', ['InstanceID', 'CurrentURI', 'CurrentURIMetaData'], [0, cmd['url'], cmd.get('meta', '')])
        call(avt, 'Play', ['InstanceID', 'Speed'], [0, '1'])
        return {}
    raise RuntimeError('unknown command ' + cmd['cmd'])


def on_stdin(channel, condition):
    line = channel.readline()
    if not line:
        GLib.MainLoop().quit()
        return False
    cmd = json.loads(line)
    try:
        emit({'evt': 'result', 'id': cmd['id'], 'ok': True, 'value': run(cmd)})
    except GLib.Error as e:  # a SOAP fault: GUPnP gives the UPnP error code
        emit({'evt': 'result', 'id': cmd['id'], 'ok': False, 'error': e.message, 'code': e.code})
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
        emit({'evt': 'result', 'id': cmd['id'], 'ok': False, 'error': str(e)})
    return True


ctx = GUPnP.Context.new(iface, 0)
servers = GUPnP.ControlPoint.new(ctx, 'urn:schemas-upnp-org:device:MediaServer:1')
servers.connect('device-proxy-available', available('server'))
servers.set_active(True)
renderers = GUPnP.ControlPoint.new(ctx, 'urn:schemas-upnp-org:device:MediaRenderer:1')
renderers.connect('device-proxy-available', available('renderer'))
renderers.set_active(True)
GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.IO_IN | GLib.IO_HUP, on_stdin)
emit({'evt': 'ready'})
GLib.MainLoop().run()
