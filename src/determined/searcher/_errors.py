"""Searcher errors.

``SearcherError`` (a ``DeterminedError``) is raised when the search cannot go on
because of the events it was given: a validation without the searcher metric, an event
for an unknown trial, or an event that breaks the driver contract. The experiment
should then end in ERROR. Bad configurations raise ``ValueError`` instead.
"""

from determined.errors import DeterminedError

__all__ = ["SearcherError"]


class SearcherError(DeterminedError):
    """The search cannot continue with the events it received."""
