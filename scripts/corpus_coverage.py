"""Classify every command of the real-agent corpus and report coverage by category.

Usage: python scripts/corpus_coverage.py [CORPUS.jsonl]

The commands are only classified, never run. Each is classified as if the agent's workspace
were /testbed (the root in these trajectories), lexically, since that directory is not here.
"""

from __future__ import annotations

import collections
import json
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ledger_impl import classify  # noqa: E402 - after the path set-up, to run from a checkout
from ledger_impl import shell  # noqa: E402
from ledger_impl.classifier import classify_strict  # noqa: E402
from ledger_spec import Category  # noqa: E402

CORPUS_NAME = "mini-swe-agent-deepseek.jsonl"
# The shared corpus sits next to the checkout, or two levels up from a worktree in /work/wt/NAME.
DEFAULT_CORPUS = next((p for p in (REPO.parent / "shared" / "corpus" / CORPUS_NAME,
                                   REPO.parent.parent / "shared" / "corpus" / CORPUS_NAME) if p.exists()),
                      REPO.parent / "shared" / "corpus" / CORPUS_NAME)
CORPUS_ROOT = "/testbed"


def load_commands(path: pathlib.Path) -> list[str]:
    commands: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                commands.extend(json.loads(line)["commands"])
    return commands


def first_word(command: str) -> str:
    """The program a command list starts with after `cd X &&`, for grouping patterns."""
    words = command.replace("&&", " && ").split()
    while len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        words = words[3:]
    return words[0] if words else "<empty>"


def main(argv: list[str]) -> int:
    path = pathlib.Path(argv[1]) if len(argv) > 1 else DEFAULT_CORPUS
    commands = load_commands(path)
    counts: collections.Counter[str] = collections.Counter()
    patterns: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    crashes = 0
    targets = 0
    started = time.perf_counter()
    for command in commands:
        try:
            # The strict entry point, so that an internal error is counted, not folded into
            # `unknown` as classify() does.
            result = classify_strict(command, ".", CORPUS_ROOT)
        except shell.ShellSyntaxError:
            result = classify(command, root=CORPUS_ROOT)
        except Exception:  # noqa: BLE001
            crashes += 1
            result = classify(command, root=CORPUS_ROOT)
        counts[result.category.value] += 1
        targets += result.target is not None
        patterns[result.category.value][first_word(command)] += 1
    elapsed = time.perf_counter() - started
    total = len(commands)
    print(f"corpus: {path} ({total} commands)")
    print(f"{'category':<10}{'count':>8}{'share':>9}")
    for category in Category:
        n = counts[category.value]
        print(f"{category.value:<10}{n:>8}{n / total:>9.1%}")
    print(f"read-only with a reusable target: {targets} ({targets / total:.1%})")
    print(f"crashes (internal errors caught as unknown): {crashes}")
    print(f"throughput: {total / elapsed:,.0f} commands/s ")
    for category in ("unknown", "run"):
        top = ", ".join(f"{word} {n}" for word, n in patterns[category].most_common(15))
        print(f"top {category}: {top}")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
