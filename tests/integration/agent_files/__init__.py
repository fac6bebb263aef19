"""Loading agent definitions from real directories: bundled, user and project, read-only."""
