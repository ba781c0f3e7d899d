"""`paperrec simulate` on a small synthetic dataset with a known answer, against a real Redis:
readers of one topic each like half of their topic's papers, so the production ranking finds
their likes and the most popular papers (of every topic) mostly do not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import Dataset, load_dataset
from recommender.online.events import ServedList
from recommender.simulation.deployment import deployment
from recommender.simulation.simulator import (
    START,
    SimulationOptions,
    run_simulation,
)
from service.cli import main

TOPICS = 6
PAPERS_PER_TOPIC = 100
READERS_PER_TOPIC = 10


def write_world(folder: Path, seed: int = 0) -> tuple[Path, Path, Path]:
    """Papers of ``TOPICS`` topics, each with words of its own; each reader liked 3 papers of
    their topic before, and likes half of the others when served them."""
    rng = np.random.default_rng(seed)
    common = [f"common{w}" for w in range(30)]
    papers, train, test = [], [], []
    for topic in range(TOPICS):
        words = [f"topic{topic}word{w}" for w in range(25)]
        for p in range(PAPERS_PER_TOPIC):
            text = " ".join([*rng.choice(words, 6), *rng.choice(common, 3)])
            papers.append({"id": f"t{topic}p{p}", "title": text, "abstract": "",
                           "year": 2020})
        for r in range(READERS_PER_TOPIC):
            user = f"reader{topic}x{r}"
            order = rng.permutation(PAPERS_PER_TOPIC)
            train += [f"{user}\tt{topic}p{p}" for p in order[:3]]
            test += [f"{user}\tt{topic}p{p}" for p in order[3:][::2]]
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "papers.jsonl", folder / "train.tsv", folder / "test.tsv"
    paths[0].write_text("".join(json.dumps(p) + "\n" for p in papers))
    paths[1].write_text("\n".join(train) + "\n")
    paths[2].write_text("\n".join(test) + "\n")
    return paths


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return load_dataset(*write_world(tmp_path_factory.mktemp("world")))


def test_interleaving_picks_hybrid_over_popular_and_calibration_from_the_log_holds(
        settings: Settings, world: Dataset, hashing_embedder: TextEncoder) -> None:
    found = run_simulation(settings, world, SimulationOptions(
        users=30, days=5, variants=("hybrid", "popular"), seed=1), embedder=hashing_embedder,
        progress=False)
    verdict = found["interleaving"]
    assert verdict["winner"] == "A" and verdict["significant"] and verdict["p_value"] < 0.001
    assert verdict["impressions"] == 30 * 5 * 10
    hybrid, popular = found["variants"]["hybrid"], found["variants"]["popular"]
    assert (hybrid["side"], popular["side"]) == ("A", "B")
    assert found["likes"] == {"A": hybrid["likes"], "B": popular["likes"]}
    assert hybrid["likes"] > 3 * popular["likes"]
    assert len(hybrid["likes_by_day"]) == 5 and hybrid["likes_by_day"][-1] == hybrid["likes"]
    assert hybrid["likes_by_day"] == sorted(hybrid["likes_by_day"])  # cumulative
    calibration = found["calibration"]
    assert calibration["source"] == "log"  # refitted on the simulation's own impressions
    assert calibration["fitted_on"]["liked"] >= jobs.MIN_LOG_LIKES
    assert calibration["items_next_month"] > 0
    assert calibration["ece_next_month"] <= 0.05


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_variant_against_itself_shows_no_significant_difference(
        settings: Settings, world: Dataset, hashing_embedder: TextEncoder, seed: int) -> None:
    found = run_simulation(settings, world, SimulationOptions(
        users=30, days=4, variants=("hybrid", "hybrid"), seed=seed, next_month=False),
        embedder=hashing_embedder, progress=False)
    verdict = found["interleaving"]
    assert verdict["winner"] is None and not verdict["significant"]
    assert set(found["variants"]) == {"hybrid", "hybrid#B"}  # the B team apart in the log
    assert found["likes"]["A"] > 0 and found["likes"]["B"] > 0
    assert "calibration" not in found


def test_an_evaluation_method_is_served_as_a_variant_and_its_namespace_is_erased(
        settings: Settings, world: Dataset, hashing_embedder: TextEncoder) -> None:
    found = run_simulation(settings, world, SimulationOptions(
        users=20, days=3, variants=("popular", "content-centred"), seed=0,
        next_month=False), embedder=hashing_embedder, progress=False)
    assert found["interleaving"]["winner"] == "B"  # content finds the readers' topics
    assert found["variants"]["content-centred"]["likes"] > found["variants"]["popular"]["likes"]
    client = wiring.build(settings).redis
    assert not list(client.scan_iter(f"{settings.redis_namespace}-simulate-*"))


def test_an_unknown_variant_is_refused_with_what_works(
        settings: Settings, world: Dataset, hashing_embedder: TextEncoder) -> None:
    with pytest.raises(Exception, match="content-centred.*tfidf-svm|popular"):
        run_simulation(settings, world, SimulationOptions(variants=("hybrid", "nope")),
                       embedder=hashing_embedder, progress=False)


def test_too_few_logged_likes_keep_the_held_out_or_default_calibration(
        settings: Settings, world: Dataset, hashing_embedder: TextEncoder) -> None:
    vectors = hashing_embedder.encode([p.text for p in world.papers])
    with deployment(world, vectors, settings, hashing_embedder, START, progress=False) as app:
        assert jobs.calibrate_from_log(app.events) is None  # nothing logged
        for n in range(jobs.MIN_LOG_LIKES - 1):  # one like fewer than needed
            list_id = f"list{n:012d}"
            app.events.served(ServedList(list_id, "reader0x0", "digest", START + n,
                                         ("t0p1", "t0p2"), ("hybrid", "hybrid"), (2.0, 0.5),
                                         (0.3, 0.1), 3))
            app.events.outcome("like", "reader0x0", list_id, "t0p1", START + n + 1)
        assert jobs.calibrate_from_log(app.events) is None
        app.train(progress=False)
        model = app.collaborative.get()
        assert model is not None and model.calibration.fitted_from == "default"  # 3 likes each
        # One more liked production item: fitted on the log, its ECE measured
        app.events.served(ServedList("listlast00000000", "reader0x0", "digest", START + 500,
                                     ("t0p1", "t0p2"), ("hybrid", "hybrid"), (2.0, 0.5),
                                     (0.3, 0.1), 3))
        app.events.outcome("like", "reader0x0", "listlast00000000", "t0p1", START + 501)
        app.train(progress=False)
        model = app.collaborative.get()
        assert model is not None and model.calibration.fitted_from == "log"
        assert model.calibration.liked == jobs.MIN_LOG_LIKES
        assert model.calibration.items == 2 * jobs.MIN_LOG_LIKES
        assert model.calibration.ece is not None and model.calibration.ece < 0.05
        assert app.models.meta(str(app.models.current()))["calibration"]["fitted_from"] == "log"


def test_the_command_writes_the_json_with_the_documented_keys(
        tmp_path: Path, settings: Settings, hashing_embedder: TextEncoder,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    papers, train, test = write_world(tmp_path / "world")
    monkeypatch.setattr(wiring, "configured_embedder", lambda _: hashing_embedder)
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("PAPERREC_REDIS_NAMESPACE", settings.redis_namespace)
    out = tmp_path / "out" / "simulate.json"
    code = main(["simulate", "--papers", str(papers), "--train", str(train), "--test",
                 str(test), "--users", "10", "--days", "2", "--variants", "hybrid,popular",
                 "--seed", "3", "--json", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0 and "interleaving:" in printed and str(out) in printed
    found = json.loads(out.read_text())
    assert {"interleaving", "variants", "likes", "calibration", "settings", "seconds"} <= set(
        found)
    assert set(found["interleaving"]) >= {"winner", "significant", "p_value", "impressions"}
    assert found["interleaving"]["winner"] in ("A", "B", None)
    assert found["variants"]["popular"]["side"] == "B"
    assert set(found["likes"]) == {"A", "B"}
    assert {"source", "fitted_on", "ece_next_month"} <= set(found["calibration"])
    assert found["settings"]["users"] == 10 and found["settings"]["seed"] == 3
    with pytest.raises(SystemExit) as refused:  # argparse: one variant is not a pair
        main(["simulate", "--papers", str(papers), "--train", str(train), "--test",
              str(test), "--variants", "hybrid", "--json", str(out)])
    assert refused.value.code == 2 and "expected two names" in capsys.readouterr().err
