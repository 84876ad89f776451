"""Search the Hub for GGUF repos, one page at a time.

``search_models`` is a one-shot search through ``HfApi.list_models``. ``ModelSearch``
pages through the same ``/api/models`` route the way huggingface_hub does internally
(cursor in the ``Link`` header), but stops after each page so a UI can show a
"more results" button and knows whether there is a next page. Both are blocking calls:
run them in a worker thread from an event loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from huggingface_hub import ModelInfo, hf_raise_for_status
from huggingface_hub.utils import http_backoff  # type: ignore[attr-defined]

from hearth.hub.client import (
    auth_headers,
    has_auth,
    hub_endpoint,
    keyring_token,
    make_api,
    sends_token,
    translate_hf_error,
)
from hearth.hub.errors import HubError

log = logging.getLogger(__name__)

SortKey = Literal["downloads", "likes", "last_modified"]
SORT_KEYS: tuple[SortKey, ...] = ("downloads", "likes", "last_modified")
_SORT_PARAM: dict[SortKey, str] = {
    "downloads": "downloads",
    "likes": "likes",
    "last_modified": "lastModified",
}
GGUF_FILTER = "gguf"
EXPAND: list[Any] = ["downloads", "likes", "lastModified", "gated", "private", "tags"]
MAX_PAGE_SIZE = 100


@dataclass(frozen=True)
class ModelSummary:
    """One search hit."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None
    gated: bool
    gated_mode: str | None  # "auto" or "manual" when gated
    private: bool
    tags: tuple[str, ...]

    @property
    def author(self) -> str:
        return self.repo_id.split("/", 1)[0]

    @classmethod
    def from_model_info(cls, info: ModelInfo) -> ModelSummary:
        gated = info.gated
        return cls(
            repo_id=info.id,
            downloads=int(info.downloads or 0),
            likes=int(info.likes or 0),
            last_modified=info.last_modified,
            gated=bool(gated),
            gated_mode=gated if isinstance(gated, str) else None,
            private=bool(info.private),
            tags=tuple(info.tags or ()),
        )


def _check_sort(sort: str) -> SortKey:
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, not {sort!r}")
    return sort  # type: ignore[return-value]


def _check_page_size(page_size: int) -> int:
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page size must be between 1 and {MAX_PAGE_SIZE}")
    return page_size


def search_models(
    query: str,
    *,
    sort: SortKey = "downloads",
    limit: int = 30,
    endpoint: str | None = None,
    token: str | None = None,
) -> list[ModelSummary]:
    """The first ``limit`` GGUF repos matching ``query``, best first by ``sort``."""
    sort = _check_sort(sort)
    limit = _check_page_size(limit)
    base = hub_endpoint(endpoint)
    token = token if token is not None else keyring_token()
    api = make_api(base, token)
    try:
        infos = api.list_models(
            search=query.strip() or None,
            filter=GGUF_FILTER,
            sort=sort,
            limit=limit,
            expand=EXPAND,
        )
        return [ModelSummary.from_model_info(info) for info in infos]
    except Exception as exc:
        raise _search_error(exc, base, token) from exc


def _search_error(exc: Exception, base: str, token: str | None) -> HubError:
    return translate_hf_error(exc, "the model search", has_token=sends_token(token), endpoint=base)


@dataclass(frozen=True)
class SearchPage:
    number: int  # 1-based
    results: list[ModelSummary]
    has_more: bool


class ModelSearch:
    """A paged GGUF search. Call :meth:`next_page` until ``has_more`` is False."""

    def __init__(
        self,
        query: str,
        *,
        sort: SortKey = "downloads",
        page_size: int = 30,
        endpoint: str | None = None,
        token: str | None = None,
    ) -> None:
        self.query = query.strip()
        self.sort = _check_sort(sort)
        self.page_size = _check_page_size(page_size)
        self.endpoint = hub_endpoint(endpoint)
        self._token = token if token is not None else keyring_token()
        self._next_url: str | None = f"{self.endpoint}/api/models"
        self._first = True
        self._pages = 0
        self._seen: set[str] = set()

    @property
    def has_more(self) -> bool:
        return self._next_url is not None

    @property
    def pages_fetched(self) -> int:
        return self._pages

    def next_page(self) -> SearchPage:
        """Fetch the next page; an empty, final page once the results are exhausted."""
        if self._next_url is None:
            return SearchPage(self._pages, [], has_more=False)
        headers = auth_headers(self._token)
        params: dict[str, Any] | None = None
        if self._first:
            params = {
                "filter": [GGUF_FILTER],
                "sort": _SORT_PARAM[self.sort],
                "limit": self.page_size,
                "expand": EXPAND,
            }
            if self.query:
                params["search"] = self.query
        try:
            response = http_backoff("GET", self._next_url, params=params, headers=headers)
            hf_raise_for_status(response)
            items = response.json()
        except Exception as exc:
            raise translate_hf_error(
                exc, "the model search", has_token=has_auth(headers), endpoint=self.endpoint
            ) from exc
        self._first = False
        self._next_url = response.links.get("next", {}).get("url")
        if self._next_url and not self._next_url.startswith(self.endpoint):
            log.warning("ignoring a next-page link to another host: %s", self._next_url)
            self._next_url = None
        results = []
        for item in items if isinstance(items, list) else []:
            item.setdefault("siblings", None)
            info = ModelInfo(**item)  # type: ignore[no-untyped-call]
            summary = ModelSummary.from_model_info(info)
            if summary.repo_id not in self._seen:  # cursors may overlap when ranks move
                self._seen.add(summary.repo_id)
                results.append(summary)
        self._pages += 1
        log.debug("search %r page %d: %d results", self.query, self._pages, len(results))
        return SearchPage(self._pages, results, has_more=self._next_url is not None)
