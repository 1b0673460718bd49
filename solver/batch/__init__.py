"""`fleetplan batch`: many problems (files, globs, folders, sweep variants) planned through the
`fleetplan plan` flow, in this process, on a local process pool or on a Ray cluster; see
`runner.py`."""
