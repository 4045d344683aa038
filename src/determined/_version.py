"""The package version, in a leaf module: code inside the package reads it without
importing the package face."""

__version__ = "0.13.0"
