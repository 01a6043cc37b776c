"""A plain HTML page listing every API operation, rendered from the OpenAPI schema on the server.

Swagger UI and ReDoc load their JavaScript from a CDN unless drf-spectacular-sidecar is installed; this
page needs neither. The machine-readable schema is at /api/schema/.
"""

from __future__ import annotations

from typing import Any

from django.views.generic import TemplateView
from drf_spectacular.generators import SchemaGenerator

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


class ApiDocsView(TemplateView):
    template_name = "api/docs.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        schema = SchemaGenerator().get_schema(request=None, public=True)
        return {
            **super().get_context_data(**kwargs),
            "info": schema["info"],
            "operations": operations(schema),
        }


def operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for path, item in schema.get("paths", {}).items():
        for method in HTTP_METHODS:
            op = item.get(method)
            if op is None:
                continue
            rows.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary") or op.get("description", "").split("\n")[0],
                    "parameters": [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"],
                    "request": _schema_names(op.get("requestBody", {}).get("content", {})),
                    "responses": {
                        code: _schema_names(r.get("content", {})) for code, r in op["responses"].items()
                    },
                }
            )
    return rows


def _schema_names(content: dict[str, Any]) -> str:
    names = set()
    for media in content.values():
        ref = media.get("schema", {})
        ref = ref.get("items", ref)
        names.add(str(ref.get("$ref", ref.get("type", ""))).rsplit("/", 1)[-1])
    return ", ".join(sorted(n for n in names if n))
