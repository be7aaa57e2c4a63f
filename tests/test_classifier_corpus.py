"""The classifier on 16,275 real agent commands: no crash, little unknown, hand labels right.

The commands are classified, never run. Skipped when the corpus is not checked out next to
the repository.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ledger_impl import classifier, shell
from ledger_impl.classifier import classify_strict
from ledger_spec import Category

# Next to the checkout, or two levels up from a worktree (/work/wt/NAME).
CORPUS = next(
    (base / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl" for base in pathlib.Path(__file__).resolve().parents[2:4]
     if (base / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl").exists()),
    pathlib.Path(__file__).resolve().parents[2] / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl",
)
ROOT = "/testbed"

# Measured: 11 of 16,275 (0.07%) are unknown, all unterminated quotes in truncated commands.
MAX_UNKNOWN_SHARE = 0.005
# Measured: 47.1% get a reusable target; a drop would mean reads stopped being recognized.
MIN_TARGET_SHARE = 0.40


@pytest.fixture(scope="module")
def commands() -> list[str]:
    if not CORPUS.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    out: list[str] = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.extend(json.loads(line)["commands"])
    return out


def test_every_corpus_command_classifies_without_an_internal_error(commands):
    crashes = []
    for command in commands:
        try:
            classify_strict(command, ".", ROOT)
        except shell.ShellSyntaxError:
            pass
        except Exception as error:  # noqa: BLE001 - collected to report them all
            crashes.append((command[:80], repr(error)))
    assert crashes == []


def test_unknown_share_stays_small_and_reads_keep_their_targets(commands):
    results = [classifier.classify(command, root=ROOT) for command in commands]
    unknown = sum(r.category is Category.UNKNOWN for r in results)
    targets = sum(r.target is not None for r in results)
    assert unknown / len(results) < MAX_UNKNOWN_SHARE
    assert targets / len(results) > MIN_TARGET_SHARE


# Commands taken verbatim from the corpus, labelled by hand.
HAND_LABELLED = [
    ("cd /testbed && sed -n '791,805p' django/db/models/fields/__init__.py", Category.READ),
    ("cat ./astropy/modeling/separable.py", Category.READ),
    ("cat ./astropy/modeling/tests/test_separable.py | head -100", Category.READ),
    ('find . -type f -name "*.py" | grep -i separable | head -20', Category.SEARCH),
    ('grep -n "def get_prep_lookup\\|def get_db_prep_lookup" django/db/models/lookups.py', Category.SEARCH),
    ('grep -r "parse_http_date(" --include="*.py" . | grep -v "parse_http_date_safe"', Category.SEARCH),
    ('grep -n "infer(" astroid/nodes/node_classes.py | head -20', Category.SEARCH),
    ('grep -n "def _convert" pydicom/dataelem.py -A 100 | tail -50', Category.SEARCH),
    ("awk '/class DateTime/,/^class [A-Z]/' src/marshmallow/fields.py | grep -n \"serialize\"", Category.SEARCH),
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat /testbed/patch.txt", Category.READ),
    ('find . -type f \\( -name "*.rst" -o -name "*.md" \\) | xargs grep -i "json_script" 2>/dev/null | head', Category.RUN),
    ('find /testbed -type f -name "*.py" -exec grep -l "SQLCompiler" {} \\; | head -20', Category.RUN),
    ("python reproduce_issue.py", Category.RUN),
    ("pip install wrapt 2>/dev/null || pip install --user wrapt", Category.RUN),
    ("cp ./django/db/models/expressions.py ./django/db/models/expressions.py.backup", Category.EDIT),
    ("cat > test_issue.py << 'EOF'\nimport os\nprint(os.getcwd())\nEOF", Category.EDIT),
    ("cd /testbed && python -m pytest tests/test_x.py -xvs", Category.TEST),
    ("cd /testbed && git diff", Category.SEARCH),
    ("sed -i 's/old/new/' ./src/x.py", Category.EDIT),
]


@pytest.mark.parametrize("command,category", HAND_LABELLED)
def test_hand_labelled_corpus_commands(command, category):
    assert classifier.classify(command, root=ROOT).category is category
