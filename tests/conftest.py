import pytest

from helpers import SHARED_DATA, casc


@pytest.fixture(scope="session")
def shared_data():
    if not (SHARED_DATA / "casc" / "census.csv").is_file():
        pytest.fail(f"reference data not found at {SHARED_DATA} (../shared must sit beside the repository)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def boundscheck_cache(request, tmp_path_factory):
    """A numba cache folder for bounds-checked kernels only (:func:`helpers.run_bounds_checked`),
    kept in pytest's cache between runs where it is on (the compilation takes a minute)."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("numba-boundscheck") if cache is not None else tmp_path_factory.mktemp("numba-boundscheck")


@pytest.fixture(scope="session")
def census(shared_data):
    return casc("census")


@pytest.fixture(scope="session")
def tarragona(shared_data):
    return casc("tarragona")


@pytest.fixture(scope="session")
def eia(shared_data):
    return casc("eia")


@pytest.fixture(params=__import__("service_support").BACKENDS)
def database(request, tmp_path):
    """A fresh collector database URL: SQLite, and PostgreSQL when PROBANON_TEST_POSTGRES is set."""
    from service_support import fresh_database

    url, drop = fresh_database(request.param, tmp_path)
    yield url
    drop()


@pytest.fixture
def collector(database):
    """(base URL, admin token, database URL) of a collector running in a thread on 127.0.0.1."""
    from probanon.service.server import init_admin, running

    admin = init_admin(database)
    with running(database) as base:
        yield base, admin, database
