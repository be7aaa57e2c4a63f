"""Prepare the shared corpus for `ledger audit`: one repository per project, from its PyPI sdist.

Usage:
    python scripts/corpus_workspaces.py OUT [--corpus FILE] [--limit N] [--repos a,b] [--cache DIR]

The corpus records commands, not repositories. Each task's project is stood in for by the
sdist of one fixed release of its PyPI package (`PROJECTS`: a version near the era of the
benchmark tasks, not the task's commit; what matters is that reads, searches and edits land on
a real project of the right shape). Each sdist is downloaded once (`pip download --no-binary`,
which also prepares its metadata: a project whose sdist does not build is left out, as astropy
is) and committed to a git repository under `OUT/repos/`. Then:

    OUT/trajectories.jsonl   the chosen corpus lines (up to N, spread over projects)
    OUT/workspaces.jsonl     instance id -> repository and commit, for `--workspaces`

and the audit is

    nice -n 5 ledger audit OUT/trajectories.jsonl --workspaces OUT/workspaces.jsonl -j 2 --budget 55 \\
        --results OUT/results --json OUT/audit.json --html OUT/audit.html
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ledger_properties.audit.workspace import repo_from_sdist  # noqa: E402 - after the path set-up

DEFAULT_CORPUS = next(
    (p / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl" for p in REPO.parents if (p / "shared" / "corpus").is_dir()),
    REPO.parent / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl",
)
DEFAULT_CACHE = Path.home() / ".cache" / "ledger-corpus"

# task_repo -> (PyPI name, release): one release per project, in the middle of the span of its
# SWE-bench Lite/Verified instances (the instance number does not give a version).
PROJECTS: dict[str, tuple[str, str]] = {
    "django/django": ("Django", "4.0.10"),
    "sqlfluff/sqlfluff": ("sqlfluff", "1.4.5"),
    "pvlib/pvlib-python": ("pvlib", "0.9.5"),
    "pydicom/pydicom": ("pydicom", "2.3.1"),
    "pylint-dev/astroid": ("astroid", "2.15.8"),
    "marshmallow-code/marshmallow": ("marshmallow", "3.19.0"),
    "astropy/astropy": ("astropy", "5.3.4"),
    "pyvista/pyvista": ("pyvista", "0.38.6"),
    "sympy/sympy": ("sympy", "1.11.1"),
    "psf/requests": ("requests", "2.28.2"),
    "pytest-dev/pytest": ("pytest", "7.2.2"),
    "scikit-learn/scikit-learn": ("scikit-learn", "1.2.2"),
    "matplotlib/matplotlib": ("matplotlib", "3.6.3"),
    "sphinx-doc/sphinx": ("Sphinx", "5.3.0"),
    "pylint-dev/pylint": ("pylint", "2.15.10"),
    "pydata/xarray": ("xarray", "2022.12.0"),
    "mwaskom/seaborn": ("seaborn", "0.12.2"),
    "pallets/flask": ("Flask", "2.2.3"),
}


def sdist(cache: Path, name: str, version: str) -> Path | None:
    """The cached sdist of `name==version`, downloaded with pip if absent; None if it fails."""
    cache.mkdir(parents=True, exist_ok=True)
    found = _find(cache, name, version)
    if found is None:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, "-q", f"{name}=={version}", "-d", str(cache)],
                capture_output=True, text=True, check=False, timeout=600,
            )
        except subprocess.TimeoutExpired:
            print(f"{name}=={version}: pip download timed out", file=sys.stderr)
            return None
        if done.returncode != 0:
            print(f"{name}=={version}: no sdist that builds ({(done.stderr.strip().splitlines() or ['?'])[-1][:150]})", file=sys.stderr)
            return None
        found = _find(cache, name, version)
    return found


def _find(cache: Path, name: str, version: str) -> Path | None:
    wanted = {f"{n}-{version}" for n in (name.lower(), name.lower().replace("-", "_"), name.lower().replace("_", "-"))}
    for path in sorted(cache.iterdir()):
        for suffix in (".tar.gz", ".zip", ".tar.bz2"):
            if path.name.endswith(suffix) and path.name[: -len(suffix)].lower() in wanted:
                return path
    return None


def spread(lines: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` trajectories taken round-robin over projects, in corpus order within each."""
    by_repo: dict[str, collections.deque[dict[str, Any]]] = collections.defaultdict(collections.deque)
    for line in lines:
        by_repo[line["task_repo"]].append(line)
    chosen: list[dict[str, Any]] = []
    while len(chosen) < limit and any(by_repo.values()):
        for queue in by_repo.values():
            if queue and len(chosen) < limit:
                chosen.append(queue.popleft())
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="at most N trajectories, spread over projects")
    parser.add_argument("--repos", default="", help="comma-separated task repositories (owner/name or name)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where sdists are kept")
    args = parser.parse_args(argv)

    wanted_repos = {r.strip() for r in args.repos.split(",") if r.strip()}
    lines = [json.loads(line) for line in args.corpus.read_text().splitlines() if line.strip()]
    lines = [
        line for line in lines
        if line["task_repo"] in PROJECTS and (not wanted_repos or line["task_repo"] in wanted_repos or line["task_repo"].split("/")[-1] in wanted_repos)
    ]
    bases: dict[str, dict[str, str]] = {}
    for task_repo in sorted({line["task_repo"] for line in lines}):
        name, version = PROJECTS[task_repo]
        archive = sdist(args.cache, name, version)
        if archive is None:
            continue
        destination = args.out / "repos" / task_repo.replace("/", "__")
        if (destination / ".git").is_dir():
            head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=destination, capture_output=True, text=True, check=True).stdout.strip()
            bases[task_repo] = {"repo": str(destination.resolve()), "commit": head}
        else:
            base = repo_from_sdist(archive, destination)
            bases[task_repo] = {"repo": base.repo, "commit": base.commit}
    lines = [line for line in lines if line["task_repo"] in bases]
    if args.limit is not None:
        lines = spread(lines, args.limit)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trajectories.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (args.out / "workspaces.jsonl").write_text(
        "".join(json.dumps({"trajectory": line["instance_id"], **bases[line["task_repo"]]}) + "\n" for line in lines)
    )
    count = collections.Counter(line["task_repo"].split("/")[-1] for line in lines)
    print(f"{len(lines)} trajectories ({', '.join(f'{k} {v}' for k, v in count.most_common())}) in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
