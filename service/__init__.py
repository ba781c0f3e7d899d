"""The Flask service (``service.app.create_app``), its pages and the `paperrec` command.

Nothing is imported here: `paperrec --help` must not pay for Flask and the engine."""
