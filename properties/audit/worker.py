"""The child process that replays one trajectory: `python -m ledger_properties.audit.worker JOB.pickle`.

`runner.audit_job` starts it (inside bubblewrap when sandboxed) in the copy's directory with a
private HOME, and reads the result file the job names. Its exit status is 0 whenever a result
was written, even for a trajectory that failed in the middle (the result says so).
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

from .engine import Settings, replay
from .filter import OutsideWrite
from .formats import Trajectory


def main(argv: list[str]) -> int:
    job = pickle.loads(Path(argv[0]).read_bytes())  # written by runner.audit_job, never by a user
    settings: Settings = job["settings"]
    trajectory: Trajectory = job["trajectory"]
    try:
        result = replay(trajectory, Path(job["workspace"]), settings)
    except OutsideWrite as error:
        result = {"name": trajectory.name, "source": trajectory.source, "status": "failed", "error": str(error)}
    Path(job["result"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
