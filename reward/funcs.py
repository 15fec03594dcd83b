"""The fixed registry of `func:` helpers that WebArena task configs name, parsed with `ast` (never evaluated).

A call text such as `reddit_get_post_url('__last_url__')` or `gitlab_get_project_memeber_role(__page__, 'vinta')`
is parsed into a `FuncCall`: a registered name plus literal arguments (str / int / float / bool / None) and two
special names, `__page__` (the page being checked) and `__last_url__` (its URL; also replaced inside string
arguments, as WebArena's text substitution does). Anything else -- attributes, nested calls, operators, unknown
names -- is rejected with an error that lists the known helpers.

Two implementations share the names: `WebArenaHelpers` for WebArena's real sites (Magento's REST API with an
admin token, as WebArena does) and `BundledHelpers` for this project's sites (their JSON helpers, read with the
episode's cookies so they see the episode's sandbox). WebArena's misspelling `gitlab_get_project_memeber_role` is
the registered name.
"""

from __future__ import annotations

import ast
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

PAGE = "__page__"
LAST_URL = "__last_url__"


@dataclass(frozen=True)
class Special:
    """A special name in a call: `__page__` or `__last_url__`."""

    name: str


@dataclass(frozen=True)
class FuncSpec:
    params: tuple[str, ...]  # "page" or "str", in order
    doc: str


REGISTRY: dict[str, FuncSpec] = {
    "shopping_get_latest_order_url": FuncSpec((), "URL of the newest order in the shop"),
    "shopping_get_sku_latest_review_author": FuncSpec(("str",), "nickname on the newest review of a SKU"),
    "shopping_get_sku_latest_review_rating": FuncSpec(
        ("str",), "rating (percent) of the newest review of a SKU"
    ),
    "reddit_get_post_url": FuncSpec(("str",), "a forum post's canonical URL from any URL inside the post"),
    "gitlab_get_project_memeber_role": FuncSpec(("page", "str"), "a member's role on a project members page"),
}


class FuncError(ValueError):
    """A call text that is not a well-formed call of a registered helper."""


@dataclass(frozen=True)
class FuncCall:
    name: str
    args: tuple[Any, ...]
    text: str

    @property
    def uses_page(self) -> bool:
        return any(isinstance(a, Special) and a.name == PAGE for a in self.args)


def _known() -> str:
    return ", ".join(sorted(REGISTRY))


def _literal(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    if isinstance(node, ast.Name) and node.id in (PAGE, LAST_URL):
        return Special(node.id)
    raise FuncError(f"func:{text}: only literal arguments, {PAGE} and {LAST_URL} are allowed")


def parse_call(text: str) -> FuncCall:
    """Parse `name(args)` (with or without the `func:` prefix) into a FuncCall; FuncError on anything else."""
    body = text[len("func:") :] if text.startswith("func:") else text
    try:
        tree = ast.parse(body.strip(), mode="eval")
    except SyntaxError as e:
        raise FuncError(f"func:{body}: not a call ({e.msg})") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise FuncError(f"func:{body}: expected helper_name(args); known helpers: {_known()}")
    name = call.func.id
    spec = REGISTRY.get(name)
    if spec is None:
        raise FuncError(f"func:{body}: unknown helper {name!r}; known helpers: {_known()}")
    if call.keywords:
        raise FuncError(f"func:{body}: keyword arguments are not accepted")
    args = tuple(_literal(a, body) for a in call.args)
    if len(args) != len(spec.params):
        raise FuncError(
            f"func:{body}: {name} takes {len(spec.params)} argument(s) ({', '.join(spec.params)})"
        )
    for arg, kind in zip(args, spec.params, strict=False):
        if (kind == "page") != (isinstance(arg, Special) and arg.name == PAGE):
            raise FuncError(f"func:{body}: {name} expects {', '.join(spec.params)}")
    return FuncCall(name=name, args=args, text=body)


def reddit_get_post_url(url: str) -> str:
    """The post URL (`scheme://host/f/<forum>/<id>/`) of a URL under a post; other URLs are returned unchanged."""
    parsed = urllib.parse.urlparse(url)
    parts = parsed.path.split("/")
    if len(parts) < 4 or parts[1] != "f":
        return url
    return f"{parsed.scheme}://{parsed.netloc}/f/{parts[2]}/{parts[3]}/"


# Runs in the checked page; a missing account makes the lookup throw, which WebArena reads as "" (no role).
_MEMBER_ROLE_JS = """(account) => {
  const names = Array.from(document.querySelectorAll("td[data-label='Account'] span.gl-avatar-labeled-sublabel"));
  const index = names.findIndex((el) => el.outerText === '@' + account);
  return document.querySelectorAll("td.col-max-role span")[index].outerText;
}"""


class HelperUnavailable(RuntimeError):
    """The helper could not reach its data (site down, bad credentials): the check is unscorable, not failed."""


@dataclass
class CallContext:
    """What a helper call may use: the current page (opened on demand), its URL, and site base URLs."""

    current_url: str
    env_urls: dict[str, str]
    get_page: Callable[[], Awaitable[Any]]
    # GET with the episode's cookies (sandbox, login) -> (status, parsed JSON or None)
    http_get: Callable[[str], Awaitable[tuple[int, Any]]] | None = None


class Helpers:
    """Shared parts of both implementations; subclasses supply the shop lookups."""

    kind = "base"

    async def call(self, call: FuncCall, ctx: CallContext) -> str:
        args = []
        for arg in call.args:
            if isinstance(arg, Special):
                args.append(await ctx.get_page() if arg.name == PAGE else ctx.current_url)
            elif isinstance(arg, str):
                args.append(arg.replace(LAST_URL, ctx.current_url))
            else:
                args.append(arg)
        if call.name not in REGISTRY:  # FuncCall objects come from parse_call, but never trust a name blindly
            raise FuncError(f"unknown helper {call.name!r}; known helpers: {_known()}")
        return await getattr(self, call.name)(ctx, *args)

    async def reddit_get_post_url(self, ctx: CallContext, url: str) -> str:
        return reddit_get_post_url(str(url))

    async def gitlab_get_project_memeber_role(self, ctx: CallContext, page: Any, account: str) -> str:
        try:
            return str(await page.evaluate(_MEMBER_ROLE_JS, str(account)))
        except Exception:  # noqa: BLE001 - WebArena reads any failure here as "no role"
            return ""

    def base(self, ctx: CallContext, site: str) -> str:
        url = ctx.env_urls.get(site)
        if not url:
            raise HelperUnavailable(f"no URL configured for site {site!r}")
        return url.rstrip("/")

    async def shopping_get_latest_order_url(self, ctx: CallContext) -> str:
        raise NotImplementedError

    async def shopping_get_sku_latest_review_author(self, ctx: CallContext, sku: str) -> str:
        raise NotImplementedError

    async def shopping_get_sku_latest_review_rating(self, ctx: CallContext, sku: str) -> str:
        raise NotImplementedError


class BundledHelpers(Helpers):
    """The bundled sites: JSON helpers read with the episode's cookies, so they answer from its sandbox."""

    kind = "bundled"

    async def _get(self, ctx: CallContext, url: str) -> tuple[int, Any]:
        if ctx.http_get is None:
            raise HelperUnavailable("no HTTP access for helpers (needs a live browser context)")
        return await ctx.http_get(url)

    async def shopping_get_latest_order_url(self, ctx: CallContext) -> str:
        status, data = await self._get(ctx, f"{self.base(ctx, 'shopping')}/__api__/orders/latest")
        if status == 404:
            return ""  # the customer has no order: the target page cannot hold the expected items
        if status != 200 or not isinstance(data, dict) or "url" not in data:
            raise HelperUnavailable(f"latest order helper answered HTTP {status}")
        return str(data["url"])

    async def _latest_review(self, ctx: CallContext, sku: str) -> dict[str, Any] | None:
        query = urllib.parse.urlencode({"sku": sku})
        status, data = await self._get(
            ctx, f"{self.base(ctx, 'shopping_admin')}/__api__/reviews/latest?{query}"
        )
        if status == 404:
            return None
        if status != 200 or not isinstance(data, dict):
            raise HelperUnavailable(f"latest review helper answered HTTP {status}")
        return data

    async def shopping_get_sku_latest_review_author(self, ctx: CallContext, sku: str) -> str:
        review = await self._latest_review(ctx, sku)
        return "" if review is None else str(review.get("author", ""))

    async def shopping_get_sku_latest_review_rating(self, ctx: CallContext, sku: str) -> str:
        review = await self._latest_review(ctx, sku)
        # Magento reports a rating as a percentage (1 star = 20); task files written for WebArena expect that.
        return "" if review is None else str(int(review.get("rating", 0)) * 20)


@dataclass
class WebArenaHelpers(Helpers):
    """WebArena's real sites: Magento's REST API with an admin token (cached for ten minutes)."""

    admin_user: str = "admin"
    admin_password: str = "admin1234"
    timeout_s: float = 30.0
    kind: str = "webarena"
    _token: tuple[str, float] | None = field(default=None, repr=False)

    async def _rest(self, ctx: CallContext, path: str, params: dict[str, str] | None = None) -> Any:
        import httpx

        shop = self.base(ctx, "shopping")
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                if self._token is None or time.monotonic() - self._token[1] > 600:
                    resp = await client.post(
                        f"{shop}/rest/default/V1/integration/admin/token",
                        json={"username": self.admin_user, "password": self.admin_password},
                    )
                    resp.raise_for_status()
                    self._token = (str(resp.json()), time.monotonic())
                headers = {"Authorization": f"Bearer {self._token[0]}", "Content-Type": "application/json"}
                resp = await client.get(f"{shop}{path}", params=params, headers=headers)
                resp.raise_for_status()
                return resp.json()
        except (httpx.HTTPError, ValueError) as e:
            raise HelperUnavailable(f"Magento REST {path}: {e}") from e

    async def shopping_get_latest_order_url(self, ctx: CallContext) -> str:
        params = {
            "searchCriteria[sortOrders][0][field]": "created_at",
            "searchCriteria[sortOrders][0][direction]": "DESC",
            "searchCriteria[pageSize]": "1",
        }
        data = await self._rest(ctx, "/rest/V1/orders", params)
        items = data.get("items") or []
        if not items:
            raise HelperUnavailable("Magento returned no orders")
        return f"{self.base(ctx, 'shopping')}/sales/order/view/order_id/{int(items[0]['increment_id'])}/"

    async def _reviews(self, ctx: CallContext, sku: str) -> list[dict[str, Any]]:
        data = await self._rest(ctx, f"/rest/V1/products/{urllib.parse.quote(sku, safe='')}/reviews")
        return data if isinstance(data, list) else []

    async def shopping_get_sku_latest_review_author(self, ctx: CallContext, sku: str) -> str:
        reviews = await self._reviews(ctx, sku)
        return str(reviews[-1]["nickname"]) if reviews else ""

    async def shopping_get_sku_latest_review_rating(self, ctx: CallContext, sku: str) -> str:
        reviews = await self._reviews(ctx, sku)
        return str(reviews[-1]["ratings"][0]["percent"]) if reviews else ""


def make_helpers(kind: str, **kwargs: Any) -> Helpers:
    """ "bundled" or "webarena" (kwargs: admin_user, admin_password for the real Magento)."""
    if kind == "bundled":
        return BundledHelpers()
    if kind == "webarena":
        return WebArenaHelpers(**kwargs)
    raise ValueError(f"unknown helpers {kind!r}; expected 'bundled' or 'webarena'")
