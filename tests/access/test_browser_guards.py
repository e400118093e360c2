"""What a web page can make a browser do to a service on the user's loopback, with authentication off (the
loopback default), reproduced from the security review and refused:

- DNS rebinding: a page of `rebind.example:P`, once that name resolves to 127.0.0.1, sends requests the
  browser deems same-origin (`Host: rebind.example:P`, `Origin: http://rebind.example:P`); before, they were
  answered with plans, column bounds and file paths. Refused by the Host allow-list (403).
- An `<img src="http://127.0.0.1:P/plans/<id>">` on any page made the service plan: GETs were not guarded,
  and plan ids could be forged. Refused: a GET the browser marks cross-site (`Sec-Fetch-Site`), and any id
  not issued by the service (a MAC with its key).
Engine clients and curl, which send none of these headers, are answered as before."""

from __future__ import annotations

import base64
import json
import zlib

import httpx

from tests.conformance.reference import Conformance

TABLE = "db.unpartitioned"


def test_dns_rebinding_is_refused(conformance_service: str) -> None:
    port = conformance_service.rsplit(":", 1)[1]
    rebound = {"Host": f"rebind.example:{port}", "Origin": f"http://rebind.example:{port}"}
    with httpx.Client(base_url=conformance_service, timeout=60) as c:
        plan_id = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0}).json()["plan-id"]
        for method, path, body in (
            ("POST", "/plan", {"table": TABLE}),
            ("POST", "/aggregate", {"table": TABLE, "aggregates": ["min(id)", "max(id)"]}),
            ("POST", "/explore", {"table": TABLE}),
            ("GET", f"/plans/{plan_id}", None),
            ("GET", f"/plans/{plan_id}/tasks/0", None),
            ("GET", "/v1/namespaces/db/tables/unpartitioned", None),
            ("GET", "/tables/db.unpartitioned/snapshots", None),
        ):
            answer = c.request(method, path, json=body, headers=rebound)
            assert answer.status_code == 403, (path, answer.text[:200])
            assert "allowed_hosts" in answer.json()["error"]["message"] and ".parquet" not in answer.text
        assert c.get("/health", headers=rebound).status_code == 200  # a balancer's check, nothing in it
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert c.post("/plan", json={"table": TABLE}, headers={"Host": host}).status_code == 200


def test_a_page_cannot_make_the_browser_plan(conformance_service: str) -> None:
    with httpx.Client(base_url=conformance_service, timeout=60) as c:
        plan_id = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0}).json()["plan-id"]
        image = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
        same_site = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Origin": "http://localhost:3000"}
        for headers in (image, same_site, {"Origin": "https://evil.example"}):
            for path in (f"/plans/{plan_id}", f"/plans/{plan_id}/tasks/0", "/v1/namespaces", "/metrics"):
                answer = c.get(path, headers=headers)
                assert answer.status_code == 403, (path, headers, answer.text[:200])
        own = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
        assert c.get(f"/plans/{plan_id}", headers=own).status_code == 200
        link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        assert c.get("/ui", headers=link).status_code == 200  # a person following a link to the explorer
        assert c.get(f"/plans/{plan_id}", headers=link).status_code == 403


def test_a_forged_plan_id_is_unknown(conformance_service: str, conformance: Conformance) -> None:
    """The review forged ids with a lookback of 2^31-1 and a parallelism of 10^12; none is planned now."""
    with httpx.Client(base_url=conformance_service, timeout=60) as c:
        plan_id = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0}).json()["plan-id"]
        packed, expires, mac = plan_id.removeprefix("p3.").split(".")
        request = json.loads(zlib.decompress(base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))))
        request["options"] = {"lookback": 2**31 - 1}
        request["parallelism"] = 10**12
        edited = base64.urlsafe_b64encode(zlib.compress(json.dumps(request).encode())).decode().rstrip("=")
        for forged in (f"p3.{edited}.{expires}.{mac}", f"p1.{edited}", f"p3.{edited}", f"p2.{edited}.{mac}"):
            answer = c.get(f"/plans/{forged}/tasks/0")
            assert answer.status_code == 404 and answer.json()["error"]["type"] == "NoSuchPlanIdException"
