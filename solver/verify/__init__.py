"""Step 4: the independent check of a plan document against its problem."""
