"""The three roles an instance can serve in: names as in the result document, and the integer
codes the candidate tables and the fleet model use."""

ROLES = ("colocated", "prefill", "decode")
COLOCATED, PREFILL, DECODE = 0, 1, 2
