"""The probability on every reading-list item: its fit, its error measure, and `paperrec
train` fitting it on the deployment's own latest likes (real Redis, the sample corpus)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from flask.testing import FlaskClient

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder
from recommender.ranking import calibration
from recommender.ranking.collaborative import CollaborativeModel


def test_platt_scaling_recovers_a_known_relation_and_is_calibrated() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(2.0, 1.5, 40_000)
    likes = rng.integers(1, 30, len(z))
    truth = 1 / (1 + np.exp(-(0.8 * z - 0.5 * np.log1p(likes) - 1.0)))
    labels = rng.random(len(z)) < truth
    fitted = calibration.fit(z, likes, labels, source="test")
    assert abs(fitted.score - 0.8) < 0.05 and abs(fitted.likes + 0.5) < 0.08
    assert calibration.expected_calibration_error(fitted.probability(z, likes), labels) < 0.01
    # A constant guess at the base rate is calibrated on average but not per bin.
    squashed = np.clip(truth * 3, 0, 1)
    assert calibration.expected_calibration_error(squashed, labels) > 0.1
    assert fitted.base_rate == labels.mean()
    assert (fitted.probability(z[:5], 0) == fitted.base_rate).all()  # no likes: base rate


def test_the_calibration_error_weighs_each_bin_by_its_items() -> None:
    probability = np.array([0.05, 0.05, 0.05, 0.05, 0.95, 0.95])
    labels = np.array([0, 0, 0, 1, 1, 1])
    # bin 0: 4 items, predicted 0.05, observed 0.25; bin 9: 2 items, 0.95 against 1.
    expected = (4 * 0.2 + 2 * 0.05) / 6
    assert abs(calibration.expected_calibration_error(probability, labels) - expected) < 1e-12
    assert calibration.expected_calibration_error(np.zeros(0), np.zeros(0)) == 0.0


def test_train_fits_the_probability_on_the_latest_likes_and_lists_use_it(
    client: FlaskClient, sample_settings: Settings, like: Any, train: Any,
    paper_ids_about: Any,
) -> None:
    papers = paper_ids_about(sample_settings, "")  # every paper, in corpus order
    before = client.get("/v1/users/u0/recommendations?k=5").json["items"]  # cold start
    assert {item["probability"] for item in before} == {round(calibration.DEFAULT.base_rate, 4)}

    for user, paper in (("u0", papers[0]), ("u1", papers[1])):
        like(client, user, paper)
    few = train(sample_settings)
    assert few.calibration == calibration.DEFAULT.source  # nobody has two likes yet

    rng = np.random.default_rng(0)
    for user in range(80):  # readers of neighbouring papers: a few likes each, in order
        start = int(rng.integers(0, len(papers) - 4))
        for paper in papers[start : start + int(rng.integers(2, 5))]:
            like(client, f"u{user}", paper)
    summary = train(sample_settings)
    assert summary.calibration.startswith("fitted on ")
    parts = wiring.build(sample_settings)
    stored = CollaborativeModel.load(parts.models.path(summary.version)).calibration
    assert stored.source == summary.calibration and stored != calibration.DEFAULT

    items = client.get("/v1/users/u1/recommendations?k=10").json["items"]
    chances = [item["probability"] for item in items]
    assert all(0 < p < 1 for p in chances) and chances == sorted(chances, reverse=True)


def test_each_embedding_model_has_its_own_default() -> None:
    mpnet = calibration.default_for("all-mpnet-base-v2")
    assert mpnet != calibration.DEFAULT and "all-mpnet-base-v2" in mpnet.source
    assert calibration.default_for("sentence-transformers/all-mpnet-base-v2") == mpnet
    assert calibration.default_for("all-MiniLM-L6-v2") == calibration.DEFAULT
    assert calibration.default_for("/models/specter") == calibration.DEFAULT  # not fitted


def test_lists_and_train_over_an_index_of_another_model_use_that_models_default(
    tmp_path: Path, redis_url: str, namespace: str, hashing_embedder: TextEncoder,
    make_app: Any, ingest: Any, rebuild: Any, train: Any, like: Any, paper_ids_about: Any,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_url,
                        redis_namespace=namespace, index_check_seconds=0.0,
                        model="all-mpnet-base-v2")
    ingest(settings, jobs.sample_files())
    rebuild(settings, embedder=hashing_embedder)  # the index says all-mpnet-base-v2
    client = make_app(settings).test_client()
    mpnet = calibration.default_for("all-mpnet-base-v2")
    items = client.get("/v1/users/u0/recommendations?k=3").json["items"]
    assert {item["probability"] for item in items} == {round(mpnet.base_rate, 4)}
    like(client, "u0", paper_ids_about(settings, "")[0])
    assert train(settings).calibration == mpnet.source  # too few likes to fit its own
