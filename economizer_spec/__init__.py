"""TokenEconomizer's controller, specified: pure values and total functions, no I/O.

The paper (shared/seeds/001) describes an external controller that watches a coding agent
over a stream of tasks in one repository and learns three policies: which one-line facts to
inject as micro-skills (`skills`), which never-used tools to leave out (`tools`), and when to
redirect or stop a failure loop (`guard`, with the paper's kappa rule or the `conformal`
stop point whose false-stop rate is at most alpha). `stream.feed` is the state update
S_i = F(S_{i-1}, task_i, trajectory_i, y_i); `cost` prices what a task and the controller
calls it triggered spent; `params` holds every threshold, with which are the paper's and
which are ours (and why). `z3_model` / `z3_theorems` prove the guard's non-vetoable stop and
the pruning invariants.

This package is the oracle: written to be obviously right (counters are recomputed from the
prefix, support from the evidence log). `economizer` is the incremental implementation and
must reach the same decisions (properties/economizer_differential.py).
"""

from .params import Params
from .stream import Controllers, State, feed, initial, plan

__all__ = ["Controllers", "Params", "State", "feed", "initial", "plan"]
