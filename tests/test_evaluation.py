"""The offline evaluation: exact metrics on hand-computed cases, the baselines, the command."""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recommender import wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder, shared_embedder
from recommender.evaluation.dataset import (
    Dataset,
    load_dataset,
    paper_vectors,
    with_new_papers,
)
from recommender.evaluation.methods import METHOD_NAMES, TfidfSvm, TopRows, make_method
from recommender.evaluation.metrics import new_paper_metrics, top_rows, user_metrics
from recommender.index.paper_index import PaperIndex
from recommender.ranking import cost
from service.cli import main

EMBEDDER = shared_embedder(Settings().model, 64, Settings().embed_backend)  # loaded on use
NDCG_ONE_HIT_OF_TWO = 1 / (1 + 1 / math.log2(3))  # a hit at rank 1, two test papers


def evaluate(settings: Settings, embedder: TextEncoder, data: Dataset, methods: list[str],
             **options: Any) -> dict[str, Any]:
    """``paperrec evaluate`` of these methods, seed 0, through the application object."""
    return wiring.build(settings, embedder=embedder).evaluate(data, methods, progress=False,
                                                              **options)


def write_dataset(
    tmp_path: Path, papers: list[tuple[str, str]], train: list[str], test: list[str]
) -> tuple[Path, Path, Path]:
    """papers.jsonl (id, title; plus a field evaluation ignores), train.tsv, test.tsv."""
    paths = tmp_path / "papers.jsonl", tmp_path / "train.tsv", tmp_path / "test.tsv"
    paths[0].write_text("".join(
        json.dumps({"id": pid, "title": title, "journal": "ignored"}) + "\n"
        for pid, title in papers))
    paths[1].write_text("".join(f"{line}\n" for line in train))
    paths[2].write_text("".join(f"{line}\n" for line in test))
    return paths


def popularity_case(tmp_path: Path) -> Dataset:
    """30 papers; training likes p00 x3, p01 x2, p02 x1, p03 x1; answers worked out below."""
    papers = [(f"p{i:02d}", f"Paper number {i}") for i in range(30)]
    train = ["u1\tp00", "u1\tp01", "u2\tp00", "u2\tp02", "u3\tp00", "u3\tp01", "u4\tp03",
             "u4\tp99", "a line without a tab"]
    test = ["u1\tp02", "u1\tp29", "u1\tp00", "u2\tp01", "u4\tp00", "u5\tp00", "u5\tp28"]
    return load_dataset(*write_dataset(tmp_path, papers, train, test), on_problem=lambda _: None)


def test_metrics_of_a_hand_computed_ranking() -> None:
    scores = -np.arange(400, dtype=np.float64)  # row 0 scores best
    liked = np.array([0, 2])
    ranked = top_rows(scores, liked)
    assert ranked[:4].tolist() == [1, 3, 4, 5] and len(ranked) == 300
    # test rows 1, 3, 25, 350 land at ranks 1, 2, 24 and 349 once the likes are removed
    metrics = user_metrics(ranked, np.array([1, 3, 25, 350]))
    ideal = 1 + 1 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    expected = [2 / 4, 3 / 4, 3 / 4, 3 / 4, (1 + 1 / math.log2(3)) / ideal]
    assert metrics.tolist() == pytest.approx(expected)


def test_training_papers_are_never_ranked_even_when_a_method_returns_them() -> None:
    assert top_rows(TopRows(np.array([7, 1, 8, 2])), np.array([1, 2])).tolist() == [7, 8]
    assert top_rows(np.full(5, -np.inf), np.array([0, 1])).tolist() == [2, 3, 4]


def test_popular_on_a_hand_computed_dataset(tmp_path: Path) -> None:
    data = popularity_case(tmp_path)
    summary = data.summary()
    assert summary["users"] == 5 and summary["users_with_test"] == 4  # u3 has no test papers
    assert summary["train_likes"] == 7 and summary["skipped_interactions"] == 2
    assert summary["test_in_train"] == 1  # u1's p00 is a training paper: never a hit

    report = evaluate(Settings(), EMBEDDER, data, ["popular"])
    popular = report["methods"]["popular"]
    # u1 ranks p02 first and p29 28th; u2 and u4 rank their one test paper first;
    # u5 (absent from train) ranks p00 first and p28 29th.
    assert popular["users"] == 4
    assert popular["recall@20"] == pytest.approx((0.5 + 1 + 1 + 0.5) / 4)
    assert [popular[f"recall@{m}"] for m in (50, 100, 300)] == [1.0, 1.0, 1.0]
    assert popular["ndcg@20"] == pytest.approx((2 * NDCG_ONE_HIT_OF_TWO + 2) / 4)


def test_popular_ranks_the_most_liked_paper_first(tmp_path: Path) -> None:
    data = popularity_case(tmp_path)
    popular = make_method("popular", seed=0)
    popular.fit(data, None)
    nothing = np.zeros(0, np.int64)
    assert [data.paper_ids[r] for r in top_rows(popular.scores(nothing), nothing)[:2]] == [
        "p00", "p01"]


def test_problems_are_reported_and_skipped(tmp_path: Path) -> None:
    problems: list[str] = []
    paths = write_dataset(tmp_path, [("a", "A paper"), ("a", "Same id"), ("", "")],
                          ["u\ta", "u\tmissing"], ["u\ta"])
    data = load_dataset(*paths, on_problem=problems.append)
    assert data.paper_ids == ["a"] and data.rejected_papers == 2
    assert any("duplicate paper id 'a'" in p for p in problems)
    assert f"{paths[1]}:2: unknown paper 'missing'; skipped" in problems


def test_csv_papers_work_too(tmp_path: Path) -> None:
    papers = tmp_path / "papers.csv"
    papers.write_text('id,title,abstract\nx1,"Graph nets","On graphs."\nx2,Attention,""\n')
    _, train, test = write_dataset(tmp_path, [], ["u\tx1"], ["u\tx2"])
    data = load_dataset(papers, train, test)
    assert data.paper_ids == ["x1", "x2"] and data.papers[0].text == "Graph nets\nOn graphs."


TOPICS = [
    ("q1", "Quantum entanglement of photon pairs in optical lattices"),
    ("q2", "Entanglement witnesses for photon pairs and quantum teleportation"),
    ("q3", "Teleportation of quantum entanglement between distant photon sources"),
    ("b1", "Protein folding kinetics measured by fluorescence spectroscopy"),
    ("b2", "Gene regulatory networks in yeast cell cycle"),
    ("b3", "Metabolic pathways of Escherichia coli under stress"),
    ("g1", "Graph neural networks for molecule property prediction"),
    ("g2", "Citation networks and the growth of scientific fields"),
    ("e1", "Economic inequality and household savings in developing countries"),
]


def test_tfidf_svm_ranks_a_paper_sharing_distinctive_words_first(tmp_path: Path) -> None:
    data = load_dataset(*write_dataset(tmp_path, TOPICS, ["u\tq1", "u\tq2"], ["u\tq3"]))
    svm = make_method("tfidf-svm", seed=0)
    svm.fit(data, None)
    liked = data.train[0]
    assert data.paper_ids[top_rows(svm.scores(liked), liked)[0]] == "q3"
    report = evaluate(Settings(), EMBEDDER, data, ["tfidf-svm"])
    assert report["methods"]["tfidf-svm"]["recall@20"] == 1.0
    assert report["methods"]["tfidf-svm"]["ndcg@20"] == 1.0


def test_tfidf_svm_samples_its_negatives_from_the_seed(tmp_path: Path) -> None:
    data = load_dataset(*write_dataset(tmp_path, TOPICS, ["u\tq1"], ["u\tq3"]))

    def scores(seed: int) -> np.ndarray:
        svm = TfidfSvm(seed, negatives=3)  # 3 of the 8 other papers
        svm.fit(data, None)
        return svm.scores(data.train[0])

    assert np.array_equal(scores(0), scores(0))
    assert not np.array_equal(scores(0), scores(1))


def co_liked_case(tmp_path: Path) -> Dataset:
    """Readers of q1 also read g2 (a paper sharing no words with it); t liked q1, saved g2."""
    train = [f"r{i}\t{pid}" for i in range(6) for pid in ("q1", "g2")]
    train += [f"s{i}\t{pid}" for i in range(6) for pid in ("b1", "b2", "e1")] + ["t\tq1"]
    return load_dataset(*write_dataset(tmp_path, TOPICS, train, ["t\tg2"]))


def test_cf_recommends_what_readers_of_the_same_papers_saved(tmp_path: Path) -> None:
    data = co_liked_case(tmp_path)
    report = evaluate(Settings(), EMBEDDER, data, ["cf"])
    assert report["methods"]["cf"]["ndcg@20"] == 1.0


def test_the_command_writes_json_of_the_documented_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers, train, test = write_dataset(tmp_path, TOPICS, ["u\tq1", "u\tq2", "v\tb1"],
                                        ["u\tq3", "v\tb2", "w\tg1"])
    out = tmp_path / "results" / "out.json"
    code = main(["evaluate", "--papers", str(papers), "--train", str(train), "--test", str(test),
                 "--methods", "popular,tfidf-svm", "--json", str(out), "--quiet"])
    stdout = capsys.readouterr().out
    assert code == 0 and "tfidf-svm" in stdout and "recall@300" in stdout
    report = json.loads(out.read_text())
    assert set(report) == {"methods", "dataset", "seed"} and report["seed"] == 0
    assert list(report["methods"]) == ["popular", "tfidf-svm"]
    for result in report["methods"].values():
        assert set(result) == {"recall@20", "recall@50", "recall@100", "recall@300", "ndcg@20",
                               "users", "seconds"}
        assert result["users"] == 3
        assert isinstance(result["seconds"], float) and 0 <= result["seconds"] < 60  # seconds
    assert {"papers": 9, "users": 3, "train_likes": 3, "test_likes": 3}.items() <= (
        report["dataset"].items())
    assert report["dataset"]["index"] is None  # neither method ranks through an index


def test_the_command_rejects_an_unknown_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers, train, test = write_dataset(tmp_path, TOPICS, ["u\tq1"], ["u\tq3"])
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--papers", str(papers), "--train", str(train), "--test", str(test),
              "--methods", "popular,magic", "--json", str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "unknown method 'magic'" in err
    assert all(name in err for name in METHOD_NAMES)
    assert not (tmp_path / "out.json").exists()


@pytest.mark.model
def test_content_finds_the_topic_and_a_second_run_embeds_nothing(tmp_path: Path) -> None:
    data = load_dataset(*write_dataset(tmp_path, TOPICS, ["u\tq1", "v\tb1"], ["u\tq2", "v\tb3"]))
    settings = Settings(data_dir=tmp_path / "var")
    first = evaluate(settings, EMBEDDER, data, ["content", "content-max"])
    assert first["dataset"]["newly_embedded"] == len(TOPICS)
    for name in ("content", "content-max"):  # q2 and b3 come first, of 8 candidates
        assert first["methods"][name]["ndcg@20"] == pytest.approx(1.0)
    second = evaluate(settings, EMBEDDER, data, ["content"])
    assert second["dataset"]["newly_embedded"] == 0
    assert second["methods"]["content"]["ndcg@20"] == first["methods"]["content"]["ndcg@20"]


@pytest.mark.model
def test_hybrid_ranks_through_the_production_ranking(tmp_path: Path) -> None:
    data = co_liked_case(tmp_path)
    settings = Settings(data_dir=tmp_path / "var")
    hybrid = make_method("hybrid", seed=0)
    hybrid.fit(data, paper_vectors(data.papers, EMBEDDER, wiring.build(settings).embedding_cache,
                                   progress=False)[0])
    liked = data.train[data.users.index("t")]
    ranked = top_rows(hybrid.scores(liked), liked)
    assert sorted(data.paper_ids[r] for r in ranked) == sorted(
        pid for pid, _ in TOPICS if pid != "q1")
    report = evaluate(settings, EMBEDDER, data, ["hybrid"])
    assert report["methods"]["hybrid"]["users"] == 1
    assert report["methods"]["hybrid"]["recall@300"] == 1.0
    assert report["methods"]["hybrid"]["calibration"] is None  # one user: no half to fit on


def test_the_command_explains_the_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "Recall@M" in out and "nDCG@20" in out
    assert all(f"\n  {name}" in out for name in METHOD_NAMES)
    assert "--index {auto,exact,hnsw}" in out and "service's own ranking context" in out


class WordEmbedder:
    """Vectors without the model: a text's first two words fix a random direction (seeded by
    them), the rest of the text adds a little noise; so "pair 7 a" and "pair 7 b" are near
    duplicates, and every other text points elsewhere (cosines about 0 +- 0.06)."""

    variant = "test-words"
    DIM = 256

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            topic = " ".join(text.split()[:2])
            base = np.random.default_rng(zlib.crc32(topic.encode())).normal(size=self.DIM)
            noise = np.random.default_rng(zlib.crc32(text.encode())).normal(size=self.DIM)
            vector = base / np.linalg.norm(base) + 0.05 * noise / np.sqrt(self.DIM)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32)


def near_duplicates_case(tmp_path: Path) -> Dataset:
    """1,500 papers: 50 pairs of near duplicates and 1,400 unrelated ones. User i liked
    "pair i a"; the withheld "pair i b" is the one right answer, so it must come first."""
    papers = [(f"{pid}{i}", f"pair {i} {pid}") for i in range(50) for pid in "ab"]
    papers += [(f"x{i}", f"unrelated {i}") for i in range(1_400)]
    return load_dataset(*write_dataset(tmp_path, papers, [f"u{i}\ta{i}" for i in range(50)],
                                       [f"u{i}\tb{i}" for i in range(50)]))


def counting_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the searches of a published index (the candidate path of ``rank``)."""
    searched: list[int] = []
    search = PaperIndex.search

    def counted(self: PaperIndex, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        searched.append(len(queries))
        return search(self, queries, k)

    monkeypatch.setattr(PaperIndex, "search", counted)
    return searched


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_hybrid_ranks_through_the_index_kind_asked_for(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = near_duplicates_case(tmp_path)
    searched = counting_searches(monkeypatch)
    # 100 papers are cheaper to scan than to search: price scanning up, so that the lists
    # over the HNSW index take the candidate path, as lists over a large corpus do.
    monkeypatch.setattr(cost, "SCAN_US_PER_PAPER", 1e6)
    report = evaluate(Settings(data_dir=tmp_path / "var"), WordEmbedder(), data, ["hybrid"],
                      index=kind)
    assert report["dataset"]["index"] == kind
    # hnsw: every user's list scored only the candidates its searches found (one search of
    # one interest per user); exact: every paper was scored, nothing searched.
    assert searched == ([1] * 50 if kind == "hnsw" else [])
    hybrid = report["methods"]["hybrid"]
    assert hybrid["users"] == 50
    assert hybrid["recall@20"] == 1.0 and hybrid["ndcg@20"] == 1.0  # each pair's b is first
    # Each list's 20 items hold one held-out like, always first: fitted on half the users, the
    # probability says so for the other half.
    calibrated = hybrid["calibration"]
    assert calibrated["items"] == 50 * 20 and calibrated["liked"] == 0.05
    assert calibrated["ece"] < 0.02 and calibrated["thresholds"]["0.5"]["liked"] == 1.0


def test_auto_picks_the_index_kind_the_service_would_by_corpus_size(tmp_path: Path) -> None:
    data = near_duplicates_case(tmp_path)
    kinds = {}
    for most in (len(data.papers), len(data.papers) - 1):
        settings = Settings(data_dir=tmp_path / "var", exact_index_max=most)
        report = evaluate(settings, WordEmbedder(), data, ["hybrid"])
        kinds[most] = report["dataset"]["index"]
        assert report["methods"]["hybrid"]["ndcg@20"] == 1.0
    assert kinds == {1_500: "exact", 1_499: "hnsw"}


class OffsetEmbedder:
    """Vectors without the model, sharing one large offset (as raw sentence embeddings share
    a common direction): "liked" is offset + e1; "target" is offset + 0.5 e1 + e2 (the one
    paper on the liked topic); "decoy" is the offset alone (on no topic: a little noise);
    every other text is offset + a direction of its own, away from e1 and e2. Raw cosine
    ranks the decoy above the target (0.949 against 0.938); once the corpus mean is
    subtracted, the target is the only paper near the liked one."""

    variant = "test-offset"
    DIM = 64
    OFFSET = 3.0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vector = np.zeros(self.DIM)
            vector[0] = self.OFFSET
            noise = np.random.default_rng(zlib.crc32(text.encode())).normal(size=self.DIM)
            if text == "liked":
                vector[1] = 1.0
            elif text == "target":
                vector[1], vector[2] = 0.5, 1.0
            elif text == "decoy":
                vector[3:] += 0.01 * noise[3:]
            else:
                vector[3:] += noise[3:] / np.linalg.norm(noise[3:])
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32)


def offset_case(tmp_path: Path) -> Dataset:
    papers = [("liked", "liked"), ("target", "target"), ("decoy", "decoy")]
    papers += [(f"f{i}", f"filler {i}") for i in range(40)]
    return load_dataset(*write_dataset(tmp_path, papers, ["u\tliked"], ["u\ttarget"]))


def test_only_the_centred_methods_see_past_a_shared_offset(tmp_path: Path) -> None:
    data = offset_case(tmp_path)
    names = ["content", "content-centred", "content-augmented"]
    report = evaluate(Settings(data_dir=tmp_path / "var"), OffsetEmbedder(), data, names)
    vectors = paper_vectors(data.papers, OffsetEmbedder(),
                            wiring.build(Settings(data_dir=tmp_path / "var")).embedding_cache,
                            progress=False)[0]
    liked = data.train[0]
    firsts = {}
    for name in names:
        method = make_method(name, seed=0)
        method.fit(data, vectors)
        firsts[name] = [data.paper_ids[r] for r in top_rows(method.scores(liked), liked)[:2]]
    assert firsts["content"] == ["decoy", "target"]  # the raw cosine is fooled
    assert firsts["content-centred"][0] == firsts["content-augmented"][0] == "target"
    assert report["methods"]["content"]["ndcg@20"] == pytest.approx(1 / math.log2(3))
    assert report["methods"]["content-centred"]["ndcg@20"] == 1.0
    assert report["methods"]["content-augmented"]["ndcg@20"] == 1.0


def test_new_paper_metrics_of_a_hand_computed_ranking() -> None:
    # the user's two new test papers, 7 and 9, ranked 2nd and 12th among the new papers
    ranked = np.array([5, 7, 1, 2, 3, 4, 6, 8, 10, 11, 9, 12])
    metrics = new_paper_metrics(ranked, np.array([7, 9]))
    ideal = 1 + 1 / math.log2(3)
    assert metrics.tolist() == pytest.approx([
        1 / 2, 2 / 2, (1 / math.log2(3)) / ideal, (1 / math.log2(3) + 1 / math.log2(12)) / ideal])
    scores = np.arange(10, dtype=np.float64)  # row 9 scores best
    assert top_rows(scores, np.array([8]), 3, among=np.array([2, 8, 5, 7])).tolist() == [7, 5, 2]
    assert top_rows(TopRows(np.array([9, 7, 3, 5])), np.array([3]), 5,
                    among=np.array([3, 5, 7])).tolist() == [7, 5]


def test_new_papers_lose_every_training_like_to_the_test_set(tmp_path: Path) -> None:
    papers = [(f"p{i:02d}", f"Paper number {i}") for i in range(30)]
    train = [f"u{u}\tp{(u * 7 + j) % 30:02d}" for u in range(10) for j in range(4)]
    test = [f"u{u}\tp{(u * 7 + 5) % 30:02d}" for u in range(10)]
    data = load_dataset(*write_dataset(tmp_path, papers, train, test))
    split = with_new_papers(data, 0.2, seed=0)
    assert split.new_rows is not None and len(split.new_rows) == 6  # 20% of 30 papers
    new = set(split.new_rows.tolist())
    moved = 0
    for user in range(len(data.users)):
        before_train, after_train = set(data.train[user]), set(split.train[user])
        assert not after_train & new  # nobody has liked a new paper in training
        assert after_train == before_train - new
        assert set(split.test[user]) == set(data.test[user]) | (before_train & new)
        moved += len(before_train & new)
    assert moved > 0 and split.summary()["moved_to_test"] == moved
    assert split.summary()["new_papers_fraction"] == 0.2
    assert data.summary()["new_papers_fraction"] is None  # the original is left alone
    assert np.array_equal(with_new_papers(data, 0.2, seed=0).new_rows, split.new_rows)
    assert not np.array_equal(with_new_papers(data, 0.2, seed=1).new_rows, split.new_rows)


def new_duplicates_case(tmp_path: Path) -> Dataset:
    """``near_duplicates_case`` plus a third copy, "pair i c", of each pair: user i liked
    "pair i a"; "pair i b" is new (and held out), "pair i c" is not new; 100 unrelated papers
    are new too. Among the new papers, the held-out b must come first for every user."""
    papers = [(f"{pid}{i}", f"pair {i} {pid}") for i in range(50) for pid in "abc"]
    papers += [(f"x{i}", f"unrelated {i}") for i in range(1_400)]
    data = load_dataset(*write_dataset(tmp_path, papers, [f"u{i}\ta{i}" for i in range(50)],
                                       [f"u{i}\tb{i}" for i in range(50)]))
    row = {pid: r for r, pid in enumerate(data.paper_ids)}
    new = sorted([row[f"b{i}"] for i in range(50)] + [row[f"x{i}"] for i in range(100)])
    return replace(data, new_rows=np.array(new, dtype=np.int64), new_papers_fraction=0.1)


def test_the_held_out_new_paper_ranks_first_among_the_new_ones(tmp_path: Path) -> None:
    data = new_duplicates_case(tmp_path)
    names = ["popular", "content", "content-centred", "content-augmented", "hybrid"]
    report = evaluate(Settings(data_dir=tmp_path / "var"), WordEmbedder(), data, names)
    assert set(report) == {"methods", "new_papers", "dataset", "seed"}
    assert report["dataset"]["new_papers"] == 150
    for name in names[1:]:
        assert report["new_papers"][name] == {"recall@10": 1.0, "recall@20": 1.0,
                                              "ndcg@10": 1.0, "ndcg@20": 1.0, "users": 50}
    # Popularity knows nothing of new papers: every one has no like, ties go to the lower row.
    assert report["new_papers"]["popular"]["recall@20"] < 1.0


def test_hybrid_ranks_only_the_new_papers_when_asked(tmp_path: Path) -> None:
    data = new_duplicates_case(tmp_path)
    assert data.new_rows is not None
    settings = Settings(data_dir=tmp_path / "var")
    hybrid = make_method("hybrid", seed=0)
    cache = wiring.build(settings).embedding_cache
    hybrid.fit(data, paper_vectors(data.papers, WordEmbedder(), cache, progress=False)[0])
    liked = data.train[0]  # liked a0: b0 and c0 are its near duplicates
    everything = hybrid.scores(liked)
    among = hybrid.scores(liked, among=data.new_rows)
    assert isinstance(everything, TopRows) and isinstance(among, TopRows)
    assert {data.paper_ids[r] for r in everything.rows[:2]} == {"b0", "c0"}
    assert set(among.rows.tolist()) <= set(data.new_rows.tolist())
    assert len(among.rows) == 150 and data.paper_ids[among.rows[0]] == "b0"


def test_the_command_reports_new_papers_beside_the_methods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each user liked one paper of their own in training and holds nothing out: every user
    # whose paper is made new has it, and only it, in test.
    papers, train, test = write_dataset(tmp_path, TOPICS, [f"u{pid}\t{pid}" for pid, _ in TOPICS],
                                        [])
    out = tmp_path / "out.json"
    code = main(["evaluate", "--papers", str(papers), "--train", str(train), "--test", str(test),
                 "--methods", "popular,cf", "--new-papers", "0.5", "--seed", "3",
                 "--json", str(out), "--quiet"])
    stdout = capsys.readouterr().out
    assert code == 0 and "new papers only" in stdout
    report = json.loads(out.read_text())
    assert list(report) == ["methods", "new_papers", "dataset", "seed"] and report["seed"] == 3
    assert report["dataset"]["new_papers_fraction"] == 0.5
    assert report["dataset"]["new_papers"] == 4 and report["dataset"]["moved_to_test"] == 4
    assert list(report["new_papers"]) == ["popular", "cf"]
    for method, result in report["new_papers"].items():
        assert set(result) == {"recall@10", "recall@20", "ndcg@10", "ndcg@20", "users"}
        assert result["users"] == 4 == report["methods"][method]["users"]
        # four new papers: each user's one is in the top 10 of them whatever the order
        assert result["recall@10"] == result["recall@20"] == 1.0


@pytest.mark.parametrize("fraction", ["0", "1", "-0.2", "1.5", "nan", "a fifth"])
def test_the_command_rejects_a_fraction_of_new_papers_outside_0_1(
    fraction: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers, train, test = write_dataset(tmp_path, TOPICS, ["u\tq1"], ["u\tq3"])
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--papers", str(papers), "--train", str(train), "--test", str(test),
              "--methods", "popular", "--new-papers", fraction, "--json", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "--new-papers" in err and "between 0 and 1 (exclusive)" in err
    assert not (tmp_path / "o").exists()


def test_interests_split_the_report_and_each_topic_reaches_the_top(tmp_path: Path) -> None:
    """Reader m likes two topics (four papers each), reader s one: with ``--interests`` the
    report measures them apart, and hybrid-interests interleaves: the whole profile's best,
    then each topic's best."""
    papers = [(f"{t}{i}", f"{t} topic paper {i}") for t in ("graph", "fed") for i in range(6)]
    papers += [(f"x{i}", f"unrelated {i}") for i in range(200)]
    train = [f"m\t{t}{i}" for t in ("graph", "fed") for i in range(4)]
    train += [f"s\tgraph{i}" for i in range(5)]
    test = ["m\tgraph4", "m\tfed4", "s\tgraph5"]
    data = load_dataset(*write_dataset(tmp_path, papers, train, test))
    settings = Settings(data_dir=tmp_path / "var")
    report = evaluate(settings, WordEmbedder(), data,  # type: ignore[arg-type]
                      ["hybrid", "hybrid-interests"], interests=True)
    found = report["interests"]
    assert (found["several_topics_users"], found["one_topic_users"]) == (1, 1)
    assert found["several_topics"]["hybrid-interests"]["recall@20"] == 1.0
    method = make_method("hybrid-interests", seed=0)
    method.fit(data, paper_vectors(data.papers, WordEmbedder(),  # type: ignore[arg-type]
                                   wiring.build(settings).embedding_cache, progress=False)[0])
    liked = data.train[data.users.index("m")]
    top = [data.paper_ids[r] for r in top_rows(method.scores(liked), liked)[:3]]
    assert {"graph4", "fed4"} <= set(top) and {p[:3] for p in top} == {"gra", "fed"}
