"""Tables and figures rendered from the metrics files."""
