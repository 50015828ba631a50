"""The long-running process: the APScheduler scheduler and its schedule, the job runner every
scheduled job runs inside, signals, systemd notification, and what `status` reports.

The jobs themselves and the single-writer lock are `memoryd.jobs`'; this package only runs them.
"""
