"""The Flask service. ``create_app(settings)`` builds it; nothing is built at import time."""

from .app import create_app

__all__ = ["create_app"]
