"""Reading a JSON file for the tools of this folder: one place for the "cannot read" message."""

import json


def load(path, error):
    """The JSON value in `path`; raises error("<path>: cannot read: <why>") when the file cannot be
    opened or is not JSON (the caller's exception type, so that its message reaches its user)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise error(f"{path}: cannot read: {e}")
