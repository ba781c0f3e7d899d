"""The simulator (`paperrec simulate`): readers of a dataset with held-out likes replayed day
by day against a real deployment (``deployment``), driving the ranking, the impression log,
the report, interleaving and calibration as the service runs them (``simulator``)."""
