"""The daemon: scheduler, jobs, the single-writer lock and systemd notification."""
