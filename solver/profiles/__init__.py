"""Measured operator profiles: file format, importer, vectorised interpolation."""
