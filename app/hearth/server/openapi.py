"""The OpenAPI document at /openapi.json.

Routes parse their bodies themselves (to control limits and error shapes), so FastAPI
cannot see the request models; each POST route declares its body with ``json_body``,
and the nested schemas move into the document's components when it is built.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

REF = "#/components/schemas/{model}"
DEFS_KEY = "x-hearth-defs"  # carries nested schemas until they move to components


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` for a route whose JSON body is ``model``."""
    schema = model.model_json_schema(ref_template=REF)
    defs = schema.pop("$defs", {})
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        DEFS_KEY: defs,
    }


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(title=app.title, version=app.version, routes=app.routes)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for path in document.get("paths", {}).values():
            for operation in path.values():
                schemas.update(operation.pop(DEFS_KEY, {}))
        app.openapi_schema = document
        return document

    app.openapi = build  # type: ignore[method-assign]
