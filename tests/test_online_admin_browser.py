"""The /admin/online page in a real browser (Debian's chromium through Playwright): an
operator sees a few days of lists served, an interleaving experiment's verdict and the three
charts, each loaded as an image under the pages' Content-Security-Policy.

``PAPERREC_SCREENSHOTS=docs`` writes docs/deployment/admin-online.png (the page's picture in
docs/deployment/online.md); otherwise the screenshot goes to a temporary directory.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

from recommender.core.config import Settings
from recommender.wiring import Paperrec
from replay.server import free_port
from replay.web_steps import sign_in
from service.state import EXTENSION
from service.web.sessions import COOKIE

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.system, pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="Debian's chromium is missing at /usr/bin/chromium (.ci/run sees to it)")]
OPERATOR = "ops@example.org"


def seed_history(parts: Paperrec, now: float, *, days: int = 6, readers: int = 16) -> None:
    """Lists served to ``readers`` readers a day for ``days`` days, liked more at the top;
    an interleaving experiment (popular against hybrid) over the last two days."""
    draw = random.Random(7)
    for day in range(days, 0, -1):
        at = now - day * 86400
        if day == 2:
            parts.start_experiment("popular", at - 60)
        for r in range(readers):
            user = f"reader{r}"
            reading = parts.recommender.recommend(user, 10, now=at + r, surface="api")
            for place, item in enumerate(reading.items, 1):
                if draw.random() < 0.45 / place ** 0.7:
                    parts.events.outcome("like", user, reading.list_id, item.paper_id,
                                         at + r + 30)
                    parts.feedback.set(user, item.paper_id, "like", at + r + 30)


def test_the_operator_sees_the_figures_and_the_charts_load(
    make_app: Callable[[Settings], Flask], sample_settings: Settings, tmp_path: Path,
) -> None:
    mail = tmp_path / "mail"
    port = free_port()
    app = make_app(sample_settings.replace(admin_emails=OPERATOR, mail_dir=str(mail),
                                           public_url=f"http://127.0.0.1:{port}"))
    parts: Paperrec = app.extensions[EXTENSION]
    seed_history(parts, time.time())
    parts.export_events(time.time())
    operator = app.test_client()
    sign_in(operator, OPERATOR, mail)
    cookie = operator.get_cookie(COOKIE)
    assert cookie is not None
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    blocked: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
            context = browser.new_context(viewport={"width": 1100, "height": 900})
            context.add_cookies([{"name": COOKIE, "value": cookie.value,
                                  "url": f"http://127.0.0.1:{port}"}])
            tab = context.new_page()
            tab.on("console", lambda message: blocked.append(message.text)
                   if "Content Security Policy" in message.text else None)
            tab.goto(f"http://127.0.0.1:{port}/admin/online")
            tab.wait_for_load_state("networkidle")
            assert tab.get_by_role("heading", name="Online figures and experiments").is_visible()
            assert "popular against hybrid" in tab.locator("table").first.inner_text()
            widths = tab.locator("img.chart").evaluate_all(
                "images => images.map(i => i.complete ? i.naturalWidth : 0)")
            assert len(widths) == 3 and all(width > 300 for width in widths), widths
            shots = (REPO / "docs" / "deployment"
                     if os.environ.get("PAPERREC_SCREENSHOTS") == "docs" else tmp_path)
            tab.screenshot(path=str(shots / "admin-online.png"), full_page=True)
            browser.close()
    finally:
        server.shutdown()
        thread.join(10)
    assert not blocked
