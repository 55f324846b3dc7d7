from rest_framework.metadata import BaseMetadata


class ApiMetadata(BaseMetadata):
    """What ``OPTIONS`` answers: the path's methods (also in ``Allow``) and where the schema is.

    DRF's default introspects ``serializer_class`` and ``get_object()``, which these
    viewsets do not use: it crashed (500) on views without a serializer class, and its
    ``get_object()`` would skip the checks the views make themselves.
    """

    def determine_metadata(self, request, view):
        return {
            "name": view.get_view_name(),
            "methods": view.allowed_methods,
            "schema": "/v1/schema",
        }
