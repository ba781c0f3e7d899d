"""The service measuring itself: the impression log, its figures, experiments."""
