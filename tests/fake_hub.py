"""A fake Hugging Face Hub: real HTTP on 127.0.0.1 that huggingface_hub talks to unchanged.

Point ``HF_ENDPOINT`` (or ``HfApi(endpoint=...)``) at :attr:`FakeHub.url`. It serves the
routes and headers huggingface_hub 2.x reads (checked against its source):

- ``GET /api/models`` with ``search``, ``filter``, ``author``, ``sort``, ``limit``,
  ``expand``; paging with a ``cursor`` in a ``Link: <...>; rel="next"`` header;
- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}`` (``blobs=true``
  adds sizes, blob ids and LFS sha256 to ``siblings``);
- ``GET /api/models/{repo}/tree/{rev}[/{path}]`` (``recursive``) and
  ``POST /api/models/{repo}/paths-info/{rev}`` (form ``paths``);
- ``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` with ``X-Repo-Commit``, ``ETag``,
  ``X-Linked-Etag`` and ``X-Linked-Size``. LFS files redirect (302) to a second server,
  the "CDN", on another port, as the real Hub does; both honour ``Range`` (206 +
  ``Content-Range``, 416 when unsatisfiable);
- ``GET /api/whoami-v2`` (the token's account name, from ``token_names``);
- errors with the Hub's ``X-Error-Code`` / ``X-Error-Message`` headers: gated repos give
  401 without a token and 403 with a token that was not granted access.

Fault switches: ``drop_after`` (close the connection after N body bytes; with
``stall_s``, first go silent that long, like a stalled transfer), ``corrupt``
(flip one served byte while the advertised sha256 stays), ``fail_next`` (answer an
HTTP status a few times), ``throttle_bps`` (server-side pacing), ``ignore_range``.
Every request is logged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from fake_hub_repos import FakeFile, FakeRepo, Request, deterministic_blob, git_blob_id

_CHUNK = 64 * 1024

__all__ = ["FakeFile", "FakeHub", "FakeRepo", "Request", "deterministic_blob", "git_blob_id"]


class FakeHub:
    """Start with ``with FakeHub() as hub:`` (or :meth:`start` / :meth:`stop`)."""

    def __init__(self, *, redirect_lfs: bool = True, page_size: int = 1000) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.valid_tokens: set[str] = set()
        self.token_names: dict[str, str] = {}  # token -> account name, for whoami
        self.redirect_lfs = redirect_lfs
        self.default_page_size = page_size
        self.throttle_bps: float | None = None
        self.ignore_range = False  # behave like a server (or proxy) without Range support
        self._drops: dict[tuple[str, str], list[int]] = {}
        self.stall_s = 0.0  # with drop_after: go silent this long before closing
        self._corrupt: dict[tuple[str, str], int] = {}
        self._fail: dict[tuple[str, str], list[int]] = {}
        self._log: list[Request] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self.url = ""
        self.cdn_url = ""

    # ------------------------------------------------------------------ registry

    def add_repo(self, repo_id: str, files: dict[str, bytes | FakeFile], **kw: Any) -> FakeRepo:
        repo = FakeRepo(
            repo_id,
            {p: f if isinstance(f, FakeFile) else FakeFile(f) for p, f in files.items()},
            **kw,
        )
        repo.commits.append(hashlib.sha1(f"{repo_id}:0".encode()).hexdigest())
        self.repos[repo_id] = repo
        return repo

    def update_file(self, repo_id: str, path: str, data: bytes) -> str:
        """Commit new content for ``path``; returns the new commit sha."""
        repo = self.repos[repo_id]
        repo.files[path] = FakeFile(data, lfs=repo.files[path].lfs if path in repo.files else True)
        repo.commits.append(hashlib.sha1(f"{repo_id}:{len(repo.commits)}".encode()).hexdigest())
        repo.last_modified += timedelta(days=1)
        return repo.sha

    # ------------------------------------------------------------------ faults and log

    def drop_after(self, repo_id: str, path: str, *nbytes: int) -> None:
        """The next ``len(nbytes)`` bodies of this file stop after that many bytes."""
        with self._lock:
            self._drops.setdefault((repo_id, path), []).extend(nbytes)

    def corrupt(self, repo_id: str, path: str, offset: int) -> None:
        """Serve this file with the byte at ``offset`` flipped (sha256 advertised as before)."""
        self._corrupt[(repo_id, path)] = offset

    def fail_next(self, repo_id: str, path: str, *statuses: int) -> None:
        """The next GETs of this file's ``resolve`` URL answer these HTTP statuses."""
        with self._lock:
            self._fail.setdefault((repo_id, path), []).extend(statuses)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._log)

    def file_gets(self, repo_id: str, path: str) -> list[Request]:
        """GETs that carried this file's bytes: on the CDN when LFS files redirect, else
        on ``resolve``."""
        if self._redirects(repo_id, path):
            sha = self.repos[repo_id].files[path].sha256
            return [r for r in self.requests if r.method == "GET" and r.path == f"/lfs/{sha}"]
        return [
            r
            for r in self.requests
            if r.method == "GET"
            and r.path.startswith(f"/{repo_id}/resolve/")
            and r.path.endswith("/" + path)
        ]

    def _redirects(self, repo_id: str, path: str) -> bool:
        return self.redirect_lfs and self.repos[repo_id].files[path].lfs

    def _take(self, table: dict[tuple[str, str], list[int]], key: tuple[str, str]) -> int | None:
        with self._lock:
            queue = table.get(key)
            return queue.pop(0) if queue else None

    def _record(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)

    # ------------------------------------------------------------------ server

    def start(self) -> FakeHub:
        for role in ("hub", "cdn"):
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            server.daemon_threads = True
            server.hub = self  # type: ignore[attr-defined]
            server.role = role  # type: ignore[attr-defined]
            threading.Thread(
                target=server.serve_forever, args=(0.05,), daemon=True, name=f"fake-{role}"
            ).start()
            self._servers.append(server)
        self.url = f"http://127.0.0.1:{self._servers[0].server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self._servers[1].server_address[1]}"
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ access rules

    def visible(self, repo: FakeRepo, token: str | None) -> bool:
        return not repo.private or (token is not None and token in repo.granted)

    def search(self, query: dict[str, list[str]], token: str | None) -> list[FakeRepo]:
        text = (query.get("search") or [""])[0].lower()
        filters = query.get("filter", []) + query.get("filter[]", [])
        author = (query.get("author") or [None])[0]
        hits = [
            r
            for r in self.repos.values()
            if self.visible(r, token)
            and text in r.repo_id.lower()
            and all(f in r.tags for f in filters)
            and (author is None or r.repo_id.split("/")[0] == author)
        ]
        sort = (query.get("sort") or [None])[0]
        keys = {"downloads": "downloads", "likes": "likes", "lastModified": "last_modified"}
        if sort in keys:
            hits.sort(key=lambda r: getattr(r, keys[sort]), reverse=True)
        return hits


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _uncursor(value: str) -> int:
    return int(json.loads(base64.urlsafe_b64decode(value.encode()))["offset"])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"

    @property
    def hub(self) -> FakeHub:
        return self.server.hub  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # ------------------------------------------------------------------ plumbing

    def _begin(self) -> tuple[list[str], dict[str, list[str]], str | None] | None:
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.hub._record(Request(self.command, unquote(split.path), query, headers))
        auth = headers.get("authorization", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if token is not None and token not in self.hub.valid_tokens:
            self._error(401, None, "Invalid credentials in Authorization header")
            return None
        return [unquote(s) for s in split.path.split("/")[1:]], query, token

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str | None, message: str) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._json(status, {"error": message}, headers)

    def _read_form(self) -> dict[str, list[str]]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode() if length else ""
        if "json" in (self.headers.get("Content-Type") or ""):
            data = json.loads(raw or "{}")
            return {k: v if isinstance(v, list) else [str(v)] for k, v in data.items()}
        return parse_qs(raw, keep_blank_values=True)

    # ------------------------------------------------------------------ verbs

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        try:
            begun = self._begin()
            if begun is None:
                return
            parts, query, token = begun
            if self.server.role == "cdn":  # type: ignore[attr-defined]
                self._cdn(parts, query)
            elif parts[:2] == ["api", "models"]:
                self._api(parts[2:], query, token)
            elif parts[:2] == ["api", "whoami-v2"]:
                self._whoami(token)
            elif len(parts) >= 5 and parts[2] == "resolve":
                self._resolve("/".join(parts[:2]), parts[3], "/".join(parts[4:]), token)
            else:
                self._error(404, None, "Not Found")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _api(self, rest: list[str], query: dict[str, list[str]], token: str | None) -> None:
        if not rest and self.command == "GET":
            return self._list(query, token)
        repo = self.hub.repos.get("/".join(rest[:2]))
        if repo is None or not self.hub.visible(repo, token):
            status = 404 if token else 401
            return self._error(status, "RepoNotFound", "Repository not found")
        tail = rest[2:]
        rev = tail[1] if len(tail) >= 2 else "main"
        if rev not in ("main", *repo.commits):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        if not tail or tail[0] == "revision":
            blobs = (query.get("blobs") or ["false"])[0].lower() == "true"
            return self._json(200, repo.info(blobs))
        if tail[0] == "tree":
            return self._tree(repo, "/".join(tail[2:]), query)
        if tail[0] == "paths-info" and self.command == "POST":
            paths = self._read_form().get("paths", [])
            known = repo.folders() | set(repo.files)
            return self._json(200, [repo.tree_entry(p) for p in paths if p in known])
        return self._error(404, None, "Not Found")

    def _whoami(self, token: str | None) -> None:
        """The token's account (``HfApi.whoami``): its name from ``token_names``."""
        if token is None:
            return self._error(401, None, "Invalid credentials in Authorization header")
        name = self.hub.token_names.get(token, "hearth-user")
        self._json(200, {"type": "user", "name": name, "auth": {"type": "access_token"}})

    def _list(self, query: dict[str, list[str]], token: str | None) -> None:
        hits = self.hub.search(query, token)
        limit = min(int((query.get("limit") or [self.hub.default_page_size])[0]), 1000)
        start = _uncursor(query["cursor"][0]) if "cursor" in query else 0
        expand = query.get("expand", []) + query.get("expand[]", [])
        page = [r.info(False, expand or None) for r in hits[start : start + limit]]
        if not expand:
            for item in page:
                item.pop("siblings", None)
                item.pop("lastModified", None)
        headers = {}
        if start + limit < len(hits):
            nxt = {k: v for k, v in query.items() if k != "cursor"}
            nxt["cursor"] = [_cursor(start + limit)]
            link = f"{self.hub.url}/api/models?{urlencode(nxt, doseq=True)}"
            headers["Link"] = f'<{link}>; rel="next"'
        self._json(200, page, headers)

    def _tree(self, repo: FakeRepo, folder: str, query: dict[str, list[str]]) -> None:
        recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
        entries = sorted(repo.folders() | set(repo.files))
        prefix = folder + "/" if folder else ""
        if folder and folder not in repo.folders():
            return self._error(404, "EntryNotFound", f"{folder} does not exist")
        out = [
            repo.tree_entry(p)
            for p in entries
            if p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :])
        ]
        self._json(200, out)

    def _resolve(self, repo_id: str, rev: str, path: str, token: str | None) -> None:
        repo = self.hub.repos.get(repo_id)
        if repo is None or not self.hub.visible(repo, token):
            return self._error(404 if token else 401, "RepoNotFound", "Repository not found")
        if repo.gated and (token is None or token not in repo.granted):
            if token is None:
                msg = (
                    f"Access to model {repo_id} is restricted. You must have access to it "
                    "and be authenticated to access it. Please log in."
                )
                return self._error(401, "GatedRepo", msg)
            msg = (
                f"Access to model {repo_id} is restricted and you are not in the authorized "
                f"list. Visit https://huggingface.co/{repo_id} to ask for access."
            )
            return self._error(403, "GatedRepo", msg)
        if rev not in ("main", *repo.commits):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        f = repo.files.get(path)
        if f is None:
            return self._error(404, "EntryNotFound", f"{path} does not exist")
        status = self.hub._take(self.hub._fail, (repo_id, path)) if self.command == "GET" else None
        if status is not None:
            return self._error(status, None, "Injected failure")
        headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{f.etag}"', "Accept-Ranges": "bytes"}
        if f.lfs:
            headers.update({"X-Linked-Etag": f'"{f.sha256}"', "X-Linked-Size": str(f.size)})
        if self.hub._redirects(repo_id, path):
            query = urlencode({"repo": repo_id, "file": path, "sig": "fake"})
            headers["Location"] = f"{self.hub.cdn_url}/lfs/{f.sha256}?{query}"
            headers["ETag"] = f'"{git_blob_id(f.pointer)}"'
            return self._json(302, {"redirect": headers["Location"]}, headers)
        self._send_file(repo_id, path, f, headers)

    def _cdn(self, parts: list[str], query: dict[str, list[str]]) -> None:
        repo_id, path = query.get("repo", [""])[0], query.get("file", [""])[0]
        repo = self.hub.repos.get(repo_id)
        f = repo.files.get(path) if repo else None
        if f is None or parts != ["lfs", f.sha256]:
            return self._error(404, None, "No such object")
        self._send_file(repo_id, path, f, {"ETag": f'"{f.sha256}"', "Accept-Ranges": "bytes"})

    # ------------------------------------------------------------------ bodies

    def _send_file(self, repo_id: str, path: str, f: FakeFile, headers: dict[str, str]) -> None:
        size, start, end = f.size, 0, f.size - 1
        spec = None if self.hub.ignore_range else self.headers.get("Range")
        status = 200
        if spec:
            try:
                first, _, last = spec.removeprefix("bytes=").partition("-")
                start = int(first)
                end = min(int(last), size - 1) if last else size - 1
            except ValueError:
                start = size
            if start >= size or start > end:
                headers["Content-Range"] = f"bytes */{size}"
                return self._json(416, {"error": "Range Not Satisfiable"}, headers)
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        key = (repo_id, path)
        drop = self.hub._take(self.hub._drops, key)
        self._write_body(self._body(f, key, start, end + 1), drop)

    def _body(self, f: FakeFile, key: tuple[str, str], start: int, stop: int) -> Iterator[bytes]:
        flip = self.hub._corrupt.get(key)
        for pos in range(start, stop, _CHUNK):
            chunk = f.data[pos : min(stop, pos + _CHUNK)]
            if flip is not None and pos <= flip < pos + len(chunk):
                i = flip - pos
                chunk = chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1 :]
            yield chunk

    def _write_body(self, chunks: Iterator[bytes], drop: int | None) -> None:
        sent, began = 0, time.monotonic()
        for chunk in chunks:
            if drop is not None and sent + len(chunk) >= drop:
                self.wfile.write(chunk[: max(0, drop - sent)])
                self.wfile.flush()
                time.sleep(self.hub.stall_s)  # a stalled connection: open, but silent
                self.close_connection = True
                return  # the handler closes the socket: the client sees a short body
            self.wfile.write(chunk)
            sent += len(chunk)
            bps = self.hub.throttle_bps
            if bps:
                ahead = began + sent / bps - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
