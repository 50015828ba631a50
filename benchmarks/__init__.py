"""memoryd's benchmarks: `python -m benchmarks [NAME ...] [-- OPTIONS]` (see `__main__`)."""
