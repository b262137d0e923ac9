"""The web app: pages, a JSON API with server-sent events, and the compile workers."""

from web.app import create_app

__all__ = ["create_app"]
