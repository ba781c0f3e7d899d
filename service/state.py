"""Where the parts built by ``recommender.wiring`` live on the app, and how a view gets them."""

from flask import current_app

from recommender.wiring import Components

EXTENSION = "paperrec"


def components() -> Components:
    return current_app.extensions[EXTENSION]
