# paperrec service image: the library, the service and the bundled model; no download at run time.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PAPERREC_DATA_DIR=/data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY recommender recommender
COPY service service
COPY scripts scripts
RUN pip install --no-cache-dir torch==2.13.0 && pip install --no-cache-dir .
VOLUME /data
EXPOSE 8000
CMD ["paperrec", "serve", "--host", "0.0.0.0", "--port", "8000"]
