"""Where the engine lives on the app, and how a view gets it."""

from flask import current_app

from recommender.ranking.recommender import Recommender

EXTENSION = "paperrec"


def engine() -> Recommender:
    return current_app.extensions[EXTENSION]
