"""Settings shared by the whole suite.

Hypothesis runs without per-example deadlines: CI machines are small and shared, and a property
test that fails because one example took 250 ms instead of 200 ms would be a flaky test, not a
finding. Each test's own `@settings` still bounds how many examples it runs.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("memoryd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memoryd")
