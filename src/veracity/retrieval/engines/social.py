"""`RedditSource`: Reddit post search.

Without credentials it reads the public ``search.json`` listing; with
``REDDIT_CLIENT_ID`` and ``REDDIT_CLIENT_SECRET`` it gets an application-only OAuth token
(client-credentials grant) and searches ``oauth.reddit.com``, which allows more requests.
Reddit search has no absolute date filter, so the cutoff is enforced on each post's
creation time. Each post becomes a Document whose URL is its discussion page (the linked
article, if any, is in ``metadata["link_url"]``).
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from typing import Any, Literal

from pydantic import Field, SecretStr

from veracity.core.bounds import PromptChars
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceAuthError, SourceBadResponse, apply_rules
from veracity.retrieval.engines.common import SourceOptions, expect_list, expect_mapping, field_str
from veracity.retrieval.transport.http import HttpClient, default_http_client

TOKEN_URL = "https://www.reddit.com/api/v1/access_token"


class RedditOptions(SourceOptions):
    subreddit: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_]{2,21}$")
    sort: Literal["relevance", "top", "new", "comments"] = "relevance"
    max_text_chars: PromptChars = Field(default=4000, ge=200)
    use_oauth: bool | None = None  # None: when REDDIT_CLIENT_ID/SECRET are set


class RedditSource:
    """Reddit search (public JSON, or OAuth with client credentials).

    Args:
        http: the HTTP client (default: the shared one).
        name: instance name.
        client_id: OAuth client id (default: $REDDIT_CLIENT_ID).
        client_secret: OAuth client secret (default: $REDDIT_CLIENT_SECRET).
        **options: see `RedditOptions`.
    """

    kind = "social"

    def __init__(
        self,
        *,
        http: HttpClient | None = None,
        name: str = "reddit",
        client_id: str | None = None,
        client_secret: str | None = None,
        **options: Any,
    ):
        self.options = RedditOptions(**options)
        self.http = http or default_http_client()
        self.name = name
        cid = client_id or os.environ.get("REDDIT_CLIENT_ID")
        secret = client_secret or os.environ.get("REDDIT_CLIENT_SECRET")
        self._client_id = cid
        self._secret = SecretStr(secret) if secret else None
        use = self.options.use_oauth
        self.oauth = bool(cid and secret) if use is None else use
        if self.oauth and not (cid and secret):
            raise SourceAuthError(
                name, "OAuth asked for but REDDIT_CLIENT_ID / REDDIT_CLIENT_SECRET are not set"
            )
        self._token: tuple[SecretStr, float] | None = None

    def __repr__(self) -> str:
        return f"RedditSource(name={self.name!r}, oauth={self.oauth})"

    async def _bearer(self) -> str:
        if self._token is not None and self._token[1] > time.time() + 60:
            return self._token[0].get_secret_value()
        assert self._client_id and self._secret  # checked in __init__
        response = await self.http.request(
            self.name,
            "POST",
            TOKEN_URL,
            form={"grant_type": "client_credentials"},
            auth=(self._client_id, self._secret.get_secret_value()),
            use_cache=False,
        )
        data = expect_mapping(response.json(self.name), self.name)
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            raise SourceAuthError(self.name, f"no access token from Reddit: {data.get('error')}")
        self._token = (SecretStr(token), time.time() + float(data.get("expires_in", 3600)))
        return token

    async def search(self, query: Query) -> list[Document]:
        """Search Reddit posts (see the module docstring).

        Raises:
            SourceError: the typed failure (a 403 usually means the client is blocked).
        """
        sub = self.options.subreddit
        path = f"/r/{sub}/search" if sub else "/search"
        params = {
            "q": query.render(quote=True, or_word="OR"),
            "limit": str(min(100, query.top_k * 3 if query.before else query.top_k)),
            "sort": self.options.sort,
            "t": "all",
            "type": "link",
            "raw_json": "1",
        }
        if sub:
            params["restrict_sr"] = "1"
        if self.oauth:
            url = f"https://oauth.reddit.com{path}"
            headers = {"Authorization": f"bearer {await self._bearer()}"}
        else:
            url, headers = f"https://www.reddit.com{path}.json", None
        data = expect_mapping(
            await self.http.get_json(self.name, url, params=params, headers=headers), self.name
        )
        if data.get("kind") != "Listing":
            raise SourceBadResponse(self.name, f"expected a Listing, got {str(data)[:100]}")
        children = expect_list(
            expect_mapping(data.get("data"), self.name, "data"), "children", self.name
        )
        docs = [self._doc(child, rank) for rank, child in enumerate(children, start=1)]
        return apply_rules(query, [d for d in docs if d is not None])

    def _doc(self, child: Any, rank: int) -> Document | None:
        if not isinstance(child, dict) or child.get("kind") != "t3":
            return None  # listings can hold other kinds; only posts are evidence
        post = expect_mapping(child.get("data"), self.name, "post")
        post_id = field_str(post, "id", self.name)
        title = field_str(post, "title", self.name)
        permalink = field_str(post, "permalink", self.name)
        created = post.get("created_utc")
        if not isinstance(created, int | float):
            raise SourceBadResponse(self.name, f"post {post_id} has no created_utc")
        body = (post.get("selftext") or "").strip()
        text = f"{title}\n\n{body}" if body else title
        link = post.get("url")
        return Document(
            id=f"reddit:{post_id}",
            text=text[: self.options.max_text_chars],
            title=title,
            url=f"https://www.reddit.com{permalink}",
            source=self.name,
            published_at=_dt.datetime.fromtimestamp(created, tz=_dt.timezone.utc),
            score=1.0 / rank,
            metadata={
                "subreddit": post.get("subreddit"),
                "author": post.get("author"),
                "votes": post.get("score"),
                "num_comments": post.get("num_comments"),
                "link_url": None if post.get("is_self") else link,
                "over_18": post.get("over_18", False),
            },
        )
