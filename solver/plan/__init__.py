"""Step 5: the plan document, from the fleet solution (and the transition from today's deployment)."""
