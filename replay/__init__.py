"""Stand-ins for the world outside paperrec, shared by the tests and the benchmarks.

- ``replay.oai_pmh``: a local OAI-PMH endpoint that replays arXiv records in arXiv's
  documented format (``python -m replay.oai_pmh`` serves ``replay/demo-records.jsonl`` to try
  `paperrec fetch arxiv` without arXiv);
- ``replay.openreview``: a local OpenReview API v2 that replays submission notes;
- ``replay.server``: what both are built on (a threaded HTTP server on a free loopback port
  that remembers every request and can fail on purpose);
- ``replay.web_steps``: a reader's steps through the web pages (sign in by the emailed link,
  forms with their CSRF token), taken through Flask's test client.

A development package: it is not installed with paperrec (``pyproject.toml`` packages only
``recommender`` and ``service``); the tests and ``python -m benchmarks.NAME`` import it from
the repository root, and the library and the service never do (import-linter checks it).
"""
