from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "logs"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite fixtures/logs/*.expected.json from the current output (review the diff!)",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


def fixture_logs() -> list[Path]:
    return sorted(FIXTURES.glob("*.log"))


def _hypothesis_profiles() -> None:
    """`ci` (bounded, derandomized: same examples on every run, within minutes on 2 cores) and
    `long` for local runs; the example database lives outside the repo."""
    import os

    from hypothesis import HealthCheck, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    database = DirectoryBasedExampleDatabase(os.path.join(cache, "logphase", "hypothesis"))
    common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
    settings.register_profile("ci", max_examples=15, derandomize=True, database=None, **common)
    settings.register_profile("dev", max_examples=40, database=database, **common)
    settings.register_profile("long", max_examples=500, database=database, **common)
    default = "ci" if os.environ.get("CI") else "dev"
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", default))


_hypothesis_profiles()
