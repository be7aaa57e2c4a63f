"""`ledger audit`: replay real agent trajectories in throwaway copies and judge Ledger by the ground truth.

Modules, one concept each: `formats` (reading trajectories), `workspace` (the copy at the
base commit), `filter` (what is replayed, and as which command), `witnesses` (several
detectors on one run), `rereads` (the perfect ledger), `engine` (one trajectory, step by
step), `runner` (jobs on any `concurrent.futures` executor, resumable), `worker` (the child
process), `report_json` and `report_html`.
"""
