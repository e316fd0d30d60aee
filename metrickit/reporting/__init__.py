"""What people read: plots and summaries."""
