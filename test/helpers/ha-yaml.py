"""Reads a Home Assistant YAML document on stdin and prints it as JSON (for the docs tests).

HA's `!secret name` tag becomes the string "!secret name"; nothing else of HA is needed.
"""
import json
import sys

import yaml


class Loader(yaml.SafeLoader):
    pass


Loader.add_constructor("!secret", lambda loader, node: "!secret " + loader.construct_scalar(node))
json.dump(yaml.load(sys.stdin.read(), Loader=Loader), sys.stdout)
