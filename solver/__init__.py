"""fleetplan: plan LLM serving fleets with a vectorised performance model and CP-SAT."""

__version__ = "0.1.0"
