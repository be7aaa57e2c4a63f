"""Parse a shell command with tree-sitter-bash into plain words, redirections and lists.

The classifier and the rules detector both need the same question answered: which programs
does this text run, with which arguments after quote removal, with which redirections, joined
by which operators. tree-sitter-bash gives a concrete syntax tree, but its grouping of `&&` and
`|` does not follow bash precedence (`a && b 2>/dev/null | c` comes back as a pipeline whose
left side is the list `a && b`), and a here-document swallows the rest of its line (`cat <<EOF
| python` puts the pipeline inside the heredoc node). So this module flattens the tree into
commands and operators in source order and rebuilds lists and pipelines with bash's own
precedence: `;`/`&`/newline separate statements, `&&`/`||` separate pipelines, `|` commands.

A word is evaluated statically: quotes removed, escapes applied. Anything that needs the
shell's runtime state to know its value (a variable, `~` at the start of a word or after `=`
or `:`, brace expansion) marks the word dynamic; command and process substitution mark it as
executing code. Unquoted glob characters are kept as glob segments so callers can tell `*.py`
from `'*.py'`.

Every public function raises `ShellSyntaxError` (never anything else) on input it cannot parse.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Final

import tree_sitter
import tree_sitter_bash
from ledger_spec.errors import InvalidInput

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

# Commands longer than this are not worth parsing for reuse decisions; they are never reads.
MAX_COMMAND_BYTES = 1_000_000

GLOB_CHARS = frozenset("*?[")


class ShellSyntaxError(InvalidInput, ValueError):
    """The text is not a shell command this module can take apart."""


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    `segments` holds (text, is_glob) pairs: glob segments are unquoted `*`, `?` or `[` that the
    shell would expand against the directory. `dynamic` means the value depends on shell state
    (variables, `~`, brace expansion, unknown syntax); `executes` means expanding it runs code.
    """

    segments: tuple[tuple[str, bool], ...] = ()
    dynamic: bool = False
    executes: bool = False
    source: str = ""  # the word as written, rendered for words without a static value

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)

    @property
    def has_glob(self) -> bool:
        return any(is_glob for _, is_glob in self.segments)

    @property
    def static(self) -> bool:
        """Whether the word's value is known from the text alone and expands to itself."""
        return not (self.dynamic or self.executes or self.has_glob)

    def render(self) -> str:
        """A canonical shell spelling: literal runs quoted by shlex, glob characters bare."""
        if self.dynamic or self.executes:
            return self.source or self.text
        if not self.has_glob:
            return shlex.quote(self.text)
        out: list[str] = []
        literal = ""
        for text, is_glob in self.segments:
            if is_glob:
                if literal:
                    out.append(shlex.quote(literal))
                    literal = ""
                out.append(text)
            else:
                literal += text
        if literal:
            out.append(shlex.quote(literal))
        return "".join(out)


@dataclass(frozen=True)
class Redirect:
    """A redirection: `op` as written (`>`, `>>`, `2>`, `<`, `<<`, `<<<`, `>&`, ...).

    `fd` is the explicit file descriptor or None; `target` the destination word (None for a
    here-document); `body` the here-document or here-string text.
    """

    op: str
    fd: str | None
    target: Word | None
    body: str | None = None
    dynamic: bool = False  # an unquoted here-document whose body the shell would expand

    @property
    def writes_file(self) -> bool:
        """Whether this redirection opens a file for writing (anything but a dup or /dev/null)."""
        if self.op in ("<", "<<", "<<-", "<<<"):
            return False
        if self.op == "<>":
            return True  # opens read-write and creates the file
        if self.target is None:
            return True
        if self.op in (">&", "<&", ">&-", "<&-") and (self.target.text.isdigit() or self.target.text == "-"):
            return False
        return not (self.target.static and self.target.text == "/dev/null")

    @property
    def moves_stdout(self) -> bool:
        """Whether standard output goes somewhere other than the pipe the agent reads, even
        /dev/null or stderr: what is printed is then no longer what was read."""
        return self.op in (">", ">>", ">|", "&>", "&>>", ">&") and self.fd in (None, "1")

    @property
    def reads_file(self) -> Word | None:
        """The file an input redirection reads, if any."""
        if self.op == "<" and self.target is not None:
            return self.target
        return None

    def render(self) -> str:
        fd = self.fd or ""
        if self.op in ("<<", "<<-"):
            return f"{fd}{self.op}{shlex.quote(self.body or '')}"
        if self.op == "<<<":
            return f"{fd}<<<{self.target.render() if self.target else shlex.quote(self.body or '')}"
        return f"{fd}{self.op}{self.target.render() if self.target else ''}"


@dataclass
class SimpleCommand:
    """A simple command, or an opaque compound one (subshell, loop, function, `!`, `[[`)."""

    words: list[Word] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    compound: str | None = None  # the node type when the command is not a simple command
    text: str = ""

    @property
    def name(self) -> str | None:
        if self.compound is not None or not self.words:
            return None
        first = self.words[0]
        return first.text if first.static else None

    @property
    def args(self) -> list[Word]:
        return self.words[1:]

    def render(self) -> str:
        if self.compound is not None:
            return self.text
        parts = list(self.assignments) + [w.render() for w in self.words] + [r.render() for r in self.redirects]
        return " ".join(parts)


@dataclass
class Pipeline:
    commands: list[SimpleCommand]
    operators: list[str]  # "|" or "|&" between consecutive commands

    def render(self) -> str:
        out = self.commands[0].render()
        for op, command in zip(self.operators, self.commands[1:]):
            out += f" {op} {command.render()}"
        return out


@dataclass
class AndOr:
    """Pipelines joined by `&&`/`||`; `connectors[i]` joins pipelines i and i+1."""

    pipelines: list[Pipeline]
    connectors: list[str]
    background: bool = False

    def render(self) -> str:
        out = self.pipelines[0].render()
        for op, pipeline in zip(self.connectors, self.pipelines[1:]):
            out += f" {op} {pipeline.render()}"
        return out + (" &" if self.background else "")


@dataclass
class Script:
    statements: list[AndOr]

    def commands(self) -> list[SimpleCommand]:
        return [c for s in self.statements for p in s.pipelines for c in p.commands]

    def render(self) -> str:
        return " ; ".join(s.render() for s in self.statements)


# --- words --------------------------------------------------------------------------------


def _unquoted(text: str, at_word_start: bool) -> tuple[list[tuple[str, bool]], bool]:
    """Segments of an unquoted word part, and whether it needs runtime state (~, {a,b})."""
    segments: list[tuple[str, bool]] = []
    dynamic = False
    i = 0
    if text == "{}":  # find's placeholder: not a brace expansion
        return [("{}", False)], False
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 < len(text):
                if text[i + 1] != "\n":
                    segments.append((text[i + 1], False))
                i += 2
                continue
            segments.append(("\\", False))
        elif c in GLOB_CHARS:
            segments.append((c, True))
        elif c in "{}" or c == "$" or (c == "~" and ((at_word_start and i == 0) or text[i - 1 : i] in ("=", ":"))):
            # bash expands `~` at the start of a word and, in words like `x=~/f` and
            # `PATH=a:~/bin`, after `=` or `:` (hazards.py: tilde in a word). Any unquoted `~`
            # after `=` or `:` is taken as expanded, which only ever costs a reuse.
            dynamic = True
            segments.append((c, False))
        else:
            segments.append((c, False))
        i += 1
    return segments, dynamic


_DQ_ESCAPABLE = frozenset('$`"\\\n')


def _double_quoted_content(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _DQ_ESCAPABLE:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _node_text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", errors="surrogateescape") if node.text is not None else ""


_EXECUTING = frozenset({"command_substitution", "process_substitution"})
_DYNAMIC = frozenset({"simple_expansion", "expansion", "arithmetic_expansion", "brace_expression"})


def _contains(node: tree_sitter.Node, types: frozenset[str]) -> bool:
    if node.type in types:
        return True
    return any(_contains(child, types) for child in node.children)


def evaluate_word(node: tree_sitter.Node, at_word_start: bool = True) -> Word:
    """The static value of a word-like node."""
    word = _evaluate(node, at_word_start)
    if word.dynamic or word.executes:
        return Word(word.segments, word.dynamic, word.executes, source=_node_text(node))
    return word


def _evaluate(node: tree_sitter.Node, at_word_start: bool) -> Word:
    kind = node.type
    if kind == "command_name":
        parts = [_evaluate(child, at_word_start) for child in node.named_children]
        return _concat(parts) if parts else Word(dynamic=True)
    if kind in ("word", "number"):
        segments, dynamic = _unquoted(_node_text(node), at_word_start)
        return Word(tuple(segments), dynamic=dynamic)
    if kind == "raw_string":
        text = _node_text(node)
        return Word(((text[1:-1], False),))
    if kind == "string":
        return _evaluate_double_quoted(node)
    if kind == "ansi_c_string":
        text = _node_text(node)[2:-1]
        # Only escape-free $'...' is taken literally; escapes would need bash's decoder.
        return Word(((text, False),), dynamic="\\" in text)
    if kind == "concatenation":
        parts = [_evaluate(child, at_word_start and i == 0) for i, child in enumerate(node.children)]
        return _concat(parts)
    if kind in _EXECUTING or _contains(node, _EXECUTING):
        return Word(((_node_text(node), False),), dynamic=True, executes=True)
    return Word(((_node_text(node), False),), dynamic=True)


def _evaluate_double_quoted(node: tree_sitter.Node) -> Word:
    text = _node_text(node)
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return Word(((text, False),), dynamic=True)
    executes = _contains(node, _EXECUTING)
    dynamic = executes
    # Take the content from the source text, not from string_content children, so that no
    # character the grammar leaves out of its nodes is lost.
    for child in node.named_children:
        if child.type != "string_content":
            dynamic = True
    content = _double_quoted_content(text[1:-1])
    return Word(((content, False),), dynamic=dynamic, executes=executes)


def _concat(parts: list[Word]) -> Word:
    return Word(
        tuple(seg for part in parts for seg in part.segments),
        dynamic=any(p.dynamic for p in parts),
        executes=any(p.executes for p in parts),
    )


# --- flattening ----------------------------------------------------------------------------

_SEPARATORS = frozenset({";", "&", "\n", ";;"})
_CONNECTORS = frozenset({"&&", "||"})
_PIPES = frozenset({"|", "|&"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SIMPLE_BODIES = frozenset({"command", "list", "pipeline", "redirected_statement"})


# Arguments tree-sitter-bash leaves as unnamed tokens (it reads `[`-style tests into them), but
# which bash passes on as literal words: dropping one would hide a file the command reads or
# writes (`cat b $` is not `cat b`).
_LITERAL_TOKENS = frozenset({"$", "==", "=~"})


class _Flattener:
    """Walks the tree, emitting SimpleCommand objects and operator strings in source order."""

    def __init__(self) -> None:
        self.items: list[SimpleCommand | str] = []

    def last_command(self) -> SimpleCommand | None:
        for item in reversed(self.items):
            if isinstance(item, SimpleCommand):
                return item
            if item in _SEPARATORS or item in _CONNECTORS or item in _PIPES:
                return None
        return None

    def statement_boundary(self) -> None:
        if self.items and isinstance(self.items[-1], SimpleCommand):
            self.items.append("\n")

    def visit(self, node: tree_sitter.Node) -> None:
        kind = node.type
        if kind == "comment":
            return
        if kind == "program":
            for child in node.children:
                if child.type in _SEPARATORS:
                    self.items.append(child.type)
                elif child.type != "comment":
                    self.statement_boundary()
                    self.visit(child)
            return
        if kind in ("list", "pipeline"):
            for child in node.children:
                if child.type in _CONNECTORS or child.type in _PIPES:
                    self.items.append(child.type)
                elif child.type in _SEPARATORS:
                    self.items.append(child.type)
                elif child.type != "comment":
                    self.visit(child)
            return
        if kind == "command":
            self.items.append(self._command(node))
            return
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.type in _SIMPLE_BODIES:
                self.visit(body)
                owner = self.last_command()
            else:
                owner = SimpleCommand(compound=body.type if body is not None else None, text=_node_text(node))
                if body is None:
                    owner.compound = None
                self.items.append(owner)
            if owner is None:
                raise ShellSyntaxError("a redirection without a command")
            for child in node.children:
                if child.type in _REDIRECTS:
                    self._redirect(child, owner)
            return
        if kind in _REDIRECTS:
            owner = self.last_command()
            if owner is None:
                raise ShellSyntaxError("a redirection without a command")
            self._redirect(node, owner)
            return
        if kind in ("variable_assignment", "variable_assignments"):
            command = SimpleCommand(assignments=[_node_text(node)], text=_node_text(node))
            self.items.append(command)
            return
        # Subshells, groups, loops, conditionals, functions, `!`, `[[ ]]`, declarations: the
        # classifier does not look inside them, it only needs to know one is there.
        self.items.append(SimpleCommand(compound=kind, text=_node_text(node)))

    def _command(self, node: tree_sitter.Node) -> SimpleCommand:
        command = SimpleCommand(text=_node_text(node))
        pending: list[tree_sitter.Node] = []
        for child in node.children:
            if child.type == "variable_assignment":
                command.assignments.append(_node_text(child))
            elif child.type in _REDIRECTS:
                pending.append(child)
            elif child.type == "command_name":
                command.words.append(evaluate_word(child))
            elif child.is_named and child.type != "comment":
                command.words.append(evaluate_word(child))
            elif child.type in _LITERAL_TOKENS:
                command.words.append(Word(((child.type, False),)))
            elif not child.is_named:
                raise ShellSyntaxError(f"an unexpected token {child.type!r} in a command")
        for child in pending:
            self._redirect(child, command)
        return command

    def _redirect(self, node: tree_sitter.Node, owner: SimpleCommand) -> None:
        fd_node = node.child_by_field_name("descriptor")
        fd = _node_text(fd_node) if fd_node is not None else None
        if node.type == "heredoc_redirect":
            op = "<<"
            body = ""
            quoted = False
            continuation: list[tree_sitter.Node] = []
            line: int | None = None  # the row of `<<EOF`: what follows it there runs after the body
            for child in node.children:
                if child.type in ("<<", "<<-"):
                    op = child.type
                elif child.type == "heredoc_body":
                    body += _node_text(child)
                elif child.type == "heredoc_start":
                    quoted = any(q in _node_text(child) for q in "'\"\\")
                    line = child.start_point[0]
                elif line is not None and child.end_point[0] != line and child.type not in ("heredoc_end", "heredoc_content"):
                    # `cat <<EOF &&` goes on after the body in bash; the grammar takes the body
                    # for the commands after the operator.
                    raise ShellSyntaxError("a line that goes on after a here-document's body")
                elif child.type in ("heredoc_end", "heredoc_content"):
                    continue
                elif child.type in _REDIRECTS:
                    self._redirect(child, owner)
                elif child.type in _CONNECTORS or child.type in _PIPES or child.type in _SEPARATORS:
                    continuation.append(child)
                elif child.is_named:
                    continuation.append(child)
            # Unquoted delimiters let the shell expand $, ` and \\ inside the body.
            expands = not quoted and any(c in body for c in "$`\\")
            owner.redirects.append(Redirect(op, fd, None, body, dynamic=expands))
            # The rest of the heredoc's first line (`| python -`, `&& echo ok`) follows it.
            for child in continuation:
                if child.type in _CONNECTORS or child.type in _PIPES or child.type in _SEPARATORS:
                    self.items.append(child.type)
                else:
                    self.visit(child)
            return
        if node.type == "herestring_redirect":
            value = next((c for c in node.named_children if c.type != "file_descriptor"), None)
            word = evaluate_word(value) if value is not None else Word(dynamic=True)
            owner.redirects.append(Redirect("<<<", fd, word))
            return
        op = None
        destination = node.child_by_field_name("destination")
        for child in node.children:
            if not child.is_named and child.type not in ("(", ")"):
                op = child.type
                break
        if op is None:
            raise ShellSyntaxError(f"unrecognized redirection {_node_text(node)!r}")
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if destination is None and targets:
            destination = targets[0]
        if len(targets) > 1:
            # `> a b` makes b an argument of the command; keep it rather than dropping it.
            owner.words.extend(evaluate_word(t) for t in targets[1:])
        word = evaluate_word(destination) if destination is not None else None
        owner.redirects.append(Redirect(op, fd, word))


def _build(items: list[SimpleCommand | str]) -> Script:
    statements: list[AndOr] = []
    pipelines: list[Pipeline] = []
    connectors: list[str] = []
    commands: list[SimpleCommand] = []
    pipes: list[str] = []
    expecting_command = True

    def close_pipeline() -> None:
        nonlocal commands, pipes
        if not commands:
            raise ShellSyntaxError("an operator without a command")
        pipelines.append(Pipeline(commands, pipes))
        commands, pipes = [], []

    def close_statement(background: bool) -> None:
        nonlocal pipelines, connectors
        close_pipeline()
        statements.append(AndOr(pipelines, connectors, background))
        pipelines, connectors = [], []

    for item in items:
        if isinstance(item, SimpleCommand):
            if not expecting_command:
                raise ShellSyntaxError("two commands without an operator between them")
            commands.append(item)
            expecting_command = False
        elif item in _PIPES:
            if expecting_command:
                raise ShellSyntaxError(f"{item} without a command before it")
            pipes.append(item)
            expecting_command = True
        elif item in _CONNECTORS:
            if expecting_command:
                raise ShellSyntaxError(f"{item} without a command before it")
            close_pipeline()
            connectors.append(item)
            expecting_command = True
        else:  # separator
            if expecting_command:
                if item == "\n" or not (commands or pipelines):
                    continue
                raise ShellSyntaxError(f"{item!r} after an operator")
            close_statement(background=item == "&")
            expecting_command = True
    if not expecting_command:
        close_statement(background=False)
    elif commands or pipelines:
        raise ShellSyntaxError("the command ends with an operator")
    return Script(statements)


# Nodes whose own evaluation reads their text (a backslash there is kept or removed by quoting
# rules), so their children's gaps are never blanks between words.
_QUOTED_BODIES = frozenset({"string", "raw_string", "ansi_c_string", "translated_string", "heredoc_body", "comment"})


def _skips_a_backslash(root: tree_sitter.Node, data: bytes) -> bool:
    """Whether tree-sitter-bash skipped a backslash as a blank where bash reads something else.

    bash removes `\\<newline>` before it splits words and reads `\\<tab>` as a quoted tab, so
    `.\\<newline>.` is the one word `..` (the directory above) and `a\\<tab>b` the one word
    `a<tab>b`; tree-sitter-bash skips both like blanks and sees two words. So in every gap
    between tokens that holds a backslash, once the line continuations are removed there must
    be a blank left (`a \\<newline>b` is two words to bash too) and no other backslash.
    (`\\<CR><LF>` is no continuation to bash: the CR is escaped and the line ends.)
    """
    gaps = [(0, root.start_byte), (root.end_byte, len(data))]
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _QUOTED_BODIES or not node.children:
            continue
        position = node.start_byte
        for child in node.children:
            gaps.append((position, child.start_byte))
            position = child.end_byte
            stack.append(child)
        gaps.append((position, node.end_byte))
    for start, end in gaps:
        if data.find(b"\\", start, end) != -1:
            left = data[start:end].replace(b"\\\n", b"")
            if not left or b"\\" in left:
                return True
    return False


# One step reads the same text several times: the classifier, the fingerprint before the
# decision and after the run, the worktree check, the rules detector. Each is answered from one
# parse: a Script is only read once built, so the same one is handed to every reader (who must
# not change it), and a refusal is kept as its message.
_PARSED: dict[str, "Script | str"] = {}
_PARSED_LIMIT: Final = 256


def parse(text: str) -> Script:
    """Parse `text` into statements of pipelines of simple commands (the same Script for the
    same text while it is among the last texts parsed: read it, never change it).

    Raises ShellSyntaxError for anything tree-sitter flags as an error, for NUL bytes, for
    oversized input, for a backslash tree-sitter skips as a blank where bash joins two tokens
    (`\\<newline>`, `\\<tab>`), and for operator sequences bash would reject.
    """
    if not isinstance(text, str):
        raise ShellSyntaxError(f"a command is a string, got {type(text).__name__}")
    known = _PARSED.get(text)
    if known is None:
        try:
            known = _parse(text)
        except ShellSyntaxError as error:
            known = str(error)
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[text] = known
    if isinstance(known, str):
        raise ShellSyntaxError(known)
    return known


def _parse(text: str) -> Script:
    if "\x00" in text:
        raise ShellSyntaxError("a command cannot contain NUL")
    data = text.encode("utf-8", errors="surrogateescape")
    if len(data) > MAX_COMMAND_BYTES:
        raise ShellSyntaxError(f"command longer than {MAX_COMMAND_BYTES} bytes")
    tree = _PARSER.parse(data)
    root = tree.root_node
    if root.has_error:
        raise ShellSyntaxError("tree-sitter-bash reports a syntax error")
    if b"\\" in data and _skips_a_backslash(root, data):
        raise ShellSyntaxError("a backslash tree-sitter-bash skips as a blank (a line continuation, an escaped tab)")
    flattener = _Flattener()
    try:
        flattener.visit(root)
    except RecursionError as error:
        raise ShellSyntaxError("command nested too deeply") from error
    return _build(flattener.items)
