"""Files that are either complete or absent."""
