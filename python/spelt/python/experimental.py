"""Grain's legacy ``grain.python.experimental``: the names of ``spelt.experimental``."""

from spelt.experimental import *  # pylint: disable=wildcard-import
from spelt.experimental import __all__  # noqa: F401
