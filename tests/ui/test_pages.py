"""The pages a newcomer opens besides the explorer, with no network but the service's (a Chromium whose every
name but loopback's fails to resolve): `/docs` (Swagger UI) and `/redoc` render the service's operations
from scripts the service serves itself; `/` leads a browser to them and answers an API client in JSON. All
are open with authentication on: they hold no table's data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import running_service
from tests.ui.browser import chromium

TOKEN = "pages-token"


@pytest.fixture(scope="module")
def service(demo_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = tmp_path_factory.mktemp("pages") / "service.json"
    config.write_text(json.dumps({"auth_tokens": {"reader": TOKEN}}))
    with running_service("--config", str(config), env={"SCAN_PLANNER_HOME": str(demo_home)}) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium(offline=True) as chrome:
        yield chrome


def _operations(service: str) -> int:
    document = httpx.get(f"{service}/openapi.json", timeout=30).json()
    return sum(
        len([m for m in methods if m in ("get", "post", "head", "delete")]) for methods in document["paths"].values()
    )


def _requested(browser: WebDriver) -> dict[str, int]:
    """Origin -> the most responses any of its resources got (scripts, styles, the OpenAPI document, images):
    0 for an origin every request to which failed or was blocked."""
    entries = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => [e.name, e.responseStatus || 0])"
    )
    origins: dict[str, int] = {}
    for name, status in entries:
        if not name.startswith(("data:", "blob:")):
            origin = f"{urlsplit(name).scheme}://{urlsplit(name).netloc}"
            origins[origin] = max(origins.get(origin, 0), int(status > 0))
    return origins


def test_swagger_ui_renders_every_operation_offline(browser: WebDriver, service: str, screenshots: Path) -> None:
    browser.get(f"{service}/docs")
    expected = _operations(service)
    WebDriverWait(browser, 30).until(
        lambda b: len(b.find_elements(By.CSS_SELECTOR, ".opblock")) >= expected,
        message=f"Swagger UI's {expected} operations",
    )
    assert "/plan" in browser.find_element(By.CSS_SELECTOR, ".swagger-ui").text
    assert _requested(browser) == {service: 1}  # nothing asked of any other origin
    browser.save_screenshot(str(screenshots / "docs-swagger-ui.png"))


def test_redoc_renders_offline(browser: WebDriver, service: str, screenshots: Path) -> None:
    browser.get(f"{service}/redoc")
    WebDriverWait(browser, 60).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, ".api-content h2"), message="ReDoc's operations"
    )
    text = browser.find_element(By.CSS_SELECTOR, ".api-content").text
    assert "scan-planner" in text and "/plan" in text
    # everything from the service; ReDoc's one link elsewhere, the "API docs by Redocly" logo in its sidebar
    # (a CSS image), is refused by the page's Content-Security-Policy: its absence changes nothing
    assert _requested(browser) in ({service: 1}, {service: 1, "https://cdn.redoc.ly": 0})
    browser.save_screenshot(str(screenshots / "docs-redoc.png"))


def test_the_root_leads_a_browser_to_the_pages(browser: WebDriver, service: str) -> None:
    browser.get(service)
    links = {urlsplit(a.get_attribute("href") or "").path for a in browser.find_elements(By.CSS_SELECTOR, "a")}
    assert {"/ui", "/docs", "/redoc", "/health"} <= links
    browser.find_element(By.CSS_SELECTOR, 'a[href="/docs"]').click()
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".opblock"), message="/docs from /")


def test_the_root_answers_an_api_client_in_json_and_the_pages_need_no_token(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30) as client:
        root = client.get("/")
        assert root.status_code == 200 and root.headers["content-type"] == "application/json"
        assert {"/ui", "/docs", "/health"} <= set(root.json()["links"])
        for path in (
            "/docs",
            "/redoc",
            "/openapi.json",
            "/docs-assets/swagger-ui-bundle.js",
            "/docs-assets/redoc.standalone.js",
        ):
            assert client.get(path).status_code == 200, path
        assert client.get("/docs-assets/..%2F..%2Fsettings.py").status_code == 404
        assert client.get("/docs-assets/core.py").status_code == 404  # only the three files the pages load
        refused = client.post("/plan", json={"table": "demo.events"})  # (what holds data still asks for the token)
        assert refused.status_code == 401
        planned = client.post("/plan", json={"table": "demo.events"}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert planned.status_code == 200
