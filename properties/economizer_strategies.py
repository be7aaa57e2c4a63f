"""Hypothesis strategies and deterministic model stand-ins for the economizer properties.

Random streams draw steps from small pools (commands that edit, run tests, fail with a few
signatures), so rules fire often enough to matter. Model calls are replaced by pure
functions of their input and a drawn seed, so the spec and the implementation, fed the same
stream, receive the same answers: that is what makes the differential test meaningful.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction

from hypothesis import strategies as st

from economizer_spec.detectors import Builtin, CommandResult, Regex
from economizer_spec.guard import GuardDigest, RedirectText, Verdict
from economizer_spec.cost import Usage
from economizer_spec.params import Params
from economizer_spec.skills import SkillDefinition
from economizer_spec.stream import Controllers, Digest, ProposerAnswer, ToolJudgeAnswer
from economizer_spec.trajectory import Step, Trajectory

COMMANDS = (
    "ls",
    "cat src/a.py",
    "grep -rn foo src",
    "sed -i 's/a/b/' src/a.py",
    "sed -i 's/x/y/' src/b.py",
    "echo x > src/c.py",
    "cat <<'EOF' > reproduce.py\nprint(1)\nEOF",
    "python reproduce.py",
    "pytest tests/test_a.py",
    "python tests/runtests.py app",
    "pip install -e .",
    "find . -name runtests.py",
)
OUTPUTS = (
    ("", 0),
    ("ok", 0),
    ("1 passed in 0.01s", 0),
    ("Traceback (most recent call last):\nValueError: bad value 3", 1),
    ("Traceback (most recent call last):\nValueError: bad value 17", 1),
    ("E   AssertionError: 1 != 2", 1),
    ("No module named pytest", 1),
    ("FAILED tests/test_a.py::test_x - KeyError: 'k'", 1),
    ("Requirement already satisfied: foo", 0),
)
TOOLS = ("bash", "bash", "bash", "read", "web_search")

steps = st.builds(
    lambda command, output, tool: Step(command, output[0], output[1], tool),
    st.sampled_from(COMMANDS),
    st.sampled_from(OUTPUTS),
    st.sampled_from(TOOLS),
)


@st.composite
def trajectories(draw: st.DrawFn, max_steps: int = 40, task_id: str | None = None) -> Trajectory:
    drawn = draw(st.lists(steps, min_size=1, max_size=max_steps))
    name = task_id or f"t-{draw(st.integers(0, 10**6))}"
    return Trajectory(name, tuple(drawn), draw(st.booleans()))


@st.composite
def streams(draw: st.DrawFn, min_size: int = 1, max_size: int = 14, max_steps: int = 30) -> list[Trajectory]:
    size = draw(st.integers(min_size, max_size))
    return [draw(trajectories(max_steps=max_steps, task_id=f"task-{i:03d}")) for i in range(size)]


DETECTORS = (
    Builtin("ran_tests"),
    Builtin("repro_written"),
    Builtin("importerror"),
    Regex(r"pytest", "commands"),
    Regex(r"runtests\.py", "commands"),
    Regex(r"passed", "outputs"),
    Regex(r"ValueError", "all"),
    Regex(r"^sed -i", "commands"),
    CommandResult(r"pytest", True),
    CommandResult(r"pytest", False, r"No module named"),
    CommandResult(r"pip install", None, r"already satisfied"),
)

params_strategy = st.builds(
    Params,
    confirmations=st.integers(1, 4),
    contradiction_weight=st.sampled_from([Fraction(0), Fraction(1), Fraction(5)]),
    decay=st.sampled_from([Fraction(1), Fraction(9, 10), Fraction(1, 2)]),
    need_gate=st.sampled_from([Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1)]),
    proposer_first=st.integers(1, 4),
    proposer_period=st.integers(1, 5),
    proposer_window=st.integers(1, 8),
    unused_streak=st.integers(1, 4),
    reaudit_period=st.integers(2, 6),
    kappa=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(5, 2)]),
    guard_rule=st.sampled_from(["kappa", "conformal"]),
    alpha=st.sampled_from([Fraction(1, 2), Fraction(1, 3), Fraction(1, 5)]),  # large: short streams reach a stop point
    beta=st.sampled_from([Fraction(0), Fraction(1, 5)]),
    min_passed_for_budget=st.integers(1, 3),
    stall_error_outputs=st.integers(1, 6),
    trigger_error_outputs=st.integers(1, 3),
    redirect_grace=st.integers(1, 5),
    manual_budget=st.integers(80, 400),
)


def _pick(seed: int, salt: str, size: int) -> int:
    digest = hashlib.sha256(f"{seed}:{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % size


def seeded_controllers(seed: int, with_tool_judge: bool = True) -> Controllers:
    """Deterministic stand-ins for the four model calls: pure functions of input and seed."""

    def proposer(repository: str, ids: tuple[str, ...], digests: tuple[Digest, ...]) -> ProposerAnswer:
        count = _pick(seed, f"n{len(ids)}{len(digests)}", 6)
        skills = []
        for k in range(count):
            salt = f"{k}:{digests[-1].index}"
            name = f"skill-{_pick(seed, 'id' + salt, 7)}"
            cited = tuple(d.task_id for d in digests if _pick(seed, d.task_id + salt, 3) != 0)
            skills.append(
                SkillDefinition(
                    id=name,
                    claim="a fact",
                    injection=f"Fact {name} holds for this repository" + "." * _pick(seed, "len" + salt, 40),
                    scope=DETECTORS[_pick(seed, "scope" + salt, len(DETECTORS))],
                    confirm=DETECTORS[_pick(seed, "confirm" + salt, len(DETECTORS))],
                    contradict=None if _pick(seed, "c?" + salt, 3) == 0 else DETECTORS[_pick(seed, "contra" + salt, len(DETECTORS))],
                    need=None if _pick(seed, "n?" + salt, 2) == 0 else DETECTORS[_pick(seed, "need" + salt, len(DETECTORS))],
                    high_stakes=_pick(seed, "hs" + salt, 3) == 0,
                    citations=cited,
                )
            )
        return ProposerAnswer(tuple(skills), Usage(100, 10, 5, 20))

    def judge(digest: GuardDigest) -> Verdict:
        roll = _pick(seed, f"judge{digest.counters.turns}", 4)
        return Verdict(roll == 0, Fraction(_pick(seed, f"conf{digest.counters.turns}", 11), 10), "seeded", Usage(50, 0, 0, 5))

    def writer(digest: GuardDigest) -> RedirectText:
        return RedirectText(f"redirect at {digest.counters.turns}", Usage(40, 0, 0, 30))

    def tool_judge(text: str, candidates: tuple[str, ...]) -> ToolJudgeAnswer:
        if _pick(seed, "fail" + ",".join(candidates), 4) == 0:
            return ToolJudgeAnswer(None, Usage(30, 0, 0, 3))
        return ToolJudgeAnswer({c: _pick(seed, "load" + c, 2) == 0 for c in candidates}, Usage(30, 0, 0, 3))

    return Controllers(proposer, judge, writer, tool_judge if with_tool_judge else None)
