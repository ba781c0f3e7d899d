"""Ideas 3-5: a projection learned from co-likes, a per-user model, TF-IDF cosine.

Everything is fitted on the training likes of the dataset it is given (for the new-papers
protocol, that dataset has no like on a new paper), so test likes never leak in.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.linalg import eigh
from scorers import centred, user_item_matrix

from recommender.evaluation.dataset import Dataset
from recommender.index.content_space import build_content_space, normalise


class Projected:
    """Mean cosine in a space learned from co-likes, then blended (``blend`` x z-score)
    with centred mean cosine (``blend`` < 0: the projected space alone).

    method ``eig``: generalised eigenvectors of (co-liked pair covariance, like-weighted
    covariance): the directions in which papers liked by the same user agree more than
    papers at random; the top ``dim`` kept, scaled by eigenvalue**power.
    method ``nce``: a d x d linear map from the identity, trained with InfoNCE on co-liked
    pairs (in-batch negatives), a few epochs on CPU, pulled towards the identity."""

    def __init__(self, name: str, method: str, dim: int = 128, power: float = 0.5,
                 blend: float = -1.0, epochs: int = 3, temperature: float = 0.05,
                 anchor: float = 1e-3) -> None:
        self.name, self.method, self.dim, self.power, self.blend = name, method, dim, power, blend
        self.epochs, self.temperature, self.anchor = epochs, temperature, anchor
        self.base = np.zeros((0, 0), np.float32)
        self.vectors = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        self.base = centred(vectors)
        if self.method == "eig":
            transform = eig_projection(self.base, user_item_matrix(data), self.dim, self.power)
        else:
            transform = nce_projection(self.base, data, self.epochs, self.temperature,
                                       self.anchor)
        self.vectors = normalise(self.base @ transform)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self.base))
        learned = self.vectors @ self.vectors[liked].mean(axis=0)
        if self.blend < 0:
            return learned
        plain = self.base @ self.base[liked].mean(axis=0)
        return zscore(plain) + self.blend * zscore(learned)


def zscore(scores: np.ndarray) -> np.ndarray:
    return (scores - scores.mean()) / (scores.std() or 1.0)


def eig_projection(x: np.ndarray, likes: sparse.csr_matrix, dim: int,
                   power: float) -> np.ndarray:
    counts = np.asarray(likes.sum(axis=0)).ravel()
    sums = np.asarray(likes @ x)  # (users, d): each user's summed liked vectors
    weighted = x * counts[:, None]
    own = x.T @ weighted  # every like paired with itself
    per_user = np.asarray(likes.sum(axis=1)).ravel()
    pairs = max(float((per_user * (per_user - 1)).sum()), 1.0)
    pair_cov = (sums.T @ sums - own) / pairs
    like_cov = own / max(counts.sum(), 1.0)
    like_cov += 1e-3 * np.trace(like_cov) / len(like_cov) * np.eye(len(like_cov))
    values, basis = eigh(pair_cov, like_cov)
    top = np.argsort(-values)[:dim]
    return basis[:, top] * np.maximum(values[top], 1e-6) ** power


def co_liked_pairs(data: Dataset, per_user: int, rng: np.random.Generator) -> np.ndarray:
    pairs = []
    for rows in data.train:
        if len(rows) < 2:
            continue
        a = rng.choice(rows, per_user)
        b = rng.choice(rows, per_user)
        keep = a != b
        pairs.append(np.stack([a[keep], b[keep]], axis=1))
    return np.concatenate(pairs)


def nce_projection(x: np.ndarray, data: Dataset, epochs: int, temperature: float,
                   anchor: float, batch: int = 1024, seed: int = 0) -> np.ndarray:
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    pairs = torch.from_numpy(co_liked_pairs(data, 40, rng))
    features = torch.from_numpy(x)
    eye = torch.eye(x.shape[1])
    weight = torch.nn.Parameter(eye.clone())
    optimiser = torch.optim.Adam([weight], lr=1e-3)
    for _ in range(epochs):
        for chunk in pairs[torch.randperm(len(pairs))].split(batch):
            a = torch.nn.functional.normalize(features[chunk[:, 0]] @ weight, dim=1)
            b = torch.nn.functional.normalize(features[chunk[:, 1]] @ weight, dim=1)
            logits = a @ b.T / temperature
            target = torch.arange(len(chunk))
            loss = (torch.nn.functional.cross_entropy(logits, target)
                    + torch.nn.functional.cross_entropy(logits.T, target)) / 2
            loss = loss + anchor * ((weight - eye) ** 2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return weight.detach().numpy()


class PerUser:
    """Centred mean cosine plus ``weight`` x a per-user logistic regression (z-scores),
    likes against ``negatives`` random other papers, for users with >= ``min_likes`` likes.
    kind ``lr``: scikit-learn LogisticRegression(C); kind ``fisher``: the closed-form
    shared-covariance direction Sigma^-1 (mean of likes - corpus mean), no per-user fit.
    dba: over the service's augmented (DBA) vectors instead of the centred ones."""

    def __init__(self, name: str, kind: str = "lr", weight: float = 1.0, c: float = 1.0,
                 negatives: int = 500, min_likes: int = 10, shrink: float = 0.1,
                 dba: bool = False) -> None:
        self.name, self.kind, self.weight, self.c, self.dba = name, kind, weight, c, dba
        self.negatives, self.min_likes, self.shrink = negatives, min_likes, shrink
        self.vectors = np.zeros((0, 0), np.float32)
        self.precision = np.zeros((0, 0))

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        if self.dba:  # the service's augmented vectors (already centred) instead
            self.vectors = build_content_space(vectors, exact_max=10**9).vectors
        else:
            self.vectors = centred(vectors)
        cov = np.cov(self.vectors, rowvar=False)
        cov = (1 - self.shrink) * cov + self.shrink * np.trace(cov) / len(cov) * np.eye(len(cov))
        self.precision = np.linalg.inv(cov)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self.vectors))
        plain = self.vectors @ self.vectors[liked].mean(axis=0)
        if len(liked) < self.min_likes:
            return plain
        if self.kind == "fisher":
            model = self.vectors @ (self.precision @ self.vectors[liked].mean(axis=0))
        else:
            model = self.logistic(user, liked)
        return zscore(plain) + self.weight * zscore(model)

    def logistic(self, user: int, liked: np.ndarray) -> np.ndarray:
        from sklearn.linear_model import LogisticRegression

        rng = np.random.default_rng([user, len(liked)])
        others = np.setdiff1d(rng.choice(len(self.vectors), self.negatives + len(liked),
                                         replace=False), liked)[: self.negatives]
        rows = np.concatenate([liked, others])
        labels = np.concatenate([np.ones(len(liked)), np.zeros(len(others))])
        model = LogisticRegression(C=self.c, class_weight="balanced", max_iter=200)
        model.fit(self.vectors[rows], labels)
        return np.asarray(model.decision_function(self.vectors))


class Lexical:
    """TF-IDF (the tfidf-svm method's settings) mean cosine to the likes; with ``weight``
    >= 0, blended as z(centred mean cosine) + weight x z(TF-IDF cosine)."""

    def __init__(self, name: str, weight: float = -1.0, bm25: bool = False) -> None:
        self.name, self.weight, self.bm25 = name, weight, bm25
        self.features = sparse.csr_matrix((0, 0))
        self.vectors = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = [paper.text for paper in data.papers]
        vectorizer = TfidfVectorizer(
            strip_accents="unicode", stop_words="english", ngram_range=(1, 2),
            token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b", sublinear_tf=True,
            max_features=20_000, max_df=0.5, min_df=5, dtype=np.float32)
        self.features = sparse.csr_matrix(vectorizer.fit_transform(texts))
        self.vectors = centred(vectors)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self.vectors))
        profile = np.asarray(self.features[liked].mean(axis=0)).ravel()
        lexical = np.asarray(self.features @ profile).ravel()
        if self.weight < 0:
            return lexical
        plain = self.vectors @ self.vectors[liked].mean(axis=0)
        return zscore(plain) + self.weight * zscore(lexical)
