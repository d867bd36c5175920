"""Fixtures for the Hudi core tests: real tables from ../shared/fixtures, unzipped per test."""
from __future__ import annotations

import pytest
from _support import COW_FIXTURES, MOR_FIXTURES

ALL_FIXTURES = COW_FIXTURES + MOR_FIXTURES


@pytest.fixture
def fixture_table(real_table):
    """The shared real_table factory under the name these tests use."""
    return real_table


@pytest.fixture(params=COW_FIXTURES)
def cow_name(request) -> str:
    """Each copy-on-write fixture's name in turn."""
    return request.param


@pytest.fixture(params=MOR_FIXTURES)
def mor_name(request) -> str:
    """Each merge-on-read fixture's name in turn."""
    return request.param


@pytest.fixture(params=ALL_FIXTURES)
def any_name(request) -> str:
    """Every fixture's name in turn."""
    return request.param
