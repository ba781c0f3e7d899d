"""The one exception hierarchy of the library.

Every error a user can cause or meet carries a stable machine-readable ``code`` and a message
that says what to do. The web layer maps ``status`` to HTTP in one place; the CLI prints the
message and exits non-zero.
"""


class PaperrecError(Exception):
    """Base class: something the caller should be told about in words."""

    code = "error"
    status = 500
    retry_after: int | None = None  # seconds, sent as Retry-After

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(PaperrecError):
    """The request or file is malformed; the message says what was wrong."""

    code = "invalid_input"
    status = 400


class InvalidLink(PaperrecError):
    """An email link that was altered or not made by this service: its signature does not
    give it the right to do anything (403, as a presigned URL that fails its check)."""

    code = "invalid_link"
    status = 403


class Unauthorized(PaperrecError):
    """No API key, or one that is not valid."""

    code = "unauthorized"
    status = 401


class Forbidden(PaperrecError):
    """A valid API key whose role may not do this."""

    code = "forbidden"
    status = 403


class NotFound(PaperrecError):
    """An id that names nothing we know."""

    code = "not_found"
    status = 404


class Conflict(PaperrecError):
    """The request clashes with what is stored (a collection's name already taken); the
    message says what to change."""

    code = "conflict"
    status = 409


class ExpiredLink(PaperrecError):
    """An email link past its expiry."""

    code = "link_expired"
    status = 410


class RevokedLink(PaperrecError):
    """A signed URL that was genuine but has been replaced by a newer one (a feed URL after a
    new one was issued) or whose owner's data was erased: gone for good."""

    code = "link_revoked"
    status = 410


class RateLimited(PaperrecError):
    """Too many requests for one API key in the current window."""

    code = "rate_limited"
    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(PaperrecError):
    """A backing part (Redis, the index) cannot be used right now; retrying later may work."""

    code = "unavailable"
    status = 503
    retry_after = 5


class IndexNotReady(Unavailable):
    """No index version has been published yet, or the published one cannot be loaded."""

    code = "index_not_ready"


class StoreUnavailable(Unavailable):
    """The feedback store (Redis) cannot be reached."""

    code = "store_unavailable"


class ClusterUnavailable(Unavailable):
    """The Dask cluster the embedding was handed to could not embed a shard."""

    code = "cluster_unavailable"


class ClusterUnreachable(ClusterUnavailable):
    """The Dask scheduler does not answer at its address (a setting to check)."""

    code = "cluster_unreachable"


class Busy(Unavailable):
    """As many costly jobs as one worker runs at once are running (library files being
    read): the next waits a little, then is told to come back."""

    code = "busy"
    retry_after = 15


class EmbeddingFailed(Unavailable):
    """A worker process embedding on this machine stopped (killed, out of memory)."""

    code = "embedding_failed"


class TooLarge(PaperrecError):
    """A request or file beyond a documented limit (size, number of entries)."""

    code = "too_large"
    status = 413


class TooCostly(TooLarge):
    """A file within the size limits that costs more to read than one request may spend
    (time or memory). 413 as TooLarge, whose cure it shares: send less at once, split the
    file. Not 422 (content the server cannot process): the same entries in smaller files are
    read, and a client that splits a file on 413 needs nothing more."""

    code = "too_costly"


class UnsupportedFormat(PaperrecError):
    """A file in a format (content type) this call does not read; the message lists those it
    does."""

    code = "unsupported_media_type"
    status = 415
