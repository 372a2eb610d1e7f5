"""Hypothesis profiles for the engine's property tests.

The profiles are applied per test (not loaded globally) so they do not leak
into other suites.  ``engine-ci`` is the default; pick another with
``ENGINE_HYPOTHESIS_PROFILE=engine-dev`` (quick) or ``engine-thorough``
(hunting rare counterexamples).

``engine-ci`` is derandomized: the suite tries the same examples on every
run, so a run that passed here passes on a clean clone too, and a
counterexample, once found, is found again.  New ground is covered by
``engine-thorough``, which draws fresh examples every time.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "engine-ci", max_examples=300, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("engine-dev", max_examples=50, deadline=None)
settings.register_profile(
    "engine-thorough", max_examples=5000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
