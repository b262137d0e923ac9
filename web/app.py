"""The web app: `create_app(settings)` builds it; `kb-ai serve` runs it with uvicorn.

Pages and a JSON API over one knowledge base, and the compile workers inside the same
process (on a thread of their own, see web/pool.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import FileResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from kb_ai.errors import KbAiError
from kb_ai.llm import LLM
from kb_ai.service import Actor, open_kb
from kb_ai.service.fairness import QuestionBuckets
from kb_ai.service.remote import Follower, remote_state
from kb_ai.settings import Settings
from web import also, api, csrf, editor, health, login, pages, upkeep
from web.auth import GuardMiddleware
from web.errors import on_http_error, on_kb_error
from web.forwarded import ForwardedMiddleware, networks
from web.people import Directory, ProxyRule
from web.pool import WorkerPool
from web.services import Limits, Services
from web.sessions import Sessions, SignInThrottle

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


def create_app(
    settings: Settings,
    *,
    llm_factory: Callable[..., LLM] | None = None,
    actor: Actor | None = None,
    start_worker: bool = True,
    workers: int = 1,
    token: str | None = None,
    limits: Limits | None = None,
    status_interval: float = 0.5,
    worker_poll_seconds: float = 1.0,
    worker_lease_seconds: float = 600.0,
    worker_retry_seconds: float = 1.0,
    health_limits: health.HealthLimits | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    extra_lifespans: Sequence[Callable[[], contextlib.AbstractAsyncContextManager]] = (),
    questions: QuestionBuckets | None = None,
) -> Starlette:
    """The Starlette app over the knowledge base at ``settings.kb_dir``.

    ``token``: required on every request when set (see web/auth.py; writes also need
    to come from the server's own pages or a script).
    ``worker_retry_seconds``: a worker's first pause after a failure (it doubles with each
    failure in a row); ``health_limits``: when /healthz says unhealthy (web/health.py).
    ``extra_routes``: more routes behind the same guard (`kb-ai serve` mounts the MCP
    server at /mcp this way); ``extra_lifespans``: what those routes run while the app does.
    ``actor``: who the requests act as (the author of what they commit); until people
    sign in, a web user named by the ``web_editor`` setting. ``llm_factory``: the model
    client maker (tests' fakes). ``questions``: the per-person question buckets
    (`kb-ai serve` shares them with the MCP server at /mcp); one of its own otherwise.
    """
    factory = {"llm_factory": llm_factory} if llm_factory is not None else {}
    actor = actor or Actor("web", settings.web_editor.strip() or "web user")
    okb = open_kb(settings=settings, actor=actor, **factory)
    kb = okb.kb
    svc = Services(
        okb=okb,
        limits=limits
        or Limits(
            max_file_bytes=settings.max_source_bytes,
            max_document_bytes=settings.max_document_bytes,
        ),
        status_interval=status_interval,
        questions=questions or QuestionBuckets(settings.questions_per_minute),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if start_worker:
            # what no one submitted (agent captures) is compiled as the worker
            svc.pool = WorkerPool(
                okb.acting_as(Actor.worker()),
                size=workers,
                poll_seconds=worker_poll_seconds,
                lease_seconds=worker_lease_seconds,
                retry_seconds=worker_retry_seconds,
            )
            svc.pool.start()
        if svc.settings.wiki_follow_seconds > 0 and remote_state(okb) is not None:
            svc.follower = Follower(okb, svc.settings.wiki_follow_seconds)
            svc.follower.start()
        try:
            async with contextlib.AsyncExitStack() as stack:
                for enter in extra_lifespans:  # mounted apps that run something of their own
                    await stack.enter_async_context(enter())
                yield {}
        finally:
            unfinished = list(svc.background)  # answers still being written
            for task in unfinished:
                task.cancel()
            # let each settle (an unanswered question is kept in its session)
            await asyncio.gather(*unfinished, return_exceptions=True)
            await svc.aclose()
            if svc.pool is not None:
                svc.pool.stop()
            if svc.follower is not None:
                await asyncio.to_thread(svc.follower.stop)

    routes: list[BaseRoute] = [
        Route("/healthz", health.healthz),
        *api.routes(),
        *pages.routes(),
        *also.routes(),
        *editor.routes(),
        *upkeep.routes(),
        *login.routes(),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        Route("/favicon.ico", _favicon),  # browsers ask for it whatever the page says
    ]
    routes += extra_routes
    csrf_token = csrf.load_secret(kb.state_dir)
    proxy = ProxyRule.of(
        settings.trusted_user_header, settings.trusted_proxies, settings.default_role
    )
    directory = Directory(kb, token, proxy)
    sessions, throttle = Sessions(csrf_token), SignInThrottle()
    app = Starlette(
        routes=routes,
        middleware=[
            # the client's address and scheme, from a trusted proxy's headers
            Middleware(ForwardedMiddleware, proxies=networks(settings.trusted_proxies)),
            Middleware(
                GuardMiddleware,
                token=token,
                csrf_token=csrf_token,
                directory=directory,
                sessions=sessions,
                throttle=throttle,
            ),
        ],
        exception_handlers={KbAiError: on_kb_error, HTTPException: on_http_error},
        lifespan=lifespan,
    )
    app.state.services = svc
    app.state.health_limits = health_limits or health.HealthLimits()
    app.state.csrf = csrf_token
    app.state.directory, app.state.sessions, app.state.throttle = directory, sessions, throttle
    return app


async def _favicon(request: object) -> FileResponse:
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")
