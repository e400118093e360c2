"""A headless Chromium driven by chromium-driver (Debian's packages; scripts/setup_tests.sh installs them),
for the tests of the service's pages."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 800, offline: bool = False) -> Iterator[WebDriver]:
    """`offline`: every name but loopback's fails to resolve, as on a machine with no network."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert browser and driver, "install chromium and chromium-driver (scripts/setup_tests.sh does)"
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={width},{height}")
    if offline:
        options.add_argument("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost")
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield chrome
    finally:
        chrome.quit()
