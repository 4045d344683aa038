"""Lightning on the platform: add :class:`DeterminedCallback` to a ``Trainer``.

(Upstream's trial-based ``determined.pytorch.lightning.LightningAdapter`` is a different,
Trial-class API; this callback runs an unchanged Lightning script through the Core API.)
"""

from determined.lightning._callback import DeterminedCallback

__all__ = ["DeterminedCallback"]
