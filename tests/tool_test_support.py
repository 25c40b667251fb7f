"""What the Python tool tests share: a test case with its own temporary directory, and JSON
written into it (tests write only inside their own temporary directory)."""

import json
import os
import tempfile
import unittest


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, obj):
        """`obj` as JSON in the test's directory; returns the path."""
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path
