"""`ledger economize`: TokenEconomizer's controller for a stream of tasks per repository.

  feed FILE        feed finished tasks (mini-swe-agent JSONL, one trajectory a line) in order
  show REPO        the state: skills with their evidence, tools, budget, last records
  manual REPO      the manual for the next task (optionally prepended to --prompt)
  mask REPO        the tool mask for the next task, in a harness's option format
  guard REPO FILE  the guard's signal after the last step of a partial trajectory
  evaluate CORPUS  replay each repository of a corpus as a stream; table + --json
  prove            the Z3 theorems about the guard and tool pruning

Exit codes: 0 done, 1 a theorem failed (prove), 2 bad input. Bad input (a malformed
trajectory, a proposer answer with an inadmissible regex or one whose detector does not
finish in --detector-timeout-s, a locked, unreadable or already-fed state) is reported in one
line and leaves every stored database as it was. A model call that fails (see
economizer.model_calls) is not bad input: its rule applies, and one warning line on stderr
says how many of the run's model calls failed and the first error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
from fractions import Fraction
from typing import Any, Callable, Iterator

import attrs

from economizer.codec import BadInput, proposals_from_json, read_jsonl, record_to_json
from economizer.controller import Controller
from economizer.harness import HARNESSES, mask_option, prompt_with_manual
from economizer.protocols import default_controllers
from economizer.bounded import DEFAULT_TIMEOUT, BoundedMatcher, TimedOut
from economizer.store import AlreadyFed, StateUnreadable, Store, StoreBusy, database_path, fed_budget, transact_all
from economizer.model_client import ModelClient, ModelSetupError
from economizer.model_recording import ReplayDiverged
from economizer_spec.cost import Prices
from economizer_spec.params import GUARD_RULES, Params
from economizer_spec.stream import Controllers, ProposerAnswer
from ledger_cli.errors import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("economize", help="TokenEconomizer's controller: micro-skills, tool mask, failure-loop guard")
    sub = parser.add_subparsers(dest="economize_command", metavar="SUBCOMMAND")

    def with_state(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--state-dir", type=pathlib.Path, default=None, help="Ledger's state root; the databases live in its economizer/ folder (default $XDG_STATE_HOME/ledger, as for `ledger sessions`)")
        return p

    def with_guard_rule(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--guard", choices=GUARD_RULES, default=None,
                       help="the forced rule's threshold: kappa (the paper's kappa*B) or conformal (false-stop rate <= --alpha); default: the stored state's, kappa for a new one")
        p.add_argument("--alpha", type=Fraction, default=None, help="the conformal guard's false-stop rate, in (0, 1) (default 0.05)")
        p.add_argument("--kappa", type=Fraction, default=None, help="the kappa rule's multiple of B (default 2.5)")
        return p

    def with_model(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", default=None, metavar="PROVIDER:NAME",
                       help="ask a real model: anthropic:NAME (key in $ANTHROPIC_API_KEY) or openai:NAME (any OpenAI-compatible endpoint, key in $OPENAI_API_KEY, base URL in $OPENAI_BASE_URL)")
        p.add_argument("--record", type=pathlib.Path, default=None, help="write every model call of this run (request, answer, tokens, cost) to this JSONL file")
        p.add_argument("--replay", type=pathlib.Path, default=None, help="answer every model call from this recording, offline; a call that differs from it is refused")
        p.add_argument("--model-timeout-s", type=float, default=60.0, help="seconds one model request may take (default 60)")
        p.add_argument("--model-retries", type=int, default=3, help="retries of a rate-limited, overloaded or dropped request (default 3)")
        p.add_argument("--stream", action="store_true", help="stream the model's answers")
        p.add_argument("--prices", default=None, metavar="IN,CACHE_READ,CACHE_WRITE,OUT", help="USD per million tokens of each class, for the recording's cost")

    feed = with_guard_rule(with_state(sub.add_parser("feed", help="feed finished tasks, in order")))
    feed.add_argument("file", type=pathlib.Path)
    feed.add_argument("--proposals", type=pathlib.Path, help="a proposer answer (JSON {\"skills\": [...]}) used at each due proposer call instead of the digest-mining default")
    feed.add_argument("--catalog", default="bash", help="comma-separated tool catalog (used when a repository's state is created)")
    feed.add_argument("--core", default="bash", help="comma-separated core tools, never masked")
    feed.add_argument("--json", action="store_true")
    feed.add_argument("--busy-timeout-ms", type=int, default=5000, help="how long to wait for another writer (default 5000)")
    with_model(feed)
    feed.add_argument("--detector-timeout-s", type=float, default=DEFAULT_TIMEOUT,
                      help=f"seconds a skill's detectors may take on one trajectory before they are stopped (default {DEFAULT_TIMEOUT:g})")

    show = with_guard_rule(with_state(sub.add_parser("show", help="show a repository's controller state")))
    show.add_argument("repository")
    show.add_argument("--json", action="store_true")

    manual = with_state(sub.add_parser("manual", help="the manual for the next task"))
    manual.add_argument("repository")
    manual.add_argument("--budget", type=int, default=None, help="characters (default: the state's manual_budget)")
    manual.add_argument("--prompt", default=None, help="print the manual prepended to this task prompt")

    mask = with_state(sub.add_parser("mask", help="the tool mask for the next task"))
    mask.add_argument("repository")
    mask.add_argument("--harness", choices=HARNESSES, default="claude")

    guard = with_guard_rule(with_state(sub.add_parser("guard", help="the guard's signal after the last step of a partial trajectory")))
    guard.add_argument("repository")
    guard.add_argument("file", type=pathlib.Path)
    with_model(guard)

    evaluate = sub.add_parser("evaluate", help="replay a corpus as per-repository streams")
    evaluate.add_argument("corpus", type=pathlib.Path)
    evaluate.add_argument("--json", dest="json_out", type=pathlib.Path, default=None, help="write the full figures here")
    evaluate.add_argument("--no-grid", action="store_true", help="skip the sensitivity grid")

    prove = sub.add_parser("prove", help="Z3 theorems: the guard's non-vetoable stop, the pruning invariants")
    prove.add_argument("--json", action="store_true")

    parser.set_defaults(run=run, economize_parser=parser)


def _fail(message: str) -> int:
    print(f"ledger economize: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"cannot read {path}: {error}") from None


def _model_client(args: argparse.Namespace) -> ModelClient | None:
    """The model calls' client for this run (a replay, a recorded or a plain SDK client), or None."""
    from economizer.model_client import ModelSpec, RetryPolicy, connect
    from economizer.model_recording import Recorder, Replayer

    if args.record is not None and args.replay is not None:
        raise BadInput("--record and --replay exclude each other")
    if args.replay is not None:
        replayer = Replayer(args.replay)
        if args.model is not None and str(ModelSpec.parse(args.model)) != replayer.model:
            raise BadInput(f"{args.replay} recorded {replayer.model}, not {args.model}")
        return replayer
    if args.model is None:
        if args.record is not None:
            raise BadInput("--record needs --model")
        return None
    if args.model_retries < 0 or not args.model_timeout_s > 0:
        raise BadInput("--model-retries must be >= 0 and --model-timeout-s positive")
    client = connect(ModelSpec.parse(args.model), args.model_timeout_s, RetryPolicy(retries=args.model_retries), args.stream)
    if args.record is None:
        return client
    prices = None
    if args.prices is not None:
        try:
            prices = Prices(*(Fraction(x) for x in args.prices.split(",")))
        except (TypeError, ValueError, ZeroDivisionError):
            raise BadInput(f"--prices must be four numbers IN,CACHE_READ,CACHE_WRITE,OUT, got {args.prices!r}") from None
    return Recorder(client, args.record, prices)


def _model_calls(client: ModelClient | None) -> Any:
    """The four model calls through `client` (they count their failures), or None."""
    if client is None:
        return None
    from economizer.model_calls import ModelCalls

    return ModelCalls(client)


def _controllers(proposals: pathlib.Path | None, calls: Any = None, tool_judge: bool = False) -> Controllers:
    defaults = default_controllers()
    if calls is not None:
        if proposals is not None:
            raise BadInput("--proposals and a model (--model/--replay) exclude each other")
        return calls.controllers(tool_judge)
    if proposals is None:
        return defaults
    answer = ProposerAnswer(proposals_from_json(_read(proposals), str(proposals)))
    return Controllers(lambda repository, ids, digests: answer, defaults.trace_judge, defaults.redirect_writer, None)


def _warn_of_failed_calls(calls: Any) -> None:
    """A run whose model calls failed must not pass silently for a run with a model."""
    warning = calls.tally.warning(calls.client.model) if calls is not None else None
    if warning is not None:
        print(f"ledger economize: warning: {warning}", file=sys.stderr)


def _guard_setting(args: argparse.Namespace) -> Callable[[Params], Params]:
    """The command line's guard rule over a state's parameters (validated before any write)."""
    changes = {k: v for k, v in (("guard_rule", args.guard), ("alpha", args.alpha), ("kappa", args.kappa)) if v is not None}
    try:
        attrs.evolve(Params(), **changes)
    except ValueError as error:
        raise BadInput(str(error)) from None
    return lambda params: attrs.evolve(params, **changes)


def _split(names: str) -> tuple[str, ...]:
    return tuple(n for n in (x.strip() for x in names.split(",")) if n)


def _feed(args: argparse.Namespace) -> int:
    rows = read_jsonl(_read(args.file), str(args.file))
    adjust = _guard_setting(args)
    client = _model_client(args)
    calls = _model_calls(client)
    optional_tools = bool(set(_split(args.catalog)) - set(_split(args.core)))
    with _released_on_failure(client):
        controllers = _controllers(args.proposals, calls, optional_tools)  # validated in full before any write
        status = _feed_with(args, rows, controllers, adjust, client)
    _warn_of_failed_calls(calls)
    return status


@contextlib.contextmanager
def _released_on_failure(client: ModelClient | None) -> Iterator[None]:
    """A run that fails still releases the client's connections and its recording's file. Its
    close may raise too (a replay that stopped early): the run's own error is the one to report."""
    try:
        yield
    except BaseException:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        raise


def _feed_with(args: argparse.Namespace, rows: list, controllers: Controllers, adjust: Callable[[Params], Params], client: ModelClient | None) -> int:
    if not args.detector_timeout_s > 0:
        raise BadInput(f"--detector-timeout-s must be positive, got {args.detector_timeout_s}")
    by_repository: dict[str, list] = {}
    for repository, trajectory, _ in rows:
        by_repository.setdefault(repository, []).append(trajectory)
    for repository, trajectories in by_repository.items():
        ids = [t.task_id for t in trajectories]
        if len(set(ids)) != len(ids):
            raise BadInput(f"{args.file}: a task id appears twice for {repository}")
    for repository, trajectories in by_repository.items():  # refuse before writing any repository
        if not database_path(repository, args.state_dir).is_file():
            continue  # nothing fed yet; checking must not create the file
        with Store(repository, args.state_dir, args.busy_timeout_ms) as store:
            again = sorted(store.fed_ids() & {t.task_id for t in trajectories})
        if again:
            raise BadInput(f"task {again[0]} was already fed to {repository}")
    output: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        # Detectors run in a worker killed after --detector-timeout-s: a proposer's regex that
        # the static check admits can still backtrack for hours on one long line.
        matcher = stack.enter_context(BoundedMatcher(args.detector_timeout_s))
        timed_out = TimedOut(args.detector_timeout_s).reason
        jobs = []
        for repository, trajectories in by_repository.items():
            store = stack.enter_context(Store(repository, args.state_dir, args.busy_timeout_ms))

            def work(controller: Controller, trajectories: list = trajectories, last: bool = repository == max(by_repository)) -> list[Any]:
                controller.params = adjust(controller.params)  # stored with the state
                records = [controller.feed(t, controllers) for t in trajectories]
                if last and client is not None:  # staged last (repository order): a replay must use every call
                    client.close()
                if args.proposals is not None:  # the file's regex, not the controller, is at fault
                    for rejection in (r for record in records for r in record.rejections if r.reason == timed_out):
                        raise BadInput(f"{args.proposals}: skill {rejection.skill_id}: {rejection.reason}")
                return records

            jobs.append((store, work, {"catalog": _split(args.catalog), "core": _split(args.core), "matcher": matcher}))
        results = transact_all(jobs)  # all repositories or none
    for repository, records in zip(by_repository, results):
        for record in records:
            output.append({"repository": repository, **record_to_json(record)})
    if args.json:
        print(json.dumps(output, indent=2, default=str))
        return 0
    for item in output:
        interventions = ", ".join(f"{d['action']}@{d['turn']}" for d in item["decisions"]) or "-"
        print(f"{item['repository']} #{item['index']} {item['task_id']}: passed={item['passed']} turns={item['turns']} "
              f"injected={len(item['injected'])} masked={len(item['mask'])} guard={interventions}")
        for rejection in item["rejections"]:
            print(f"  rejected skill {rejection['skill_id']}: {rejection['reason']}")
    return 0


def _state(args: argparse.Namespace) -> tuple[Store, Controller]:
    """The stored state of a repository that was fed before; reading never creates one."""
    path = database_path(args.repository, args.state_dir)
    if not path.is_file():
        raise BadInput(f"no economizer state for {args.repository} ({path} does not exist); feed it first")
    store = Store(args.repository, args.state_dir)
    try:
        if not store.has_state():  # created by a feed that then failed
            raise BadInput(f"no economizer state for {args.repository} (no feed committed to {path}); feed it first")
        return store, store.load()
    except BaseException:
        store.close()
        raise


def _show(args: argparse.Namespace) -> int:
    store, controller = _state(args)
    controller.params = _guard_setting(args)(controller.params)
    with store:
        summary = {
            "repository": controller.repository,
            "tasks": controller.index,
            "budget": controller.budget(),
            "guard": {"rule": controller.params.guard_rule, "alpha": str(controller.params.alpha), "kappa": str(controller.params.kappa)},
            "skills": controller.skill_summary(),
            "tools": {name: {"ever_called": c, "streak": s} for name, (c, s) in controller.tools.items()},
            "rejections": [[r.task, r.skill_id, r.reason] for r in controller.rejections],
            "recent": store.records()[-5:],
        }
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    rule = controller.params.guard_rule
    setting = f"conformal alpha={controller.params.alpha}, stop point T" if rule == "conformal" else f"kappa={controller.params.kappa}, budget B"
    print(f"{controller.repository}: {controller.index} tasks, guard {setting}={summary['budget']}")
    for name, s in summary["skills"].items():
        print(f"  skill {name}: {s['status']} confirmations={s['confirmations']} contradictions={s['contradictions']} "
              f"needed={s['needed']}/{s['exercised']} support={float(s['support']):.2f} injected={len(s['injected_tasks'])}"
              + (f" retired: {s['retired_reason']}" if s["retired_reason"] else ""))
    for name, t in summary["tools"].items():
        print(f"  tool {name}: ever_called={t['ever_called']} streak={t['streak']}")
    return 0


def _manual(args: argparse.Namespace) -> int:
    store, controller = _state(args)
    store.close()
    text, _ = controller.manual(args.budget)
    print(prompt_with_manual(text, args.prompt) if args.prompt is not None else text)
    return 0


def _mask(args: argparse.Namespace) -> int:
    store, controller = _state(args)
    store.close()
    planned = controller.plan("", default_controllers())
    print(mask_option(planned.mask, args.harness))
    return 0


def _guard(args: argparse.Namespace) -> int:
    from economizer.guard import Guard
    from economizer.harness import guard_signal

    # Before the repository's first feed there is no budget yet, so only the judge could act.
    budget, params = fed_budget(args.repository, args.state_dir, _guard_setting(args))
    rows = read_jsonl(_read(args.file), str(args.file))
    if len(rows) != 1:
        raise BadInput(f"{args.file}: expected one partial trajectory, got {len(rows)}")
    client = _model_client(args)
    calls = _model_calls(client)
    with _released_on_failure(client):
        controllers = _controllers(None, calls)
        guard = Guard(params, budget, controllers.trace_judge, controllers.redirect_writer)
        decision = None
        for step in rows[0][1].steps:
            decision = guard.observe(step)
        if client is not None:
            client.close()
    _warn_of_failed_calls(calls)
    signal = guard_signal(decision) if decision is not None else None
    if signal is None:
        print(json.dumps({"action": "continue", "turn": guard.turns}))
    elif hasattr(signal, "note"):
        print(json.dumps({"action": "redirect", "turn": guard.turns, "nudge": signal.note}))
    else:
        print(signal.as_json())
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from ledger_properties.economizer_evaluation import evaluate_corpus, render_table

    report = evaluate_corpus(args.corpus, grid=not args.no_grid)
    print(render_table(report))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json_out}")
    return 0


def _prove(args: argparse.Namespace) -> int:
    from economizer_spec.z3_theorems import run_all

    results = run_all()
    ok = all(r.as_expected for r in results)
    if args.json:
        print(json.dumps([{"name": r.name, "status": r.status, "as_expected": r.as_expected, "seconds": round(r.seconds, 4), "statement": r.statement, "model": r.model_text} for r in results], indent=2))
    else:
        for r in results:
            print(f"{r.name:<44} {r.status:<15} {r.seconds:6.2f}s  {r.statement}")
            if r.model_text and not r.as_expected:
                print(f"  counterexample: {r.model_text}")
        print("all theorems as expected" if ok else "SOME THEOREMS FAILED")
    return EXIT_OK if ok else EXIT_VIOLATION


HANDLERS = {"feed": _feed, "show": _show, "manual": _manual, "mask": _mask, "guard": _guard, "evaluate": _evaluate, "prove": _prove}


def run(args: argparse.Namespace) -> int:
    handler = HANDLERS.get(args.economize_command or "")
    if handler is None:
        args.economize_parser.print_help()
        return EXIT_USAGE
    try:
        return handler(args)
    except (BadInput, AlreadyFed, StoreBusy, StateUnreadable, ModelSetupError, ReplayDiverged) as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"{error.strerror or error}: {getattr(error, 'filename', '') or ''}".rstrip(": "))
