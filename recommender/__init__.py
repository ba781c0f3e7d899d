"""paperrec: personalized research-paper recommendations (the library; never imports Flask)."""

__version__ = "0.1.0"
