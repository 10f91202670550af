"""The run: order, bounded concurrent writes, re-listing, outcomes, diagnosis. Never prints."""
