import pytest

from helpers import SHARED_DATA, casc


@pytest.fixture(scope="session")
def shared_data():
    if not (SHARED_DATA / "casc" / "census.csv").is_file():
        pytest.fail(f"reference data not found at {SHARED_DATA} (../shared must sit beside the repository)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def census(shared_data):
    return casc("census")


@pytest.fixture(scope="session")
def tarragona(shared_data):
    return casc("tarragona")


@pytest.fixture(scope="session")
def eia(shared_data):
    return casc("eia")
