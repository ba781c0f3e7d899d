"""The pure ranking functions on synthetic vectors with a known answer."""

from __future__ import annotations

import numpy as np

from recommender.ranking import cold_start_relevance, content_scores, mmr


def unit(*rows: list[float]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_each_candidate_is_credited_to_its_nearest_liked_paper() -> None:
    liked = unit([1, 0, 0], [0, 1, 0])
    candidates = unit([0.9, 0.1, 0], [0.1, 0.9, 0], [0, 0, 1])
    scored = content_scores(candidates, liked, liked[:0])
    assert scored.nearest_like.tolist()[:2] == [0, 1]
    assert scored.score[2] < min(scored.score[0], scored.score[1])


def test_a_disliked_topic_sinks_below_the_liked_one() -> None:
    liked = unit([1, 0, 0])
    disliked = unit([0, 1, 0])
    # Both candidates are equally close to the liked paper; one also sits on the disliked topic.
    candidates = unit([0.6, 0.0, 0.8], [0.6, 0.8, 0.0])
    plain = content_scores(candidates, liked, liked[:0])
    assert np.isclose(plain.score[0], plain.score[1])
    scored = content_scores(candidates, liked, disliked)
    assert scored.score[0] > scored.score[1]
    assert scored.dislike_sim[1] > 0.7 and scored.dislike_sim[0] == 0


def test_mmr_without_diversity_keeps_relevance_order() -> None:
    vectors = unit([1, 0], [1, 0.01], [0, 1])
    assert mmr(vectors, np.array([0.9, 0.8, 0.1]), 3, diversity=0.0).tolist() == [0, 1, 2]


def test_mmr_with_diversity_skips_near_duplicates() -> None:
    vectors = unit([1, 0], [1, 0.01], [0, 1])
    assert mmr(vectors, np.array([0.9, 0.8, 0.1]), 2, diversity=0.7).tolist() == [0, 2]


def test_cold_start_puts_popular_papers_first() -> None:
    vectors = unit([1, 0], [0.9, 0.1], [0, 1])
    relevance = cold_start_relevance(vectors, np.array([0, 0, 5]))
    assert int(np.argmax(relevance)) == 2
