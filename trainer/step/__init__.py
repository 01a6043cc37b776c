"""One training step as a list of stages, and the loop around it (see README.md beside this file)."""
