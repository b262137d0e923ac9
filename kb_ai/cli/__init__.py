"""The `kb-ai` command. It only translates: options into settings, results into text or
JSON, kb-ai errors into messages and exit statuses. The work lives in compiler/ and
retrieval/.

Nothing heavy is imported at start-up (litellm takes seconds), so `kb-ai --help` and
the agent hooks stay fast.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kb_ai.errors import KbAiError, NotFoundError, UsageError
from kb_ai.settings import Settings, load_settings

if TYPE_CHECKING:
    from kb_ai.service import OpenKb

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(click.ClickException):
    """A kb-ai error as the CLI reports it: one line, and the right exit status."""

    def __init__(self, error: KbAiError) -> None:
        super().__init__(str(error))
        self.error = error  # its hint and kind (a chat keeps a failed answer's error)
        # naming something that is not there (a page, a task, a session) is bad usage too
        self.exit_code = (
            EXIT_USAGE if isinstance(error, UsageError | NotFoundError) else EXIT_FAILED
        )


def translate_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KbAiError as exc:
            raise CliError(exc) from exc

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class Context:
    def __init__(self, kb_dir: str | None, model: str | None, also: tuple[str, ...] = ()) -> None:
        self.kb_dir = kb_dir
        self.model = model
        self.also = also  # --also: knowledge bases consulted beside this one
        self._noticed = False

    def settings(
        self, *, detect: bool = True, announce: bool = False, **overrides: Any
    ) -> Settings:
        """The settings of this command; with no model named, one is detected (a provider
        key, Ollama, the embedded model). ``announce``: say at once if it is the tiny
        embedded model (commands that check input first call :meth:`announce` after)."""
        overrides.setdefault("model", self.model)
        settings = load_settings(self.kb_dir, overrides, detect=detect)
        if self.also:  # beside those of kb-ai.toml (or the environment)
            settings = dataclasses.replace(settings, also=(*settings.also, *self.also))
        if announce:
            self.announce(settings)
        return settings

    def open_kb(self, settings: Settings) -> OpenKb:
        """The knowledge base of ``settings`` opened for the person at the terminal (git's
        user.name and user.email, else the login name): the author of what it commits."""
        from kb_ai.service import Actor, open_kb

        return open_kb(settings=settings, actor=Actor.cli_user(settings.kb_dir))

    def announce(self, settings: Settings) -> None:
        """Say once that the model is the tiny embedded one. Called by the commands that
        use the model, once their input is checked; a script that runs several commands
        sets KB_AI_NOTICE_SHOWN=1 after the first, so it is said once in all."""
        if self._noticed or os.environ.get("KB_AI_NOTICE_SHOWN", "").strip() not in ("", "0"):
            return
        from kb_ai.models import model_notice

        notice = model_notice(settings.model)
        if notice:
            click.echo(notice, err=True)
        self._noticed = True


pass_context = click.make_pass_decorator(Context)


class LazyGroup(click.Group):
    """A group whose commands may live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in LAZY_COMMANDS:
            try:
                importlib.import_module(LAZY_COMMANDS[name])
            except ModuleNotFoundError as exc:
                if exc.name != LAZY_COMMANDS[name]:
                    raise
                return None  # listed for a module not written yet
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--kb",
    "kb_dir",
    envvar="KB_AI_DIR",
    metavar="DIR",
    help="Knowledge base directory [env KB_AI_DIR; default ./kb].",
)
@click.option(
    "--model",
    envvar="KB_AI_MODEL",
    metavar="MODEL",
    help="Model as litellm names it, e.g. openai/gpt-4o-mini [env KB_AI_MODEL].",
)
@click.option(
    "--also",
    multiple=True,
    metavar="DIR|URL",
    help="Another knowledge base to consult too, read only (a folder or git URL; repeat "
    "for more). Adds to also in kb-ai.toml [env KB_AI_ALSO, comma-separated].",
)
@click.version_option(package_name="kb-ai")
@click.pass_context
def main(ctx: click.Context, kb_dir: str | None, model: str | None, also: tuple[str, ...]) -> None:
    """kb-ai compiles notes, documents and agent transcripts into a git-versioned Markdown
    wiki, and answers questions from it with citations.

    \b
    Start:  kb-ai init && kb-ai compile notes/
    Models: --model or KB_AI_MODEL; KB_AI_API_BASE and KB_AI_API_KEY for any
            OpenAI-compatible endpoint.
    """
    ctx.obj = Context(kb_dir, model, tuple(_absolute(a) for a in also))


def _absolute(entry: str) -> str:
    """A folder named on the command line as an absolute path (kb-ai.toml's relative
    ones are relative to the knowledge base); a git URL as it is."""
    from wiki.mirror import is_git_url

    return entry if is_git_url(entry) else os.path.abspath(os.path.expanduser(entry))


@main.command()
@click.option(
    "--remote",
    "remote",
    metavar="URL",
    help="A git remote that holds the wiki of record: cloned when it holds a knowledge "
    "base, else this one is pushed to it; every commit is pushed there afterwards.",
)
@click.option("--no-hint", is_flag=True, help="Do not print what to run next (for scripts).")
@pass_context
@translate_errors
def init(ctx: Context, remote: str | None, no_hint: bool) -> None:
    """Create the knowledge base directory as a git repository (or clone it from a
    remote: a new server is `kb-ai init --remote URL`, then `kb-ai serve`)."""
    from wiki import KnowledgeBase

    settings = ctx.settings(detect=False)
    remote = remote or settings.wiki_remote
    if remote is None:
        kb = KnowledgeBase.init(settings.kb_dir)
        click.echo(f"Knowledge base ready at {kb.root}")
    else:
        from kb_ai.service.remote import init_from_remote

        done = init_from_remote(settings.kb_dir, remote)
        kb = done.kb
        said = {"cloned": "cloned from", "pushed": "pushed to"}.get(done.how, "following")
        click.echo(f"Knowledge base ready at {kb.root}, {said} {done.url}")
    if not no_hint:
        click.echo(f"Next: kb-ai --kb {kb.root} compile <files or folders>")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--model", help="Model for this run (overrides KB_AI_MODEL and kb-ai.toml).")
@click.option(
    "--concurrency", type=click.IntRange(1, 256), help="Model calls in flight (default 8)."
)
@click.option("--force", is_flag=True, help="Recompile sources even when they are unchanged.")
@click.option(
    "--review/--no-review",
    default=None,
    help="Commit the run to a branch review/<run id> for approval (kb-ai review), not main.",
)
@click.option(
    "--prune",
    is_flag=True,
    help="First remove the sources compiled from these folders that are gone from them.",
)
@click.option(
    "--revises",
    metavar="ID",
    default="",
    help="The one document given revises this source (its id: raw/<ID>.md), whatever "
    "its path, name or text.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@pass_context
@translate_errors
def compile(
    ctx: Context,
    paths: tuple[str, ...],
    model: str | None,
    concurrency: int | None,
    force: bool,
    review: bool | None,
    prune: bool,
    revises: str,
    as_json: bool,
) -> None:
    """Compile files, folders and URLs into wiki articles; one git commit per run.

    \b
    Reads text files (Markdown, plain text, reStructuredText, ...), agent transcripts,
    and documents: .pdf (page markers), .docx, .pptx (slide markers), .xlsx .xlsm .xls
    (sheet markers), .csv .tsv (any encoding), .html .htm (main content), .epub,
    .ipynb, .msg .eml, .rss .atom .xml (feeds), .zip (each member a source).
    URLs (http, https) are fetched: public addresses only unless fetch_allow says so.

    A document that revises a source the wiki has (another folder, an upload, a
    rename) replaces it: found by a kb-id in its frontmatter, --revises, git's rename
    detection, its file name and title, or nearly the same text (see the README).

    Unchanged sources are skipped without a model call. Exit status: 0 when every
    source compiled or was unchanged, 1 when some failed, 2 for bad usage, 130 when
    interrupted (what finished is committed).
    """
    from kb_ai.progress import LineProgress, StageProgress
    from kb_ai.service import compiling

    settings = ctx.settings(model=model or ctx.model, max_concurrency=concurrency, review=review)
    okb = ctx.open_kb(settings)
    if prune:
        for removal in asyncio.run(compiling.prune(okb, paths)):
            if not as_json:
                print_removal(removal, as_json=False)
    ctx.announce(settings)
    terminal = sys.stderr.isatty()
    with StageProgress(enabled=not as_json and terminal) as bar:
        # not a terminal (a log, a script): a line per source finished instead of a bar
        progress = LineProgress() if not as_json and not terminal else bar
        result = asyncio.run(
            compiling.compile_paths(okb, paths, force=force, progress=progress, revises=revises)
        )
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
    else:
        _print_compile(result)
    if result.commit:
        _warn_unpushed(okb)
    if result.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    if result.failed:
        sys.exit(EXIT_FAILED)


def _warn_unpushed(okb: OpenKb) -> None:
    """A line on stderr when the commit could not reach the wiki remote (it waits here)."""
    from kb_ai.service.remote import remote_state

    remote = remote_state(okb)
    if remote is not None and remote.error:
        click.echo(f"Not pushed yet: {remote.error}; {remote.hint}", err=True)


def _print_compile(result: Any) -> None:
    done = len(result.compiled)
    parts = [f"{len(result.skipped)} unchanged"] if result.skipped else []
    if result.failed:
        parts.append(f"{len(result.failed)} failed")
    extra = f" ({', '.join(parts)})" if parts else ""
    click.echo(f"Compiled {done} of {result.sources} source(s){extra} in {result.duration_s:.1f} s")
    for path in result.created:
        click.echo(f"  created  {path}")
    for path in result.updated:
        click.echo(f"  updated  {path}")
    for deletion in result.deleted:
        click.echo(f"  deleted  {deletion.path}: {deletion.cause}")
    for rev in result.revisions:
        click.echo(f"  revised  {rev.raw_path} ({rev.way}): {rev.origin}")
    for maybe in result.maybe_revisions:
        raw, score = maybe.candidates[0]
        ident = raw.removeprefix("raw/").removesuffix(".md")
        click.echo(
            f"  new      {maybe.raw_path} may revise {raw} (similarity {score:.2f}: "
            f"{maybe.reason}); if it does: kb-ai compile --revises {ident} {maybe.origin}"
        )
    for path in result.held:
        click.echo(f"  held     {path}: its update meets a hand edit, which stays as it is")
    if result.held_review:
        click.echo(
            f"  kb-ai review show {result.held_review[7:]} shows both versions; approve takes"
            " kb-ai's, reject keeps the hand edit"
        )
    for lid in result.lessons_new:
        click.echo(f"  learned  lessons/{lid}.md")
    for lid in result.lessons_seen:
        click.echo(f"  seen     lessons/{lid}.md: shown again")
    if result.redactions:
        click.echo(
            f"  removed {result.redactions} secret(s) or <private> span(s) before storing anything"
        )
    for failure in result.failed:
        click.echo(f"  failed   {failure.source}: {failure.error}", err=True)
    u = result.usage
    tail = f"{u.calls} model call(s), {u.prompt_tokens:,} prompt tokens, ${u.cost_usd:.4f}"
    if result.review:
        click.echo(f"Held for review on {result.review} · {tail}")
        click.echo(f"  kb-ai review show {result.review[7:]}, then approve or reject it")
    elif result.commit:
        click.echo(f"Commit {result.commit} · {tail}")
    elif u.calls or done:
        click.echo(tail)
    if result.interrupted:
        click.echo(
            "Interrupted: what finished is committed; run the command again for the rest.", err=True
        )


def print_removal(result: Any, as_json: bool) -> None:
    """What `kb-ai rm` (or compile --prune) removed, as text or JSON."""
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
        return
    for r in result.removed:
        click.echo(f"  removed  {r.raw_path} ({r.origin})")
    for path in result.deleted:
        click.echo(f"  deleted  {path} (no source left)")
    for path in result.rewritten:
        click.echo(f"  rewrote  {path}")
    for path in result.held:
        click.echo(f"  held     {path}: its rewrite meets a hand edit, which stays as it is")
    if result.held_review:
        click.echo(f"  kb-ai review show {result.held_review[7:]} shows both versions")
    u = result.usage
    click.echo(
        f"Removed {len(result.removed)} source(s); commit {result.commit or '-'}"
        f" · {u.calls} model call(s)"
    )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@pass_context
@translate_errors
def status(ctx: Context, as_json: bool) -> None:
    """Sources, articles, what is stale, the last run, and tokens and cost so far."""
    from compiler import kb_status
    from kb_ai.service.remote import remote_state

    okb = ctx.open_kb(ctx.settings())
    kb = okb.kb
    report = kb_status(kb, okb.settings)
    remote = remote_state(okb)
    report["remote"] = remote.as_dict() if remote is not None else None
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False))
        return
    click.echo(f"Knowledge base {kb.root}")
    lost = report["state_lost"]
    if lost:
        rebuilt = ", ".join(f"{n} {what}" for what, n in (lost.get("rebuilt") or {}).items())
        click.echo(
            f"  state.db  missing, made again at {lost['at']}"
            + (f"; rebuilt {rebuilt} from the knowledge base" if rebuilt else "")
            + f"; lost: {lost.get('lost')}"
        )
    click.echo(f"  articles  {report['articles']}")
    s = report["sources"]
    click.echo(f"  sources   {s['total']} ({s['ok']} compiled, {s['failed']} failed)")
    for f in report["failed"]:
        click.echo(f"    failed  {f['source']}: {f['error']}")
    stale = report["stale"]
    if stale["changed"]:
        click.echo(f"  changed on disk since compiled: {len(stale['changed'])} (run kb-ai compile)")
        for origin in stale["changed"][:10]:
            click.echo(f"    {origin}")
    if stale["missing"]:
        click.echo(
            f"  missing on disk: {len(stale['missing'])}"
            " (kb-ai compile --prune DIR, or kb-ai rm FILE, takes what they said out)"
        )
    if stale["lag"]:
        click.echo(
            f"  lag: {len(stale['lag'])} source(s) extracted with another model or prompt "
            f"(now {report['model'] or 'no model'}, prompt {report['prompt_version']}); "
            "recompile with: kb-ai compile --force <paths>"
        )
    run = report["last_run"]
    if run:
        click.echo(
            f"  last run  {run['finished_at']}: {len(run['compiled'])} compiled, "
            f"{len(run['failed'])} failed, commit {run['commit'] or '-'}"
        )
    else:
        click.echo("  last run  never (kb-ai compile <paths>)")
    for r in report["unfinished_runs"]:
        click.echo(f"  {r['state']:<9} {_unfinished_line(r)}")
    u = report["usage"]
    click.echo(
        f"  model use {u['calls']} call(s), {u['prompt_tokens']:,} prompt + "
        f"{u['completion_tokens']:,} completion tokens, ${u['cost_usd']:.4f}"
    )
    if u.get("unlogged"):
        gone = u["unlogged"]
        click.echo(
            f"  not logged {gone['calls']} model call(s) since {gone['since']}: the shared"
            f" database was away ({gone['error']})"
        )
    if remote is not None:
        click.echo(f"  remote    {remote.url}: " + _remote_line(remote))


def _unfinished_line(run: dict[str, Any]) -> str:
    """A run not finished, in one line after its state (running, stopped, died)."""
    where = f", on {run['host']}" if run["host"] else ""
    head = f"run {run['id']} ({run['started_by'] or '?'}{where}, started {run['started_at']})"
    if run["state"] == "died":
        return (
            f"{head}: no sign of life since {run['last_seen']}; its process was killed or"
            " its machine is gone (what it had not committed compiles again)"
        )
    if run["state"] == "stopped":
        return f"{head}: its process is gone from this machine"
    count = f" {run['done']}/{run['total']}" if run["total"] else ""
    return f"{head}: {run['stage'] or 'starting'}{count}"


def _remote_line(remote: Any) -> str:
    waiting = f"{remote.ahead} commit(s) not pushed"
    if remote.error:
        since = f" since {remote.failing_since}" if remote.failing_since else ""
        return f"{waiting}; failing{since}: {remote.error} ({remote.hint})"
    if remote.ahead:
        return f"{waiting} yet (pushed at the next commit or by the server)"
    when = f", checked {remote.synced_at}" if remote.synced_at else ""
    return f"up to date{when}"


@main.command()
@pass_context
@translate_errors
def sync(ctx: Context) -> None:
    """Push the commits waiting for the wiki remote and take in what others pushed
    (what `kb-ai serve` does every few seconds). Exit status 1 when it fails."""
    from kb_ai.service.remote import publish

    okb = ctx.open_kb(ctx.settings(detect=False))
    synced = publish(okb)
    if synced is None:
        raise UsageError(
            f"{okb.root} follows no wiki remote",
            hint="kb-ai init --remote URL makes one from a remote, or set KB_AI_WIKI_REMOTE",
        )
    if synced.skipped:
        raise KbAiError(f"not now: {synced.skipped}", hint="try again when it is done")
    state = synced.state
    if state.error:
        raise KbAiError(state.error, hint=state.hint)
    click.echo(
        f"{state.url}: pushed {synced.pushed} commit(s), took in {len(synced.changed)} "
        "changed file(s)"
    )


# Commands that live in their own modules, imported only when they are run (or listed by
# --help): `kb-ai hook` must not pay for, or be broken by, the web server's imports.
# Each module registers its commands on `main` when imported.
LAZY_COMMANDS = {
    "ask": "kb_ai.cli.ask",
    "chat": "kb_ai.cli.ask",
    "corpus": "kb_ai.cli.corpus",
    "mcp": "kb_ai.cli.mcp",
    "serve": "kb_ai.cli.serve",
    "doctor": "kb_ai.cli.doctor",
    "hook": "kb_ai.cli.hooks",
    "hooks": "kb_ai.cli.hooks",
    "worker": "kb_ai.cli.hooks",
    "settings": "kb_ai.cli.settings",
    "lint": "kb_ai.cli.lint",
    "rm": "kb_ai.cli.remove",
    "review": "kb_ai.cli.review",
    "learned": "kb_ai.cli.learned",
    "watch": "kb_ai.cli.watch",
    "users": "kb_ai.cli.users",
    "audit": "kb_ai.cli.users",
    "eval": "kb_ai.cli.evaluate",
}


def run() -> None:  # pragma: no cover - console entry for python -m kb_ai
    main(prog_name="kb-ai")


if __name__ == "__main__":  # pragma: no cover
    run()
