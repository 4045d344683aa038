"""Routes that read their JSON body themselves (to bound it first, or to parse it in
one pass of pydantic-core): :func:`json_body` parses it, :func:`json_body_doc`
documents it in the OpenAPI."""

from __future__ import annotations

from typing import Any, Dict, Type, TypeVar

import pydantic
from fastapi import Request
from fastapi.exceptions import RequestValidationError

__all__ = ["json_body", "json_body_doc"]

Body = TypeVar("Body", bound=pydantic.BaseModel)


async def json_body(request: Request, model: Type[Body]) -> Body:
    """The request's JSON body as ``model``, errors as FastAPI's own body validation
    reports them (a 400 naming the fields)."""
    try:
        return model.model_validate_json(await request.body())
    except pydantic.ValidationError as e:
        raise RequestValidationError(
            [dict(err, loc=("body", *err["loc"])) for err in e.errors(include_url=False)]
        ) from None


def json_body_doc(model: Type[pydantic.BaseModel]) -> Dict[str, Any]:
    """OpenAPI of a JSON body that a route parses with :func:`json_body`: the model's
    JSON schema with its nested models inlined (its ``#/$defs/...`` references would
    not resolve inside the OpenAPI document)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref[len("#/$defs/"):]])
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": inline(schema)}}}}
