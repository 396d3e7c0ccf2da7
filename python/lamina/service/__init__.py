"""Compiling outside the user's process: worker processes (pool.py, worker.py), the
on-disk compile cache (cache.py), crash reproducers (reproducer.py) and the fault
injection that tests them (faults.py). backend/compile_fx.py is the one client."""
