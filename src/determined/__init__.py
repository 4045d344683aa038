"""Determined: a pure-Python deep-learning training platform."""

__version__ = "0.13.0"
