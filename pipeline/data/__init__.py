"""Data sets: preparers that write images plus a manifest, and the manifest reader."""
