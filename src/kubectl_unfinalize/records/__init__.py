"""The record of a run: what it wrote, kept on disk, so that `history` can say what a run
changed and `undo` can put it back. Writing a record never costs the run (a record that
cannot be written is a warning); reading one is strict (a bad record is bad input)."""
