"""The engine replay: an iteration-level discrete-event simulation of serving engines.

Above the performance model (it takes iteration times from `solver.perf` through precomputed
grids), below the planner. The pieces, one module or package each:

- `requests.py`: the request table every piece writes to, and the `Source` / `Server` protocols
  the event loop (`loop.py`) drives;
- `sources/`: where requests come from (Poisson or Gamma arrivals over the problem's length
  distributions, trace files, the closed loops of the benchmark tools);
- `steptime.py`: iteration seconds for a batch composition, from a grid over the perf model;
- `kv.py`, `schedulers/`, `instance.py`: one engine instance (KV blocks, the engine's scheduler
  policy, iterations and pipeline micro-batches);
- `fleet.py`: pools of instances behind a router, disaggregated prefill -> KV link -> decode;
- `metrics.py`: percentiles, goodput, queue lengths from the request table.
"""
