"""Classify a shell command: normalized text, category, and for read-only commands the target.

Reuse withholds an execution, so this package errs one way only. A command is read-only when
every program in it is a tool from the table (`table.TOOLS`), invoked only with options its
parser lists, with no redirection that writes, no substitution, variable or background job.
Anything else is an edit (the text shows what it writes), a test run, or a run (effects
unknown). Parse failures are `unknown`. Nothing here raises: an internal error also yields
`unknown`. Hazards that make a read impure (the clock, links leaving the root, headers, ...)
are written once, in `hazards.py`, one row per class.

`normalized` must make two commands equal only when they print the same bytes on exit 0 (the
spec serves a failed run only to the identical raw text). Three rules keep that true:

- words are rendered canonically (quotes, escapes and spacing do not matter), but an unquoted
  glob stays a glob, since the shell expands `*.py` and not `'*.py'`;
- a file path is replaced by its key only in the single-file forms whose output never contains
  the path (`cat`, `cat -n`, `nl -ba`, `head -n`, `tail -n`, `sed -n` without `F`, awk NR ranges)
  and only when, on disk, the file exists as a readable regular file: error messages quote
  the path as typed, and a pipeline can exit 0 after its first command failed;
- everything else keeps its spelling and gets the working directory prefixed (`cd src && `),
  because listings and searches print paths as typed, relative to where they ran.

Layout: `effect.py` (the `Kind` enum, `Effect`, the option scanner), one module per tool family
(`views`, `sed`, `awk`, `search`, `listing`, `streams`, `git`, `programs`), `table.py` (program
name -> parser), `command.py` (lists, pipelines, working directories, targets).
"""

from __future__ import annotations

from .awk import awk_program_is_safe
from .command import classify, classify_strict
from .effect import Effect, Kind, Options
from .sed import sed_script_is_safe
from .table import TOOLS, effect_of

__all__ = [
    "TOOLS",
    "Effect",
    "Kind",
    "Options",
    "awk_program_is_safe",
    "classify",
    "classify_strict",
    "effect_of",
    "sed_script_is_safe",
]
