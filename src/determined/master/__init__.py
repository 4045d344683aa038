"""The cluster master."""
