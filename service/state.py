"""Where the parts built by ``recommender.wiring`` live on the app, and how a view gets them."""

from flask import current_app

from recommender.wiring import Paperrec

EXTENSION = "paperrec"


def components() -> Paperrec:
    return current_app.extensions[EXTENSION]
