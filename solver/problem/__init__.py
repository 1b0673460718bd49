"""Step 1 of the flow: load a problem file, resolve its cards, expand its sweep."""
