"""Hypothesis profiles of the suite, and example counts that follow the loaded profile.

- ``default``: Hypothesis' own (100 examples a test), for a run by hand;
- ``ci`` (loaded when ``CI`` is set, as ``.ci/run`` sets it): half of them, the same
  examples every run, no per-example deadline: the property tests were a fifth of the whole
  suite's time (about 90 of 480 seconds on 2 cores), which must stay under 8 minutes;
- ``check`` (``make check``, ``--hypothesis-profile=check``): a tenth of the examples, so
  that the fast tier stays fast;
- ``hunt`` (``--hypothesis-profile=hunt``): ten times the examples, new ones each run, for
  a long search by hand (the columnar paths against the per-message way, say).

A test that asks for more or fewer examples than Hypothesis' 100 says so with
:func:`examples`, which scales its count with the profile's.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: Hypothesis' default count, against which a profile's count is a fraction.
FULL = 100

settings.register_profile(
    "ci",
    max_examples=FULL // 2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "check",
    max_examples=FULL // 10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "hunt",
    max_examples=FULL * 10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
if os.environ.get("CI"):
    settings.load_profile("ci")


def examples(count: int) -> int:
    """``count`` examples under the full profiles, the same fraction of it as the loaded
    profile's count is of Hypothesis' 100 otherwise (at least one)."""
    loaded = settings.default
    assert loaded is not None
    return max(1, count * loaded.max_examples // FULL)
