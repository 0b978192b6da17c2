"""Test settings of the mtc Python module: the tests import `support` from this folder."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
