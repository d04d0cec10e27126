"""The real-document dev set: a manuals folder built from installed documentation, its questions and checker."""
