from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "casc" / "census.csv").is_file():
        pytest.fail(f"reference data not found at {SHARED_DATA} (../shared must sit beside the repository)")
    return SHARED_DATA
