"""The web view in a real headless Chromium: sign-in, the host list and its
search, a tree page, policy, and a screenshot."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
import requests
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.web.browser import chromium

DOCS_PICTURE = Path(__file__).resolve().parents[2] / "docs" / "web-view.png"


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def api(live, path):
    resp = requests.get(live.url + path, headers=live.headers(), timeout=10)
    resp.raise_for_status()
    return resp.json()


def capacity(record) -> int:
    return int((record["total"] - record["reserved"]) * record["allocation_ratio"])


def sign_in(browser, live, token="admin"):
    browser.delete_all_cookies()
    browser.get(live.url + "/ui")
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "token")))
    assert browser.current_url.endswith("/ui/login")
    browser.find_element(By.ID, "token").send_keys(token)
    button = browser.find_element(By.CSS_SELECTOR, "form.login button")
    button.click()
    # Wait for the answer to the sign-in (its cookie) before going on: the
    # next page asked for too early would find no session yet.  While the
    # page is being replaced, chromedriver may answer a look at the old
    # button with an "unknown error" instead of a stale element: look again.
    WebDriverWait(browser, 10, ignored_exceptions=(WebDriverException,)).until(
        ec.staleness_of(button))
    WebDriverWait(browser, 10).until(
        lambda b: b.execute_script("return document.readyState") == "complete")


def test_sign_in_and_hosts_match_the_api(browser, live):
    sign_in(browser, live)
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "hosts")))
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.host")
    providers = api(live, "/resource_providers")["resource_providers"]
    roots = {p["uuid"] for p in providers if p["parent_provider_uuid"] is None}
    assert {r.get_attribute("data-uuid") for r in rows} == roots
    # Each host's numbers are the sums over its tree of what the API reports.
    for row in rows:
        root = row.get_attribute("data-uuid")
        expected: dict[str, list[int]] = {}
        for p in providers:
            if p["root_provider_uuid"] != root:
                continue
            inventories = api(live, f"/resource_providers/{p['uuid']}/inventories")
            usages = api(live, f"/resource_providers/{p['uuid']}/usages")["usages"]
            for rc, record in inventories["inventories"].items():
                got = expected.setdefault(rc, [0, 0])
                got[0] += usages.get(rc, 0)
                got[1] += capacity(record)
        cells = row.find_elements(By.CSS_SELECTOR, "td.usage[data-used]")
        shown = {c.get_attribute("data-rc"): [int(c.get_attribute("data-used")),
                                              int(c.get_attribute("data-capacity"))]
                 for c in cells}
        assert shown == expected
        for cell in cells:
            meter = cell.find_element(By.TAG_NAME, "meter")
            assert meter.get_attribute("value") == cell.get_attribute("data-used")
            assert f"{shown[cell.get_attribute('data-rc')][0]} / " in cell.text


def test_search_filters_as_you_type(browser, live):
    sign_in(browser, live)
    box = WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "search")))
    box.send_keys("compute-2")
    visible = [r for r in browser.find_elements(By.CSS_SELECTOR, "tr.host") if r.is_displayed()]
    assert [r.get_attribute("data-name") for r in visible] == ["compute-2"]
    assert browser.find_element(By.ID, "shown").text == "1"
    # And without script, by the query string.
    browser.get(live.url + "/ui?q=SHARED")
    names = [r.get_attribute("data-name") for r in browser.find_elements(By.CSS_SELECTOR,
                                                                         "tr.host")]
    assert names == ["shared-disk"]


def test_tree_renders_with_the_api_numbers(browser, live):
    w = live.world
    sign_in(browser, live)
    browser.get(f"{live.url}/ui/trees/{w.gpu}")  # any member shows the whole tree
    tree = WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "tree")))
    cards = tree.find_elements(By.CSS_SELECTOR, "section.provider")
    assert [c.get_attribute("data-uuid") for c in cards] == [w.host1, w.numa, w.gpu]
    # Drawn as a tree: every child's card starts right of its parent's.
    lefts = [c.rect["x"] for c in cards]
    assert lefts[0] < lefts[1] < lefts[2]
    for card in cards:
        uuid = card.get_attribute("data-uuid")
        inventories = api(live, f"/resource_providers/{uuid}/inventories")["inventories"]
        usages = api(live, f"/resource_providers/{uuid}/usages")["usages"]
        rows = card.find_elements(By.CSS_SELECTOR, "tr.inv")
        assert {r.get_attribute("data-rc"): (int(r.get_attribute("data-used")),
                                             int(r.get_attribute("data-capacity")))
                for r in rows} == {rc: (usages.get(rc, 0), capacity(rec))
                                   for rc, rec in inventories.items()}
        traits = {e.text for e in card.find_elements(By.CSS_SELECTOR, "li.trait")}
        assert traits == set(api(live, f"/resource_providers/{uuid}/traits")["traits"])
        aggregates = {e.text for e in card.find_elements(By.CSS_SELECTOR, "li.aggregate")}
        assert aggregates == set(api(live, f"/resource_providers/{uuid}/aggregates")[
            "aggregates"])
    sharing = browser.find_elements(By.CSS_SELECTOR, "#sharing section.provider")
    assert [s.get_attribute("data-uuid") for s in sharing] == [w.pool]
    link = browser.find_element(By.CSS_SELECTOR, "#sharing a.link")
    link.click()
    WebDriverWait(browser, 10).until(ec.url_contains(w.pool))
    assert browser.find_element(By.TAG_NAME, "h1").text == "shared-disk"


def test_same_policy_as_the_api(browser, live):
    sign_in(browser, live, token="bob")  # noauth2: a user without the admin role
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "allotment:web:view" in body and "403" in body


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_screenshot_of_a_tree(browser, live, tmp_path):
    sign_in(browser, live)
    browser.get(f"{live.url}/ui/trees/{live.world.host1}")
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "tree")))
    picture = browser.get_screenshot_as_png()
    width, height = _png_size(picture)
    assert (width, height) == (1280, browser.execute_script("return window.innerHeight"))
    # A rendered page compresses far worse than a blank one.
    assert len(picture) > 20_000
    (tmp_path / "tree.png").write_bytes(picture)
    gpu = browser.find_element(By.ID, f"rp-{live.world.gpu}")
    assert gpu.is_displayed() and gpu.size["height"] > 40
    if os.environ.get("ALLOTMENT_UPDATE_SCREENSHOT"):
        DOCS_PICTURE.write_bytes(picture)


def test_signed_in_as_sign_out_and_error_pages(browser, live):
    sign_in(browser, live)
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "hosts")))
    assert browser.find_element(By.ID, "signed-in").text.startswith("signed in as admin")
    # A stale link is a page with the way back, not a JSON document.
    browser.get(f"{live.url}/ui/trees/00000000-0000-0000-0000-000000000000")
    assert "may have been deleted" in browser.find_element(By.ID, "detail").text
    browser.find_element(By.LINK_TEXT, "Back to the hosts").click()
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "hosts")))
    button = browser.find_element(By.ID, "sign-out")
    button.click()
    WebDriverWait(browser, 10, ignored_exceptions=(WebDriverException,)).until(
        ec.staleness_of(button))
    assert browser.current_url.endswith("/ui/login")
    browser.get(live.url + "/ui")  # no session any more
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.ID, "token")))
    assert browser.current_url.endswith("/ui/login")
