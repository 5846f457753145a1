"""Collecting a study: the web study platform that writes the nonolab log format."""
