"""Test settings of the mtc Python module: the tests import `support` from this folder."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

import mtc  # noqa: E402


@pytest.fixture(params=["never", "always"])
def each_build(request):
    """Runs a test with the result built in one pass after the outputs exist, and with its
    containers built ahead of them (what get() does while the engine still works)."""
    mtc._C._set_build_ahead(request.param)
    yield request.param
    mtc._C._set_build_ahead("while_waiting")
