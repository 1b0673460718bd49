"""What-if questions answered with many plans of one problem: the cost-vs-traffic frontier
(`frontier.py`) and the prices of a device type at which the chosen mix changes (`price.py`).

Each question derives variants of a resolved problem (`problem.derive`: scaled demand, other
prices, another objective) and plans them through the ordinary flow (`plan.plan`: CP-SAT, then
the independent verifier), building the candidate tables once (`replan.Replanner`)."""
