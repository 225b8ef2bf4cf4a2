"""The command line the peers' workers share: `bench/peers.py` and
`bench/scale.py` run a worker with a verb and its arguments (each worker's
docstring lists them)."""

import sys


def run(load, index, query):
    """Calls `load`, `index` or `query` with the arguments the command line gives it; returns its answer."""
    verb, source, path = sys.argv[1:4]
    if verb == "load":
        return load(source, path, sys.argv[4], sys.argv[5])
    if verb == "index":
        return index(source, path)
    return query(source, path, int(sys.argv[4]))
