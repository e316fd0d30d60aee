"""Readers: files and folders into reward frames and trial tables."""
