"""Debian's headless Chromium driven through its WebDriver."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium():
    """A headless Chromium session; skipped (failed under CI) when the
    browser is not installed (scripts/install-browser installs it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver):
        message = "chromium/chromedriver missing: run scripts/install-browser"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--lang=en-US"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)
