"""Step 2: candidate tables, every way to run one instance of a service in one role, evaluated by the performance model and pruned."""
