"""The shipped data: model and hardware cards, problems, engine calibrations (found by name or path)."""
