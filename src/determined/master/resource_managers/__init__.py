"""Where trials run: agents and processes behind one interface.

:class:`CompositeResourceManager` offers the embedded agent (trial processes on the
master's machine, unless it has 0 slots) and every live remote agent
(:class:`RemoteResourceManager`; the agent process is :mod:`determined.agent`).
"""

from determined.master.resource_managers._composite import CompositeResourceManager
from determined.master.resource_managers._embedded import AGENT_ID, EmbeddedResourceManager
from determined.master.resource_managers._base import LOST_EXIT_CODE, ResourceManager, TrialLaunch
from determined.master.resource_managers._remote import RemoteResourceManager, UnknownSessionError

__all__ = ["AGENT_ID", "CompositeResourceManager", "EmbeddedResourceManager",
           "LOST_EXIT_CODE", "RemoteResourceManager", "ResourceManager", "TrialLaunch",
           "UnknownSessionError"]
