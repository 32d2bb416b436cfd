from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "logs"

# What logphase derives from its grammars and keeps between runs (packs/derived.py) goes to a
# temporary folder of this test run (the commands the tests start inherit it): tests write nothing
# outside the checkout and a temporary folder, and start from no kept data.
_CACHE = tempfile.mkdtemp(prefix="logphase-test-cache-")
os.environ["LOGPHASE_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite fixtures/logs/*.expected.json from the current output (review the diff!)",
    )
    parser.addoption(
        "--update-readme",
        action="store_true",
        default=False,
        help="rewrite the README's example outputs from what the tool prints now (tests/test_readme.py; review the diff!)",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def update_readme(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-readme"))


def fixture_logs() -> list[Path]:
    return sorted(FIXTURES.glob("*.log"))


# Examples drawn per property and fixture in each Hypothesis profile. Most properties run once per
# fixture (44 of them, tens of ms a parse), so a few examples each make hundreds per property and run,
# and the default tier stays within 2 minutes on 2 cores; `dev` draws new ones on every run (and
# replays the failures it found), `long` is for a hunt: the long tier (`-m long`), or
# HYPOTHESIS_PROFILE=long on the tests you name.
PROFILE_EXAMPLES = {"ci": 6, "dev": 6, "long": 500}
# set by pytest_configure, before any test module is imported (their @settings read it)
PROFILE = "dev"


def examples(default: int) -> int:
    """Examples for a property that runs once (not per fixture): ``default`` in ci and dev, ten
    times as many in the long profile."""
    return default * 10 if PROFILE == "long" else default


def _hypothesis_profiles(profile: str) -> None:
    """`ci` (derandomized: the same examples on every run), `dev` (the default without CI: random
    examples, the failing ones kept and replayed) and `long` (many more examples, for a property
    hunt). The example database is the checkout's git-ignored `.hypothesis/`: tests write nothing
    outside the checkout and a temporary folder, and one checkout's failures are not replayed in
    another."""
    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    # all that Hypothesis keeps (its unicode tables too), whatever folder pytest is run from
    set_hypothesis_home_dir(ROOT / ".hypothesis")
    database = DirectoryBasedExampleDatabase(str(ROOT / ".hypothesis" / "examples"))
    common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
    settings.register_profile("ci", max_examples=PROFILE_EXAMPLES["ci"], derandomize=True, database=None, **common)
    settings.register_profile("dev", max_examples=PROFILE_EXAMPLES["dev"], database=database, **common)
    settings.register_profile("long", max_examples=PROFILE_EXAMPLES["long"], database=database, **common)
    settings.load_profile(profile)


# -- the long tier -----------------------------------------------------------------------------------
# `python -m pytest` runs the default tier: the tests marked `long` are deselected (the summary counts
# them). `-m long` runs the long tier: those tests and every property test (Hypothesis), the latter
# with the `long` profile. Any -m that names `long` (`-m "not long"`, `-m "long or browser"`) decides
# by itself, as -m does.
_LONG_TIER = pytest.StashKey[bool]()
_NAMES_LONG = pytest.StashKey[bool]()


def _mark_words(markexpr: str) -> list[str]:
    return re.findall(r"\w+|\S", markexpr)


def pytest_configure(config: pytest.Config) -> None:
    global PROFILE
    words = _mark_words(str(config.getoption("markexpr", "") or ""))
    config.stash[_NAMES_LONG] = "long" in words
    config.stash[_LONG_TIER] = any(w == "long" and (i == 0 or words[i - 1] != "not") for i, w in enumerate(words))
    PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
        "long" if config.stash[_LONG_TIER] else "ci" if os.environ.get("CI") else "dev"
    )
    _hypothesis_profiles(PROFILE)


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the property tests join the long tier first
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.stash[_LONG_TIER]:
        for item in items:
            if hasattr(getattr(item, "obj", None), "hypothesis"):  # what @given leaves on a test
                item.add_marker(pytest.mark.long)
    if config.stash[_NAMES_LONG]:
        return  # -m decides
    long = [item for item in items if item.get_closest_marker("long") is not None]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if item.get_closest_marker("long") is None]
