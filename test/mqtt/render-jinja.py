"""Renders Home Assistant templates with Jinja2 (HA's template engine) for the discovery test.

stdin: a JSON list of {"template": str, "variables": {...}}; stdout: a JSON list of rendered
strings, or {"error": str} for a template that does not compile or render. HA adds filters of
its own; the hub's templates use only Jinja2's built-ins (tojson, int), so these render the same.
"""
import json
import sys

import jinja2

env = jinja2.Environment(undefined=jinja2.Undefined)
out = []
for job in json.load(sys.stdin):
    try:
        out.append(env.from_string(job["template"]).render(**job["variables"]))
    except Exception as e:  # noqa: BLE001 - every failure is the test's finding
        out.append({"error": f"{type(e).__name__}: {e}"})
json.dump(out, sys.stdout)
