"""Simulated readers of a running service (`paperrec simulate --service URL`): they use its
REST API as a client program would, so what they do flows into that service's impression
log, its report, its admin page's charts and the experiment it is running.

Each reader (``sim-0001``, ...) first asks for a list as a newcomer, picks one of its papers
as their interest and likes it; what they would go on to like (their hidden library) is the
``library`` papers the service finds closest to it (``GET /v1/papers/<id>/similar``). Then,
round after round, each reader asks for their list (``GET /v1/users/<id>/recommendations``)
and likes the papers of it that are in their library, unless they do not look
(``skip_chance``), sending the list's ``list_id`` with each like, as the API asks; a reader
who liked nothing on the first page looks at the second. The service's own clock is used:
every list is today's.

Erase the simulated readers afterwards with ``DELETE /v1/users/<id>`` (``forget``), which
erases their lists and likes from the impression log too.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

import requests
from tqdm import tqdm

from recommender.core.errors import InvalidInput, PaperrecError

TIMEOUT = 30.0  # seconds per request
PREFIX = "sim-"


@dataclass(frozen=True)
class ServiceRun:
    url: str
    users: int = 20
    rounds: int = 10
    k: int = 10
    library: int = 8
    skip_chance: float = 0.3
    seed: int = 0
    api_key: str = ""


@dataclass
class ServiceSummary:
    readers: int = 0
    lists: int = 0
    impressions: int = 0
    likes: int = 0
    libraries: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("libraries")
        out["like_rate"] = round(self.likes / self.impressions, 4) if self.impressions else None
        return out


class _Client:
    def __init__(self, run: ServiceRun) -> None:
        self._base = run.url.rstrip("/")
        self._session = requests.Session()
        if run.api_key:
            self._session.headers["Authorization"] = f"Bearer {run.api_key}"

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            answer = self._session.request(method, self._base + path, timeout=TIMEOUT,
                                           **kwargs)
        except requests.RequestException as exc:
            raise PaperrecError(f"the service at {self._base} did not answer {method} {path}: "
                                f"{exc}") from None
        if answer.status_code >= 400:
            raise PaperrecError(f"the service answered {method} {path} with "
                                f"{answer.status_code}: {answer.text[:300]}")
        return answer.json() if answer.content else None


def drive(run: ServiceRun, progress: bool = True) -> ServiceSummary:
    """Simulate ``run.users`` readers of the service at ``run.url`` for ``run.rounds``
    rounds (see the module's docstring)."""
    if run.users < 1 or run.rounds < 1 or run.k < 1 or run.library < 1:
        raise InvalidInput("--users, --rounds, the list and library sizes must be at least 1")
    if not 0 <= run.skip_chance < 1:
        raise InvalidInput(f"--skip-chance must be at least 0 and below 1, got {run.skip_chance}")
    client = _Client(run)
    rng = random.Random(run.seed)
    summary = ServiceSummary()
    readers = [f"{PREFIX}{n:04d}" for n in range(1, run.users + 1)]
    for reader in tqdm(readers, desc="readers", unit="reader", disable=not progress):
        first = client.call("GET", f"/v1/users/{reader}/recommendations",
                            params={"k": run.k})
        if not first["items"]:
            raise PaperrecError("the service's list is empty: ingest papers and build the "
                                "index first (`paperrec init`)")
        summary.lists += 1
        summary.impressions += len(first["items"])
        interest = rng.choice(first["items"])["paper_id"]
        similar = client.call("GET", f"/v1/papers/{interest}/similar",
                              params={"k": run.library})
        summary.libraries[reader] = [item["paper_id"] for item in similar["items"]]
        client.call("PUT", f"/v1/users/{reader}/feedback/{interest}",
                    json={"signal": "like", "list_id": first["list_id"]})
        summary.likes += 1
        summary.readers += 1
    for _ in tqdm(range(run.rounds), desc="rounds", unit="round", disable=not progress):
        for reader in readers:
            library = set(summary.libraries[reader])
            for offset in (0, run.k):  # nothing liked on the first page: the second
                found = client.call("GET", f"/v1/users/{reader}/recommendations",
                                    params={"k": run.k, "offset": offset})
                summary.lists += 1
                summary.impressions += len(found["items"])
                liked = [item["paper_id"] for item in found["items"]
                         if item["paper_id"] in library and rng.random() >= run.skip_chance]
                for paper in liked:
                    client.call("PUT", f"/v1/users/{reader}/feedback/{paper}",
                                json={"signal": "like", "list_id": found["list_id"]})
                    library.discard(paper)
                summary.likes += len(liked)
                summary.libraries[reader] = sorted(library)
                if liked:
                    break
    return summary


def forget(run: ServiceRun) -> int:
    """Erase the simulated readers (``DELETE /v1/users/<id>``: an admin key when the service
    has keys); how many."""
    client = _Client(run)
    for n in range(1, run.users + 1):
        client.call("DELETE", f"/v1/users/{PREFIX}{n:04d}")
    return run.users
