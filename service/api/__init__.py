"""The REST API, version 1: one module per area (health, papers, feedback, rules, lists,
digests, links, feeds, library, account), each a blueprint (``service.api.area``) whose views
name their request and response models; flask-openapi3 validates every call with them and
writes /openapi.json from them (``service.api.document``). service/app.py registers each
area's blueprint.

Adding an endpoint: a view in its area's module; a new area: a module here and its line in
service/app.py.
"""
