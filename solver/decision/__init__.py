"""The decision record: what a plan rests on, how far it may be off, what else was close, what
to roll back to, and how long it stays right (after verify, before report)."""
