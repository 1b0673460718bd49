"""The verifier's rules, one named check each; solver/verify/checks.py runs them in order."""
