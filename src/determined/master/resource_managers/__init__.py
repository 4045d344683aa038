"""Where trials run: agents and processes behind one interface.

This slice has the embedded agent only (trial processes on the master's machine).
"""

from determined.master.resource_managers._embedded import AGENT_ID, EmbeddedResourceManager

__all__ = ["AGENT_ID", "EmbeddedResourceManager"]
