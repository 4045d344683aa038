"""Hugging Face ``transformers.Trainer`` on the platform: :class:`DetCallback` (as in
Determined 0.38)."""

from determined.transformers._callback import DetCallback

__all__ = ["DetCallback"]
