"""What every HTML page of the service (the web pages, the email links' pages) may load and
run: only this origin's own files (/static), no inline script or style, forms posting only
here, never framed. One policy, so every page shares one stylesheet and one look."""

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; "
                           "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                           "base-uri 'none'; frame-ancestors 'none'")
