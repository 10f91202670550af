"""The run: order, bounded concurrent writes, re-listing, outcomes, diagnosis. Never prints."""

from .loop import Engine, ProgressListener
from .outcomes import OutcomeListener

__all__ = ["Engine", "OutcomeListener", "ProgressListener"]
