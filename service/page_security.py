"""What every HTML answer of the service (the web pages, the email links' pages, the API docs,
the error pages) may load and run: only this origin's own files, no inline script or style,
forms posting only here, never framed, never sniffed as another type. One policy, set in one
place (``protect_html``, after every request), so no page can be added without it."""

from flask import Response

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; "
                           "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                           "base-uri 'none'; frame-ancestors 'none'")
HTML_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",  # frame-ancestors, for browsers that predate it
    "X-Content-Type-Options": "nosniff",
}


def protect_html(response: Response) -> Response:
    """The headers of ``HTML_HEADERS`` on an HTML answer (a page may set stricter ones)."""
    if response.mimetype == "text/html":
        for name, value in HTML_HEADERS.items():
            response.headers.setdefault(name, value)
    return response
