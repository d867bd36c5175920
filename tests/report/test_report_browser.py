"""The report in a real browser: headless Chromium opens the page from disk with the network
unreachable, logs no console error, and every chart region of a screenshot holds a drawing.

Skipped with the reason where Chromium is not installed (`apt-get install chromium`); under CI=true
it must run (.ci/run installs it)."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from _support import cli
from chromium import Browser, binary, decode_png
from report_support import write_warehouse

CHROMIUM = binary()
if CHROMIUM is None and os.environ.get("CI") != "true":
    pytest.skip("Chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

CHARTS = "JSON.stringify([...document.querySelectorAll('figure.chart')].map(f => { const r = f.getBoundingClientRect(); " \
         "return [f.closest('section').dataset.table || 'overview', f.dataset.chart, r.x + scrollX, r.y + scrollY, " \
         "r.width, r.height]; }))"


def drawn(png: bytes) -> tuple[float, int]:
    """(share of pixels that are not the background, distinct colours) of a screenshot."""
    pixels = decode_png(png)[..., :3].reshape(-1, 3).astype(np.int32)
    background = np.all(pixels >= 250, axis=1)
    return float(1 - background.mean()), len(np.unique(pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2]))


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM is not None, "CI=true: the browser tier must run; .ci/run installs Debian's chromium"
    b = Browser(CHROMIUM)
    yield b
    b.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return write_warehouse(tmp_path_factory.mktemp("browser"))


@pytest.fixture
def report_page(written, tmp_path, monkeypatch, capsys):
    """The report of a copy of the demo-like warehouse (a test may damage the copy)."""
    specs, wh = (shutil.copytree(p, tmp_path / "demo" / p.name) for p in written)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    out = tmp_path / "report.html"
    code, _, err = cli(capsys, "report", str(specs), str(wh / "ops/logs"), "--warehouse", str(wh), "--out", str(out))
    assert code == 0, err
    return out


def test_the_report_renders_without_a_console_error_and_its_charts_are_drawn(browser, report_page, tmp_path):
    browser.open(report_page.as_uri())
    charts = json.loads(browser.evaluate(CHARTS))
    assert browser.errors() == []
    assert browser.evaluate("document.querySelectorAll('section.table').length") == 3
    kinds = {(table, kind) for table, kind, *_ in charts}
    for table in ("sales.orders", "web.events", "logs"):
        assert {(table, k) for k in ("files", "partitions", "instants", "commits")} <= kinds
    assert {("sales.orders", "buckets"), ("overview", "scores"), ("overview", "activity")} <= kinds
    for table, kind, x, y, width, height in charts:
        assert width > 300 and height > 120, (table, kind, width, height)
        share, colours = drawn(browser.screenshot(x, y, width, height))
        assert share > 0.03 and colours >= 4, f"{table} {kind}: {share:.1%} drawn, {colours} colours"
    # pygal's stylesheet, once in the page, styles every chart: its first series in the palette's first
    # colour, its title in the configured size (unstyled: black, the browser's 16px)
    styled = json.loads(browser.evaluate(
        "JSON.stringify([...document.querySelectorAll('figure.chart svg')].map(s => "
        "[getComputedStyle(s.querySelector('.color-0')).fill, getComputedStyle(s.querySelector('.title')).fontSize]))"))
    assert styled and set(map(tuple, styled)) == {("rgb(59, 111, 182)", "14px")}
    assert browser.evaluate("document.querySelectorAll('style').length") == 1
    # the measure tells an empty chart from a drawn one: a chart region of the page with nothing in it
    browser.evaluate("document.querySelector('section.table').insertAdjacentHTML('beforeend', "
                     "'<figure class=chart id=blank style=\"height:300px\"></figure>')")
    browser.fit()
    x, y, width, height = browser.evaluate("(r => [r.x + scrollX + 2, r.y + scrollY + 2, r.width - 4, r.height - 4])"
                                           "(document.getElementById('blank').getBoundingClientRect())")
    share, colours = drawn(browser.screenshot(x, y, width, height))
    assert share < 0.03 and colours < 4
    shot = tmp_path / "page.png"
    shot.write_bytes(browser.screenshot(0, 0, 1400, 1200))
    assert decode_png(shot.read_bytes()).shape[:2] == (1200, 1400)


def test_an_unreadable_table_renders_too(browser, report_page, tmp_path, capsys):
    """The page of a report with a table that could not be read: its error shown, no console error."""
    wh = report_page.parent / "demo" / "warehouse"
    shutil.rmtree(wh / "web/events/.hoodie/metadata")
    commit = sorted((wh / "web/events/.hoodie").glob("*.commit"))[0]
    commit.write_text("{not json")
    out = tmp_path / "bad.html"
    code, _, _ = cli(capsys, "report", str(report_page.parent / "demo/specs"), "--warehouse", str(wh), "--out", str(out))
    assert code == 1
    browser.open(out.as_uri())
    assert browser.errors() == []
    assert str(commit) in browser.evaluate("document.querySelector('.error').textContent")


def test_the_report_of_tables_apache_hudi_wrote_renders_with_its_charts(browser, real_table, tmp_path, capsys):
    """Tables Apache Hudi wrote (the real copy-on-write and merge-on-read tables of ../shared/fixtures,
    no spec): the page logs no console error and each table's charts are drawn."""
    bases = [real_table(name) for name in ("cow_v6_complexkeygen_hivestyle", "mor_parquet_v6_simplekeygen_nonhivestyle")]
    out = tmp_path / "hudi.html"
    code, _, err = cli(capsys, "report", *map(str, bases), "--out", str(out))
    assert code == 0, err
    browser.open(out.as_uri())
    charts = json.loads(browser.evaluate(CHARTS))
    assert browser.errors() == []
    assert browser.evaluate("document.querySelectorAll('section.table').length") == 2
    assert "Compaction: never, 2 deltacommits since" in browser.evaluate("document.body.textContent")
    tables = {table for table, *_ in charts if table != "overview"}
    assert len(tables) == 2
    for table, kind, x, y, width, height in charts:
        share, colours = drawn(browser.screenshot(x, y, width, height))
        assert share > 0.03 and colours >= 4, f"{table} {kind}: {share:.1%} drawn, {colours} colours"
