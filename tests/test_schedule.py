"""Scheduled runs: each step publishes nothing when the step before found nothing new
(`rebuild-index --if-changed`, `train --if-changed`), over the sample corpus and real Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from recommender import jobs, wiring
from recommender.core.config import Settings


def rebuild_if_changed(settings: Settings, embedder: Any) -> jobs.RebuildSummary:
    return wiring.build(settings, embedder=embedder).rebuild_index(if_changed=True,
                                                                   progress=False)


def train_if_changed(settings: Settings) -> jobs.TrainSummary:
    return wiring.build(settings).train(if_changed=True, progress=False)


def test_a_rebuild_with_nothing_new_publishes_nothing(
    sample_settings: Settings, hashing_embedder: Any, ingest: Any, tmp_path: Path
) -> None:
    unchanged = rebuild_if_changed(sample_settings, hashing_embedder)
    assert unchanged.build == "skipped" and unchanged.version == "000001"
    assert str(unchanged).startswith("nothing new: index version 000001 already holds the 38")
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"id": "new1", "title": "A new paper",
                                "abstract": "On graph learning."}) + "\n")
    ingest(sample_settings, [more])
    added = rebuild_if_changed(sample_settings, hashing_embedder)
    assert added.build != "skipped" and (added.version, added.papers) == ("000002", 39)
    assert rebuild_if_changed(sample_settings, hashing_embedder).build == "skipped"


def test_training_with_nothing_new_publishes_nothing(
    client: FlaskClient, sample_settings: Settings, like: Any, paper_ids_about: Any,
    ingest: Any, hashing_embedder: Any, tmp_path: Path,
) -> None:
    empty = train_if_changed(sample_settings)  # no likes yet: nothing to learn, no error
    assert empty.skipped and empty.version == ""
    papers = paper_ids_about(sample_settings, "")
    like(client, "ada", papers[0])
    like(client, "ada", papers[1])
    first = train_if_changed(sample_settings)
    assert not first.skipped and first.version == "000001"
    again = train_if_changed(sample_settings)
    assert again.skipped and again.version == "000001" and "nothing new" in str(again)
    like(client, "bob", papers[2])
    assert train_if_changed(sample_settings).version == "000002"
    # A new index version is new too: the probability is fitted on lists ranked over it.
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"id": "new1", "title": "A new paper",
                                "abstract": "On graph learning."}) + "\n")
    ingest(sample_settings, [more])
    rebuild_if_changed(sample_settings, hashing_embedder)
    assert train_if_changed(sample_settings).version == "000003"
