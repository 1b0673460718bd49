"""The error hierarchy: expected outcomes (bad input) apart from bugs.

The CLI maps each class to its exit code and prints one clear message, never a traceback, for
everything but an `InternalError` (which also prints one line, and a traceback only with
FLEETPLAN_DEBUG=1).
"""

from __future__ import annotations


class FleetplanError(Exception):
    exit_code = 3


class InputError(FleetplanError):
    """Bad input: a file, a card, a command-line argument. Exit 2."""

    exit_code = 2


class InternalError(FleetplanError):
    """A bug in fleetplan: the solver rejected our model, or a plan failed verification. Exit 3."""

    exit_code = 3


class ModelInvalidError(InternalError):
    """CP-SAT answered MODEL_INVALID: our model is malformed (never a user's fault)."""


class PlanVerificationError(InternalError):
    """A solved plan violates a constraint when re-checked in floats; it is never printed."""
