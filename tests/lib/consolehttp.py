"""Helpers of the web console tests (7040-7059): its JSON API on the broker's
HTTP listener (metrics.listener), docs/console.md.

    st, body = api_get(port, "/api/topics")          # body: parsed JSON, or None if not JSON
    st, body = api_post(port, "/api/topics", {"name": "t", "partitions": 3})
    st, body = api_post(port, "/api/topics", b"{not json")   # raw bytes are sent as they are
"""
import json
import urllib.error
import urllib.request


def _exchange(req, timeout_s):
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            st, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        st, raw = e.code, e.read()
    try:
        return st, json.loads(raw)
    except ValueError:
        return st, None


def api_get(port, path, timeout_s=15.0):
    """(status, parsed JSON or None) of GET path on 127.0.0.1:port."""
    return _exchange(urllib.request.Request("http://127.0.0.1:%d%s" % (port, path)), timeout_s)


def api_post(port, path, body, timeout_s=15.0, method="POST"):
    """(status, parsed JSON or None) of POST path; body is JSON-encoded unless it is bytes."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    return _exchange(req, timeout_s)


def is_error(resp, status):
    """True if resp is (status, {"error": "..."}): the API's answer to bad input."""
    st, body = resp
    return st == status and isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"] != ""
