"""Fixtures for every test: real Hudi tables from ../shared/fixtures (skipped when absent)."""
from __future__ import annotations

import pytest

from _support import unzip_fixture


@pytest.fixture
def real_table(tmp_path):
    """A factory: real_table(name) unzips that real table into tmp_path and returns its base dir."""
    def make(name: str):
        try:
            return unzip_fixture(name, tmp_path / "fixtures" / name)
        except FileNotFoundError:
            pytest.skip("../shared/fixtures not found")
    return make
