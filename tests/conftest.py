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


def _hypothesis_profiles() -> None:
    """`ci` (derandomized: the same examples on every run), `dev` (the default without CI: random
    examples, the failing ones kept and replayed) and `long` (HYPOTHESIS_PROFILE=long, many more
    examples, for a property hunt). The example database is the checkout's git-ignored `.hypothesis/`:
    tests write nothing outside the checkout and a temporary folder, and one checkout's failures are
    not replayed in another."""
    import os

    from hypothesis import HealthCheck, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    database = DirectoryBasedExampleDatabase(str(ROOT / ".hypothesis" / "examples"))
    common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
    settings.register_profile("ci", max_examples=15, derandomize=True, database=None, **common)
    settings.register_profile("dev", max_examples=40, database=database, **common)
    settings.register_profile("long", max_examples=500, database=database, **common)
    default = "ci" if os.environ.get("CI") else "dev"
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", default))


_hypothesis_profiles()
